"""Conditions as the command line writes them: ``--condition COLUMN=VALUE``.

``sex=F`` (one value), ``region=N,S`` (any of several), ``age=30..40`` (a closed range of a
numeric or date column), ``age=30..`` and ``age=..40`` (one end open). The column's public
type decides how the text reads: a category is taken whole when the schema lists it (so a
category that holds a comma can still be named alone), numbers are read as numbers, and dates
stay texts in the column's format, checked by :func:`dpforge.conditions.resolve_conditions`.
:func:`shown_condition` writes a condition back the same way, for messages.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date, datetime
from typing import Any

import numpy as np

from dpforge.data.tables import canonical_text
from dpforge.errors import DataError
from dpforge.kinds import kind_of

MEMBERSHIP = (list, set, frozenset, np.ndarray)  # several values of a column, any one of them
RANGE = ".."
LIST = ","
SYNTAX = "write it as COLUMN=value, COLUMN=a,b (any of them) or COLUMN=lo..hi (a range)"


def conditions_from_texts(schema: Any, items: Sequence[str]) -> dict[str, Any]:
    """``--condition`` items as a conditions mapping ({column: value, list or (lo, hi)})."""
    columns = kind_of(schema).condition_columns(schema)
    out: dict[str, Any] = {}
    for item in items:
        name, sep, text = item.partition("=")
        name = name.strip()
        if not sep or not name:
            raise DataError(f"--condition {item!r}: {SYNTAX}")
        if name in out:
            raise DataError(
                f"--condition {name}: given twice; give one condition per column (several "
                "values as a,b, or a range lo..hi)"
            )
        out[name] = condition_from_text(columns.get(name), text.strip())
    return out


def condition_from_text(column: Any, text: str) -> Any:
    """One condition's text read by ``column``'s type (None: a name that the check of the
    conditions refuses, or a label of images or series: taken as text)."""
    if column is None or not column.is_numeric:
        if text in (getattr(column, "categories", None) or ()) or LIST not in text:
            return text
        return [part.strip() for part in text.split(LIST)]
    if RANGE in text:
        low, _, high = text.partition(RANGE)
        return tuple(_value(column, end.strip()) if end.strip() else None for end in (low, high))
    if LIST in text and not (column.is_time and _is_time(column, text)):
        return [_value(column, part.strip()) for part in text.split(LIST)]
    return _value(column, text)


def _value(column: Any, text: str) -> Any:
    """A number of a numeric column (a whole number as an int), or a date column's text."""
    if column.is_time:
        return text
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        raise DataError(
            f"--condition {column.name}={text}: {text!r} is not a number; '{column.name}' is "
            f"{column.type}: {SYNTAX}, e.g. {column.name}=30..40"
        ) from None


def _is_time(column: Any, text: str) -> bool:
    try:
        datetime.strptime(text, column.format)
    except ValueError:
        return False
    return True


def shown_condition(column: Any, value: Any) -> str:
    """``value`` (a condition on ``column``) as ``--condition`` writes it."""
    if isinstance(value, tuple):
        text = RANGE.join("" if end is None else _text(column, end) for end in value)
    elif isinstance(value, MEMBERSHIP):
        items = sorted(value, key=str) if isinstance(value, (set, frozenset)) else value
        text = LIST.join(_text(column, item) for item in items)
    else:
        text = _text(column, value)
    return f"{column.name}={text}"


def _text(column: Any, value: Any) -> str:
    if isinstance(value, (date, datetime)) and column.is_time:
        return value.strftime(column.format)
    return canonical_text(value)
