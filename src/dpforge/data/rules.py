"""Sampled rows that satisfy the schema's rules (:mod:`dpforge.schema.rules`): post-processing.

Everything here reads only generated rows and the public schema, so it costs no privacy.

- A ``depends`` rule's dependent is never modelled: decoding sets it from the determinant
  through the rule's map (:func:`dependent_values`), so the map holds exactly in every row.
- Rows that break a ``forbid`` or an ``inequality`` rule are drawn again from the generator
  with the same label, up to ``RETRIES`` rounds (rejection sampling: the rows that remain
  follow the model conditioned on the rules).
- What still breaks a rule after those rounds (rare: each round redraws only the offending
  rows) is repaired deterministically (:func:`repair`): an inequality by swapping the two
  values when each stays within the other column's bounds and grid, else by raising the right
  value to the left one (plus 1 for ``<``), else by lowering the left one; a row that still
  breaks a rule is replaced by a copy of a rule-abiding row of the same class, chosen at
  random from the batch. A class none of whose rows abides is refused with an error.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from dpforge.errors import DataError
from dpforge.schema.dates import EPOCH, SECONDS, axis_texts
from dpforge.schema.rule_domain import matches
from dpforge.schema.rules import Depends, Forbid, Inequality

RETRIES = 20  # rounds of redrawing the offending rows before the deterministic repair


def dependent_values(schema: Any, decoded: dict[str, Any]) -> dict[str, Any]:
    """Each dependent column's values, from its determinant's decoded values and the map."""
    out: dict[str, Any] = {}
    for rule in getattr(schema, "rules", ()):
        if isinstance(rule, Depends):
            out[rule.dependent] = _mapped(rule, schema.column(rule.dependent), decoded)
    return out


def _mapped(rule: Depends, column: Any, decoded: dict[str, Any]) -> Any:
    keys = np.asarray(decoded[rule.determinant], dtype=object)
    missing = pd.isna(keys)
    categories = [k for k, _ in rule.map]
    index = pd.Index(categories).get_indexer(np.where(missing, categories[0], keys))
    values = [v for _, v in rule.map]
    if not column.is_numeric:
        out = np.asarray([*values, None], dtype=object)[np.where(missing, len(values), index)]
        return out
    table = np.asarray(values, dtype=np.float64)[index]
    if column.type == "integer":
        whole = np.rint(table).astype(np.int64)
        if not missing.any() and not column.nullable:
            return whole
        array = pd.array(whole, dtype="Int64")
        array[missing] = pd.NA
        return array
    return np.where(missing, np.nan, table)


def violations(frame: pd.DataFrame, schema: Any) -> np.ndarray:
    """Per row, whether it breaks any of the schema's rules."""
    bad = np.zeros(len(frame), dtype=bool)
    for rule in getattr(schema, "rules", ()):
        bad |= breaks(rule, frame, schema)
    return bad


def breaks(rule: Any, frame: pd.DataFrame, schema: Any) -> np.ndarray:
    """Per row, whether it breaks ``rule``."""
    if isinstance(rule, Forbid):
        hit = np.ones(len(frame), dtype=bool)
        for condition in rule.when:
            hit &= matches(condition, frame[condition.column])
        return hit
    if isinstance(rule, Inequality):
        left = _numbers(frame[rule.left], schema.column(rule.left))
        right = _numbers(frame[rule.right], schema.column(rule.right))
        return left + rule.gap > right  # NaN (an empty cell) compares False
    expected = _mapped(
        rule, schema.column(rule.dependent), {rule.determinant: frame[rule.determinant]}
    )
    got = pd.Series(frame[rule.dependent].to_numpy(dtype=object))
    want = pd.Series(np.asarray(expected, dtype=object))
    same = (got == want) | (got.isna() & want.isna())
    return ~same.to_numpy(dtype=bool)


def _numbers(values: pd.Series, column: Any) -> np.ndarray:
    """The values as numbers: a date or datetime on its axis (read in its format)."""
    if getattr(column, "is_time", False):
        stamps = pd.to_datetime(values, format=column.format, errors="coerce")
        seconds = (stamps - EPOCH).dt.total_seconds().to_numpy(dtype=np.float64, na_value=np.nan)
        return seconds / SECONDS[column.type]
    return pd.to_numeric(values, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)


