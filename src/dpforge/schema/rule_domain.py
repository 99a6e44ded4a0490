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
import pandas as pd

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
    """Per value, whether it meets the condition; an empty cell (None, NaN, NA) never does."""
    array = np.asarray(values, dtype=object)
    present = ~pd.isna(array)
    op, value = condition.op, condition.value
    if op in ("in", "not in"):
        hit = pd.Series(array).isin(list(value)).to_numpy()
        if any(isinstance(v, int | float) and not isinstance(v, bool) for v in value):
            numbers = _as_float(array, present)
            hit = np.isin(numbers, np.asarray(value, dtype=np.float64)) & present
        out = hit if op == "in" else ~hit
    elif isinstance(value, str):
        out = _COMPARE[op](array, value).astype(bool)
    else:
        out = _COMPARE[op](_as_float(array, present), float(value))
    return np.asarray(out, dtype=bool) & present


def _as_float(array: np.ndarray, present: np.ndarray) -> np.ndarray:
    out = np.full(array.shape, np.nan)
    out[present] = array[present].astype(np.float64)
    return out


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


def always_true(condition: Condition, columns: Mapping[str, Column], rules: tuple[Rule, ...]) -> bool:
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
