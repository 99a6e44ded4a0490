"""Conditions on sampled columns, checked against the model's public schema.

A condition fixes what a sample holds in one column: one value, several values (a list), or a
closed range ``(lower, upper)`` of a numeric or date column (``None`` leaves that end open).
Everything here reads the public schema only; a value that the schema rules out is refused
with a message that names the column, the value and what to write instead.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

import numpy as np
import pandas as pd

from dpforge.conditions.text import MEMBERSHIP, shown_condition
from dpforge.data.tables import canonical_text
from dpforge.errors import DataError, SchemaError
from dpforge.kinds import kind_of
from dpforge.schema.dates import EPOCH, SECONDS, axis_texts, to_axis
from dpforge.schema.validation import closest


@dataclass(frozen=True)
class ColumnCondition:
    """What one column of a kept row must hold: one of ``values`` (texts for categories,
    axis numbers otherwise), or a value in the closed range ``[lower, upper]`` (numbers on the
    column's axis; None: open). ``shown`` is the condition as the command line writes it."""

    column: Any
    values: tuple[Any, ...] | None = None
    lower: float | None = None
    upper: float | None = None
    shown: str = ""

    def met(self, series: pd.Series) -> np.ndarray:
        """Per row, whether its value meets the condition; an empty cell never does."""
        if not self.column.is_numeric:
            present = series.notna().to_numpy(dtype=bool)
            return series.astype(object).isin(self.values).to_numpy(dtype=bool) & present
        axis = _on_axis(series, self.column)
        if self.values is not None:
            wanted = np.asarray(self.values, dtype=np.float64)
            return np.isclose(axis[:, None], wanted[None, :], rtol=1e-9, atol=1e-12).any(axis=1)
        low = -np.inf if self.lower is None else self.lower
        high = np.inf if self.upper is None else self.upper
        return (axis >= low) & (axis <= high)


@dataclass(frozen=True)
class ResolvedConditions:
    """``label``: the condition the generator meets by its label input (one class, exact and
    free); ``rows``: the conditions that kept rows must meet (rejection sampling)."""

    label: dict[str, str]
    rows: tuple[ColumnCondition, ...]

    def met(self, frame: pd.DataFrame) -> np.ndarray:
        """Per row of ``frame``, whether it meets every row condition."""
        keep = np.ones(len(frame), dtype=bool)
        for condition in self.rows:
            keep &= condition.met(frame[condition.column.name])
        return keep

    @property
    def shown(self) -> str:
        """Every condition as the command line writes it, for messages."""
        label = [f"{name}={value}" for name, value in self.label.items()]
        return ", ".join(label + [c.shown for c in self.rows])


def resolve_conditions(schema: Any, conditions: Mapping[str, Any] | None) -> ResolvedConditions:
    """``conditions`` ({column: value, list of values or (lower, upper)}) checked against
    ``schema``; a single class of the label goes to the generator, the rest to rejection."""
    if conditions is None:
        return ResolvedConditions({}, ())
    if not isinstance(conditions, Mapping):
        raise DataError(
            "conditions must be a mapping {column: value}, e.g. {'sex': 'F', 'age': (30, 40)}; "
            f"got {type(conditions).__name__}"
        )
    kind = kind_of(schema)
    label, classes = kind.label(schema)
    columns = kind.condition_columns(schema)
    fixed: dict[str, str] = {}
    rows = []
    for name, value in conditions.items():
        if name == label and _one_value(value):
            fixed[name] = _label_class(name, value, classes)
            continue
        column = _column(name, columns, schema, (label, classes))
        rows.append(_resolved(column, value, shown_condition(column, value)))
    return ResolvedConditions(fixed, tuple(rows))


def _one_value(value: Any) -> bool:
    """A single value, or a list of one."""
    if isinstance(value, MEMBERSHIP) and len(value) == 1:
        return True
    return not isinstance(value, (*MEMBERSHIP, tuple))


def _label_class(name: str, value: Any, classes: tuple[str, ...]) -> str:
    """The class that ``value`` names (refused unless it is one of ``classes``)."""
    text = canonical_text(next(iter(value)) if isinstance(value, MEMBERSHIP) else value)
    if text not in classes:
        close = closest(text, list(classes))
        hint = f" (did you mean {close!r}?)" if close else ""
        raise DataError(
            f"condition {name}={text!r}: not a class of '{name}'{hint}; choose one of "
            f"{list(classes)}"
        )
    return text


def _column(name: Any, columns: dict[str, Any], schema: Any, label: tuple) -> Any:
    """The schema column a condition names; refused with what may be named instead.
    ``label``: the label's name (None without one) and its classes."""
    if name in columns:
        return columns[name]
    if not columns:  # images and series (kinds' condition_columns)
        return _refuse_array_condition(name, *label)
    known = [c.name for c in schema.columns]
    if name in known:
        raise DataError(
            f"condition on {name!r}: an identifier column (type "
            f"'{schema.column(name).type}') is never modelled, so no condition can hold on it; "
            f"condition on one of {list(columns)}"
        )
    close = closest(str(name), list(columns))
    hint = f" (did you mean '{close}'?)" if close else ""
    raise DataError(
        f"condition on {name!r}: the model has no such column{hint}; its columns are "
        f"{list(columns)}"
    )


def _refuse_array_condition(name: Any, label: str | None, classes: tuple[str, ...]) -> None:
    """Images and series take one class of their label, nothing else."""
    if label is None:
        raise DataError(f"condition on {name!r}: this model has no label; drop the condition")
    what = "a list or a range of classes" if name == label else f"a condition on {name!r}"
    raise DataError(
        f"{what}: an image or series model conditions on one class of its label '{label}' "
        f"only; give one of {list(classes)}, e.g. {{'{label}': {classes[0]!r}}}"
    )


def _resolved(column: Any, value: Any, shown: str) -> ColumnCondition:
    """``value`` checked against ``column``'s type and public domain."""
    if isinstance(value, tuple):
        return _range(column, value, shown)
    items = list(value) if isinstance(value, MEMBERSHIP) else [value]
    if not items:
        raise DataError(
            f"condition on '{column.name}': an empty list of values holds for no row; give at "
            "least one value"
        )
    if not column.is_numeric:
        texts = tuple(_category(column, item) for item in items)
        return ColumnCondition(column, values=texts, shown=shown)
    points = tuple(_point(column, item, shown) for item in items)
    if column.type == "integer" and not all(float(p).is_integer() for p in points):
        raise DataError(
            f"condition {shown}: '{column.name}' holds whole numbers only, so no row would meet "
            "it; give whole numbers, or a range such as (30, 40)"
        )
    return ColumnCondition(column, values=points, shown=shown)


def _category(column: Any, value: Any) -> str:
    text = canonical_text(value)
    categories = list(column.categories or ())
    if value is None or text not in categories:
        close = closest(text, categories)
        hint = f" (did you mean {close!r}?)" if close else ""
        raise DataError(
            f"condition on '{column.name}': {value!r} is not one of its categories{hint}; "
            f"choose from {categories}"
        )
    return text


def _range(column: Any, value: tuple, shown: str) -> ColumnCondition:
    """A closed range (lower, upper) of a numeric or date column, inside its bounds."""
    if not column.is_numeric:
        raise DataError(
            f"condition on '{column.name}': a range {value!r} is for numeric and date columns; "
            f"'{column.name}' is {column.type}: give a list of categories instead"
        )
    if len(value) != 2 or (value[0] is None and value[1] is None):
        raise DataError(
            f"condition on '{column.name}': {value!r} is not a range; write (lower, upper), "
            "one end None to leave it open, e.g. (30, 40) or (30, None)"
        )
    low, high = (None if v is None else _point(column, v, shown) for v in value)
    if low is not None and high is not None and low > high:
        raise DataError(
            f"condition {shown}: the range is reversed (its lower end is above its upper end); "
            f"write it lower end first, {_swapped(column, value)}"
        )
    return ColumnCondition(column, lower=low, upper=high, shown=shown)


def _swapped(column: Any, value: tuple) -> str:
    return shown_condition(column, (value[1], value[0]))


def _point(column: Any, value: Any, shown: str) -> float:
    """One value of a numeric or date column on its axis, inside the column's bounds."""
    point = _time_point(column, value) if column.is_time else _number(column, value)
    low, high = column.lower, column.upper
    if low is not None and high is not None and not low <= point <= high:
        ends = axis_texts(np.array([low, high]), column) if column.is_time else (low, high)
        first, last = (canonical_text(end) for end in ends)
        raise DataError(
            f"condition {shown}: {value!r} is outside the bounds of '{column.name}', {first} "
            f"to {last}; give a value within them, or leave that end of a range open "
            f"({column.name}={first}.. or {column.name}=..{last} is the same as no bound)"
        )
    return point


def _number(column: Any, value: Any) -> float:
    ok = isinstance(value, numbers.Real) and not isinstance(value, bool)
    if not ok or not math.isfinite(float(value)):
        raise DataError(
            f"condition on '{column.name}': {value!r} is not a number; '{column.name}' is "
            f"{column.type}: give a number, e.g. 30, or a range (30, 40)"
        )
    return float(value)


def _time_point(column: Any, value: Any) -> float:
    if isinstance(value, (date, datetime)):
        value = value.strftime(column.format)
    if not isinstance(value, str):
        raise DataError(
            f"condition on '{column.name}': {value!r} is not a {column.type}; write it in the "
            f"column's format {column.format!r} (or pass a datetime.date or datetime)"
        )
    try:
        return to_axis(value.strip(), column)
    except SchemaError as exc:
        raise DataError(f"condition on '{column.name}': {exc}") from None


def _on_axis(series: pd.Series, column: Any) -> np.ndarray:
    """The column's sampled values as numbers on its axis (NaN for an empty cell)."""
    if not column.is_time:
        numbers_ = pd.to_numeric(series, errors="coerce")
        return numbers_.to_numpy(dtype=np.float64, na_value=np.nan)
    stamps = pd.to_datetime(series, format=column.format, errors="coerce")
    seconds = (stamps - EPOCH).dt.total_seconds().to_numpy(dtype=np.float64, na_value=np.nan)
    return seconds / SECONDS[column.type]