def abiding_rows(
    rows: pd.DataFrame,
    labels: np.ndarray | None,
    schema: Any,
    draw: Callable[[np.ndarray], pd.DataFrame],
    rng: np.random.Generator,
    retries: int = RETRIES,
) -> pd.DataFrame:
    """``rows`` with every row that breaks a rule drawn again (``draw(indices)`` gives new
    rows for those positions, with their labels), then repaired (see the module's text)."""
    rows = rows.reset_index(drop=True)
    bad = np.flatnonzero(violations(rows, schema))
    for _ in range(retries):
        if bad.size == 0:
            return rows
        fresh = draw(bad).reset_index(drop=True)
        assign(rows, bad, fresh)
        bad = bad[violations(fresh, schema)]  # only the redrawn rows can still break a rule
    return repair(rows, labels, schema, rng)


def assign(rows: pd.DataFrame, index: np.ndarray, new: pd.DataFrame) -> None:
    """Rows ``index`` of ``rows`` replaced by ``new``'s, column by column (dtypes kept)."""
    for position, name in enumerate(rows.columns):
        rows.iloc[index, position] = new[name].array


def repair(
    rows: pd.DataFrame, labels: np.ndarray | None, schema: Any, rng: np.random.Generator
) -> pd.DataFrame:
    """The deterministic repair of the rows that still break a rule (see the module's text)."""
    rows = rows.reset_index(drop=True)
    for rule in schema.rules:
        if isinstance(rule, Inequality):
            bad = np.flatnonzero(breaks(rule, rows, schema))
            if bad.size:
                _order(rows, bad, rule, schema)
    return _copy_abiding(rows, labels, schema, rng)


def _order(rows: pd.DataFrame, bad: np.ndarray, rule: Inequality, schema: Any) -> None:
    """Swap, else raise the right value, else lower the left one (within bounds and grid)."""
    left_col, right_col = schema.column(rule.left), schema.column(rule.right)
    left = _numbers(rows[rule.left], left_col)[bad]
    right = _numbers(rows[rule.right], right_col)[bad]
    swap = _fits(right, left_col) & _fits(left, right_col)
    new_left = np.where(swap, right, left)
    new_right = np.where(swap, left, right)
    raise_ok = ~swap & _fits(left + rule.gap, right_col)
    new_right = np.where(raise_ok, left + rule.gap, new_right)
    lower_ok = ~swap & ~raise_ok & _fits(right - rule.gap, left_col)
    new_left = np.where(lower_ok, right - rule.gap, new_left)
    _put(rows, rule.left, bad, new_left, left_col)
    _put(rows, rule.right, bad, new_right, right_col)


def _fits(values: np.ndarray, column: Any) -> np.ndarray:
    """Within the column's bounds, whole for an integer column, on its resolution's grid."""
    ok = (values >= column.lower) & (values <= column.upper)
    if column.type == "integer":
        ok &= values == np.rint(values)
    if column.resolution is not None:
        steps = (values - column.lower) / column.resolution
        ok &= np.isclose(steps, np.rint(steps))
    return ok


def _put(rows: pd.DataFrame, name: str, index: np.ndarray, values: np.ndarray, column: Any) -> None:
    if column.type == "integer":
        values = np.rint(values).astype(np.int64)
    elif getattr(column, "is_time", False):
        values = axis_texts(values, column)
    position = rows.columns.get_loc(name)
    rows.iloc[index, position] = values


def _copy_abiding(
    rows: pd.DataFrame, labels: np.ndarray | None, schema: Any, rng: np.random.Generator
) -> pd.DataFrame:
    """Each row that still breaks a rule becomes a copy of an abiding row of its class."""
    bad = violations(rows, schema)
    if not bad.any():
        return rows
    classes = np.zeros(len(rows), dtype=np.int64) if labels is None else np.asarray(labels)
    for value in np.unique(classes[bad]):
        mine = classes == value
        donors = np.flatnonzero(mine & ~bad)
        if donors.size == 0:
            raise DataError(
                f"no sampled row{_class_text(schema, value, labels)} satisfies the schema's "
                "rules after redrawing and repair: the model puts almost no mass on "
                "rule-abiding rows; check the rules against what the data hold"
            )
        targets = np.flatnonzero(mine & bad)
        assign(rows, targets, rows.iloc[rng.choice(donors, size=targets.size)])
    return rows


def _class_text(schema: Any, value: int, labels: np.ndarray | None) -> str:
    label = getattr(schema, "label_column", None)
    if labels is None or label is None:
        return ""
    return f" of class {label.categories[int(value)]!r}"
