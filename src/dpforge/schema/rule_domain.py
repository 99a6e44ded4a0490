"""What a rule's condition means on values: vectorised matching, and reasoning on the domain.

Shared by the schema checks (a forbidden combination that every row would match), the sampler
(which decoded rows break a rule, :mod:`dpforge.data.rules`) and the fit (how much of each cell
a condition covers, :mod:`dpforge.statistics.rule_penalty`). An empty cell matches no condition.
A condition on a dependent column (set by a ``depends`` rule) is the same as an ``in`` condition
on its determinant: the categories whose mapped value matches (:func:`on_determinant`).
"""

from __future__ import annotations

import operator
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from dpforge.schema.rules import Condition, Depends, Rule

if TYPE_CHECKING:
    from dpforge.schema.table import Column

_COMPARE = {
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}


def matches(condition: Condition, values: Any) -> np.ndarray:
    """Per value, whether it meets the condition; an empty cell (None, NaN, NA) never does.
    ``values``: a pandas Series or an array (texts for categories, numbers otherwise)."""
    import pandas as pd  # here, not at the top: reading a schema does not load pandas

    series = (
        values if isinstance(values, pd.Series) else pd.Series(np.asarray(values, dtype=object))
    )
    present = series.notna().to_numpy()
    op, value = condition.op, condition.value
    listed = value if op in ("in", "not in") else (value,)
    if all(isinstance(v, str) for v in listed):  # categories: compared as texts
        hit = series.isin(listed).to_numpy(dtype=bool)
        out = ~hit if op in ("!=", "not in") else hit
    else:
        numbers = pd.to_numeric(series, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
        if op in ("in", "not in"):
            hit = np.isin(numbers, np.asarray(listed, dtype=np.float64))
            out = hit if op == "in" else ~hit
        else:
            out = _COMPARE[op](numbers, float(value))
    return np.asarray(out, dtype=bool) & present


def on_determinant(condition: Condition, rule: Depends) -> Condition:
    """A condition on ``rule``'s dependent, stated on its determinant: the categories whose
    mapped value meets it (an empty list: no category does)."""
    keys = [k for k, _ in rule.map]
    values = np.asarray([v for _, v in rule.map], dtype=object)
    hit = matches(condition, values)
    return Condition(rule.determinant, "in", tuple(k for k, h in zip(keys, hit, strict=True) if h))


def setting_rule(column: str, rules: tuple[Rule, ...]) -> Depends | None:
    """The dependency rule that sets ``column``, if any."""
    return next((r for r in rules if isinstance(r, Depends) and r.dependent == column), None)


def always_true(
    condition: Condition, columns: Mapping[str, Column], rules: tuple[Rule, ...]
) -> bool:
    """Whether every row meets ``condition`` whatever the model does (known from the declared
    domain; False when the domain is not declared or an empty cell escapes it)."""
    setter = setting_rule(condition.column, rules)
    if setter is not None:
        condition = on_determinant(condition, setter)
    column = columns[condition.column]
    if column.nullable:
        return False
    if not column.is_numeric:
        if column.categories is None:
            return False
        return bool(matches(condition, np.asarray(column.categories, dtype=object)).all())
    return _numeric_always(condition, column)


def _numeric_always(condition: Condition, column: Column) -> bool:
    """Every number in the declared bounds meets the condition."""
    lower, upper, op, value = column.lower, column.upper, condition.op, condition.value
    if lower is None or upper is None:
        return False
    if op == "not in":
        return all(not lower <= float(v) <= upper for v in value)
    if op == "!=":
        return not lower <= float(value) <= upper
    checks = {"<": upper < value, "<=": upper <= value, ">": lower > value, ">=": lower >= value}
    return bool(checks.get(op, False))
