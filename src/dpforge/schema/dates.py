"""Date and datetime columns: the public side (format, range, resolution, declared parts).

A ``date`` or ``datetime`` column is a number on a time axis, so that it goes through the same
DP-placed numeric cells, marginals and sampling as an integer or continuous column:

* ``date``: whole days since 1970-01-01 (an integer axis: a range of at most 2 * n_bins days
  gets one cell per day);
* ``datetime``: seconds since 1970-01-01 00:00:00 (no time zone: values are read as written).

Its schema entry holds a ``format`` (strftime directives, e.g. ``"%Y-%m-%d"``), a public range
``min``/``max`` written in that format (or null: estimated under DP), a ``resolution`` ("1D",
"7D", "1h", "15min", "1s", or a number of days/seconds) to which samples are rounded, and
optional ``parts``: "weekday", "month" (both types) and "hour" (datetime). Each part is modelled
as a categorical column of its own with public categories (:func:`part_columns`), derived from
the date when records are encoded and measured with the other columns, so that weekly and
seasonal patterns come back; samples are drawn consistent with them (``dpforge.data.dates``).

Dates are limited to the years 1678 to 2261 (what pandas' time stamps hold).
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

import numpy as np

from dpforge.errors import SchemaError

TIME_TYPES = ("date", "datetime")
DEFAULT_FORMATS = {"date": "%Y-%m-%d", "datetime": "%Y-%m-%d %H:%M:%S"}
# A datetime, not a pandas Timestamp, so that reading a schema does not load pandas; pandas
# subtracts it from its time stamps all the same (dpforge.data.dates).
EPOCH = datetime(1970, 1, 1)
SECONDS = {"date": 86400.0, "datetime": 1.0}  # seconds per unit of each type's axis
# The calendar a time axis may cover (pandas' nanosecond time stamps), in seconds since 1970.
FIRST_SECOND = (datetime(1678, 1, 1) - EPOCH).total_seconds()
LAST_SECOND = (datetime(2261, 12, 31, 23, 59, 59) - EPOCH).total_seconds()
UNITS = {"D": 86400, "h": 3600, "min": 60, "s": 1}
PARTS = {
    "weekday": ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"),
    "month": ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"),
    "hour": tuple(f"{h:02d}" for h in range(24)),
}
PART_SEPARATOR = "."
# The directives of each unit (a format that holds a unit can write a resolution of it).
_TIME_DIRECTIVES = {"H": 3600, "I": 3600, "M": 60, "S": 1}
_ZONES = ("%z", "%Z")

__all__ = [
    "PARTS",
    "TIME_TYPES",
    "part_columns",
    "part_name",
    "resolution_seconds",
    "time_from_dict",
    "time_to_dict",
    "time_defaults",
    "validate_time_column",
    "with_parts",
]


def part_name(column: str, part: str) -> str:
    """The name of a declared part's column: ``"admitted.weekday"``."""
    return f"{column}{PART_SEPARATOR}{part}"


def part_columns(column: Any) -> tuple[Any, ...]:
    """The derived categorical columns of a date column's declared parts (public categories;
    nullable when the date is: an empty date has empty parts)."""
    from dpforge.schema.table import Column  # the column class (this module is its helper)

    if not column.is_time:
        return ()
    return tuple(
        Column(part_name(column.name, p), "categorical", None, None, PARTS[p], column.nullable)
        for p in column.parts
    )


def with_parts(columns: tuple[Any, ...]) -> tuple[Any, ...]:
    """``columns`` with each date column's part columns right after it (what is modelled)."""
    return tuple(c for column in columns for c in (column, *part_columns(column)))


def format_step(fmt: str) -> int:
    """The finest unit, in seconds, that ``fmt`` writes (86400 when it holds no time)."""
    found = [s for d, s in _TIME_DIRECTIVES.items() if f"%{d}" in fmt]
    return min(found, default=86400)


def resolution_seconds(value: Any, owner: str) -> int:
    """A resolution ("1D", "7D", "1h", "15min", "30s", or a number of seconds) in seconds."""
    if isinstance(value, bool):
        raise SchemaError(f"{owner}: resolution must be text such as '1D' or '1h', got {value!r}")
    if isinstance(value, int | float):
        seconds = float(value)
    else:
        match = re.fullmatch(r"\s*(\d+)\s*(D|h|min|s)\s*", str(value))
        if match is None:
            raise SchemaError(
                f"{owner}: resolution {value!r} is not understood; write a whole number and a "
                "unit: '1D', '7D', '1h', '15min' or '1s'"
            )
        seconds = float(int(match.group(1)) * UNITS[match.group(2)])
    if not (seconds >= 1 and seconds.is_integer()):
        raise SchemaError(f"{owner}: resolution must be a whole number of seconds >= 1")
    return int(seconds)


def resolution_text(seconds: float) -> str:
    """A resolution as the schema writes it: the largest unit that divides it."""
    for unit, size in UNITS.items():
        if seconds % size == 0:
            return f"{int(seconds // size)}{unit}"
    return f"{int(seconds)}s"  # pragma: no cover (every whole number of seconds has a unit)


def check_format(fmt: Any, type_: str, owner: str) -> None:
    """A strftime format that writes a full date (and, for datetime, a time) without a zone,
    checked by writing a probe time and reading it back."""
    if not isinstance(fmt, str) or "%" not in fmt:
        raise SchemaError(f"{owner}: format must be strftime text such as '%Y-%m-%d', got {fmt!r}")
    if any(z in fmt for z in _ZONES):
        raise SchemaError(
            f"{owner}: format {fmt!r} has a time zone (%z/%Z); dpforge reads times as written: "
            "convert them to one zone and drop the zone from the format"
        )
    probe = datetime(2031, 11, 27, 13, 45, 56) if type_ == "datetime" else datetime(2031, 11, 27)
    want = probe.replace(second=0) if format_step(fmt) == 60 else probe
    want = want.replace(minute=0, second=0) if format_step(fmt) == 3600 else want
    try:
        back = datetime.strptime(probe.strftime(fmt), fmt)
    except ValueError:
        back = None
    if back != want or (type_ == "datetime" and format_step(fmt) == 86400):
        what = "a date (year, month, day)" if type_ == "date" else "a date and an hour"
        raise SchemaError(
            f"{owner}: format {fmt!r} does not write {what} that reads back the same; use "
            f"directives such as {DEFAULT_FORMATS[type_]!r}"
        )
    if type_ == "date" and format_step(fmt) < 86400:
        raise SchemaError(f"{owner}: format {fmt!r} writes a time of day; make the column datetime")


def to_axis(texts: Any, column: Any) -> float:
    """One bound written in the column's format, on its axis (days or seconds since 1970)."""
    try:
        stamp = datetime.strptime(str(texts), column.format)
    except ValueError:
        raise SchemaError(
            f"column '{column.shown}': {texts!r} is not a {column.type} in the format "
            f"{column.format!r}"
        ) from None
    seconds = (stamp - EPOCH).total_seconds()
    if not FIRST_SECOND <= seconds <= LAST_SECOND:
        raise SchemaError(f"column '{column.shown}': {texts!r} is outside the years 1678 to 2261")
    return seconds / SECONDS[column.type]


def axis_texts(values: np.ndarray, column: Any) -> np.ndarray:
    """Axis values written in the column's format (object array; NaN gives None)."""
    import pandas as pd  # here, not at the top: reading a schema does not load pandas

    values = np.asarray(values, dtype=np.float64)
    seconds = np.rint(values * SECONDS[column.type])
    stamps = pd.to_datetime(np.where(np.isnan(seconds), 0, seconds), unit="s")
    texts = np.asarray(stamps.strftime(column.format), dtype=object)
    texts[np.isnan(seconds)] = None
    return texts


def time_from_dict(d: dict[str, Any]) -> dict[str, Any]:
    """The Column fields of a date column's JSON object (bounds on the axis, resolution in
    axis units)."""
    type_, owner = str(d["type"]), f"column '{d.get('name')}'"
    fmt = d.get("format") or DEFAULT_FORMATS[type_]
    check_format(fmt, type_, owner)
    shell = _Shell(str(d["name"]), type_, fmt)
    res = d.get("resolution")
    step = resolution_seconds(res, owner) if res is not None else format_step(fmt)
    return {
        "format": fmt,
        "lower": None if d.get("min") is None else to_axis(d["min"], shell),
        "upper": None if d.get("max") is None else to_axis(d["max"], shell),
        "resolution": step / SECONDS[type_],
        "parts": tuple(str(p) for p in d.get("parts") or ()),
    }


def time_to_dict(column: Any) -> dict[str, Any]:
    """A date column's JSON object: bounds written in its format."""
    bounds = [
        None if v is None else axis_texts(np.array([v]), column)[0]
        for v in (column.lower, column.upper)
    ]
    out = {"name": column.name, "type": column.type, "format": column.format}
    out.update({"min": bounds[0], "max": bounds[1]})
    out["resolution"] = resolution_text(column.resolution * SECONDS[column.type])
    if column.parts:
        out["parts"] = list(column.parts)
    return out


def time_defaults(column: Any) -> tuple[Any, Any]:
    """A date column's format (the type's ISO format unless given) and resolution in axis units
    (the finest unit the format writes unless given)."""
    fmt = column.format if column.format is not None else DEFAULT_FORMATS[column.type]
    if column.resolution is not None or not isinstance(fmt, str):
        return fmt, column.resolution
    return fmt, format_step(fmt) / SECONDS[column.type]


def validate_time_column(column: Any) -> None:
    """Format, resolution and parts of a date column (its bounds are checked as numbers)."""
    owner = f"column '{column.shown}'"
    check_format(column.format, column.type, owner)
    if column.categories is not None:
        raise SchemaError(f"{owner} is {column.type}: it has min/max, not categories")
    step = (column.resolution or 0) * SECONDS[column.type]
    if not (step >= 1 and float(step).is_integer()):
        raise SchemaError(f"{owner}: resolution must be a whole number of seconds >= 1")
    if step < format_step(column.format) or step % format_step(column.format):
        raise SchemaError(
            f"{owner}: resolution {resolution_text(step)} is finer than (or not a multiple of) "
            f"what the format {column.format!r} writes; give a coarser resolution or a finer format"
        )
    allowed = [p for p in PARTS if column.type == "datetime" or p != "hour"]
    for part in column.parts:
        if part not in allowed:
            raise SchemaError(f"{owner}: unknown part {part!r}; a {column.type} has {allowed}")
    if len(set(column.parts)) != len(column.parts):
        raise SchemaError(f"{owner}: parts name one part twice")


class _Shell:
    """Just enough of a column to read its bounds before the column exists."""

    def __init__(self, name: str, type_: str, fmt: str) -> None:
        self.name, self.type, self.format, self.shown = name, type_, fmt, name
