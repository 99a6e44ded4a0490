"""Dates and times in records: read in the declared format, written back in it, drawn in cells.

The public side (format, range, resolution, parts) is :mod:`dpforge.schema.dates`. Here:

* :func:`time_values` reads a column's texts into numbers on its time axis, refusing a value
  that does not parse with a message naming the column, the row, the value and the format;
* :func:`part_codes` derives a declared part (weekday, month, hour) from axis values;
* :func:`decode_times` draws a value inside each sampled cell that agrees with the sampled
  parts: ``CANDIDATES`` values are drawn inside the cell (from the DP fine histogram, as for any
  numeric column) and rounded to the resolution, and the first that agrees with most of the
  sampled parts is kept: the month first, then the weekday, then whether its day and cell
  hold the sampled hour (reached afterwards). A part the cell can hold is then honoured (a
  weekday that a cell of a week holds is missed with probability (6/7)^64 < 1e-4). Where the
  cell holds no day with the sampled weekday and month (cells narrower than a week, or the
  edge of a month), the value moves to the nearest day that has both, at most six days away,
  if there is one: the parts are measured 1-way and with the label like any column, so they
  are kept over the cell, at the price of moving some dates by a few days. Measured on 4,000
  flights at epsilon 3 (cells of 3 to 9 days): the generator's weekday distribution was 0.011
  (TVD) from the real one, the dates drawn inside their cells only were 0.038 from it. A date
  with one cell per day (a range of at most twice the number of cells) keeps its day: its
  1-way marginal measured the weekly pattern itself. A sampled hour that the kept value
  misses is then reached inside the same day and cell when the resolution allows;
* :func:`detect_format` proposes a format for the draft (``dpforge schema``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from dpforge.errors import DataError, private
from dpforge.schema.dates import (
    EPOCH,
    FIRST_SECOND,
    LAST_SECOND,
    PARTS,
    SECONDS,
    axis_texts,
    format_step,
)
from dpforge.statistics.bins import NumericBins

__all__ = ["decode_times", "detect_format", "part_codes", "time_texts", "time_values"]

CANDIDATES = 64  # values drawn per sampled cell, among which one agreeing with the parts is kept
CHUNK = 8192
# A candidate's score: the month first (a shift of days may not reach it), then the weekday
# (three days away at most), then the hour (reached inside the day).
WEIGHTS = {"month": 4, "weekday": 2}
MAX_SHIFT_DAYS = 6  # a sampled weekday is 3 days away at most, 6 at the edge of a month
# Formats the draft tries, in this order (the first that reads every value is proposed).
DRAFT_FORMATS = (
    "%Y-%m-%d",
    "%Y-%m-%d %H:%M:%S",
    "%Y-%m-%dT%H:%M:%S",
    "%Y-%m-%d %H:%M",
    "%Y-%m-%dT%H:%M",
    "%Y/%m/%d",
    "%d/%m/%Y",
    "%m/%d/%Y",
    "%d.%m.%Y",
    "%d/%m/%Y %H:%M",
    "%m/%d/%Y %H:%M",
    "%d-%b-%Y",
)


def time_values(texts: list[str], rows: np.ndarray, column: Any) -> np.ndarray:
    """The present values of a date column (texts, their 1-based ``rows``) on its axis."""
    stamps = pd.to_datetime(pd.Series(texts, dtype=object), format=column.format, errors="coerce")
    seconds = (stamps - EPOCH).dt.total_seconds().to_numpy(np.float64)
    bad = np.flatnonzero(~((seconds >= FIRST_SECOND) & (seconds <= LAST_SECOND)))
    if bad.size:
        at = int(bad[0])
        raise DataError(
            f"column '{column.name}', row {private(int(rows[at]))}: "
            f"{private(texts[at], 'r')} is not a {column.type} in the format "
            f"{column.format!r} (or lies outside the years 1678 to 2261); fix the value, or "
            "declare the format the file uses in the schema"
        )
    return seconds / SECONDS[column.type]


def check_time_range(values: np.ndarray, column: Any, out_of_bounds: str) -> None:
    """Refuse a value outside a declared range (unless values are to be clipped)."""
    if out_of_bounds != "error" or not column.is_complete:
        return
    outside = np.flatnonzero((values < column.lower) | (values > column.upper))
    if outside.size:
        row = int(outside[0]) + 1
        low, high = axis_texts(np.array([column.lower, column.upper]), column)
        shown = axis_texts(values[row - 1 : row], column)[0]
        raise DataError(
            f"column '{column.name}', row {private(row)}: {private(shown, 'r')} is outside the "
            f"declared range {low} to {high} ({private(outside.size)} value(s) in all); widen "
            "min/max in the schema, or clip such values to the range (--clip-out-of-bounds)"
        )


def time_texts(values: np.ndarray, column: Any) -> np.ndarray:
    """Axis values written in the column's format; NaN (a missing date) gives None."""
    return axis_texts(values, column)


def part_codes(values: np.ndarray, column: Any, part: str) -> np.ndarray:
    """Each value's part as an index into ``PARTS[part]``; -1 for a missing value."""
    values = np.asarray(values, dtype=np.float64)
    present = ~np.isnan(values)
    seconds = np.where(present, values, 0.0) * SECONDS[column.type]
    days = np.floor(seconds / 86400.0).astype(np.int64)
    if part == "weekday":  # 1970-01-01 was a Thursday (index 3)
        codes = (days + 3) % 7
    elif part == "month":
        codes = days.astype("datetime64[D]").astype("datetime64[M]").astype(np.int64) % 12
    elif part == "hour":
        codes = np.floor(seconds / 3600.0).astype(np.int64) % 24
    else:
        raise ValueError(f"unknown part {part!r}; parts are {list(PARTS)}")
    return np.where(present, codes, -1)


def snap_times(values: np.ndarray, column: Any) -> np.ndarray:
    """Values on the resolution grid from the lower bound, inside the range."""
    step, lower = float(column.resolution), float(column.lower)
    snapped = lower + np.rint((np.asarray(values, dtype=np.float64) - lower) / step) * step
    return np.clip(snapped, lower, float(column.upper))


def decode_times(
    bins: NumericBins,
    cells: np.ndarray,
    parts: dict[str, np.ndarray],
    column: Any,
    rng: np.random.Generator,
) -> np.ndarray:
    """A value inside each cell, on the resolution grid, agreeing with the sampled ``parts``
    (part name -> sampled index, -1 when missing) as far as the cell allows."""
    cells = np.asarray(cells, dtype=np.int64)
    if not parts:
        return snap_times(bins.decode(cells, rng), column)
    parts = {name: np.asarray(wanted) for name, wanted in parts.items()}
    out = np.empty(cells.size, dtype=np.float64)
    for start in range(0, cells.size, CHUNK):
        part = slice(start, start + CHUNK)
        chunk = cells[part]
        draws = bins.decode(np.repeat(chunk, CANDIDATES), rng).reshape(chunk.size, CANDIDATES)
        draws = snap_times(draws, column)
        agree = np.zeros(draws.shape, dtype=np.int64)
        for name, wanted in parts.items():  # an hour is reached afterwards: day parts first
            wanted = np.broadcast_to(np.asarray(wanted)[part, None], draws.shape)
            if name == "hour":  # the hour can be reached inside the candidate's day and cell
                cell = np.broadcast_to(chunk[:, None], draws.shape).ravel()
                first, last = _hour_grid(draws.ravel(), wanted.ravel(), cell, bins, column)
                agree += (first <= last).reshape(draws.shape)
                continue
            codes = part_codes(draws.ravel(), column, name).reshape(draws.shape)
            agree += (codes == wanted) * WEIGHTS[name]
        chosen = draws[np.arange(chunk.size), agree.argmax(axis=1)]
        if not bins.values.size:  # one cell per day: the day itself was measured, keep it
            chosen = _shift_days(chosen, {k: v[part] for k, v in parts.items()}, column)
        if "hour" in parts:
            chosen = _reach_hour(chosen, np.asarray(parts["hour"])[part], chunk, bins, column, rng)
        out[part] = chosen
    return out


def _shift_days(values: np.ndarray, parts: dict[str, np.ndarray], column: Any) -> np.ndarray:
    """Where the cell held no value with the sampled weekday and month, the nearest day
    (at most ``MAX_SHIFT_DAYS`` away, inside the range) that has both, when the resolution is
    a day or finer (a date's other parts, the hour and the time of day, stay)."""
    day_parts = {k: v for k, v in parts.items() if k != "hour"}
    unit = SECONDS[column.type]
    if not day_parts or column.resolution * unit > 86400:
        return values
    near = np.arange(1, MAX_SHIFT_DAYS + 1)
    offsets = np.concatenate([[0], np.column_stack([-near, near]).ravel()]) * 86400 / unit
    shifted = values[:, None] + offsets[None, :]
    inside = (shifted >= column.lower) & (shifted <= column.upper)
    agree = inside.copy()
    for name, wanted in day_parts.items():
        codes = part_codes(shifted.ravel(), column, name).reshape(shifted.shape)
        agree &= (codes == wanted[:, None]) | (wanted[:, None] < 0)
    best = np.where(agree.any(axis=1), agree.argmax(axis=1), 0)
    return shifted[np.arange(values.size), best]


def _reach_hour(values, hours, cells, bins: NumericBins, column: Any, rng) -> np.ndarray:
    """Move each value to a grid point of its sampled hour, in the same day and cell, where
    there is one (a datetime axis is in seconds)."""
    step, lower = float(column.resolution), float(column.lower)
    first, last = _hour_grid(values, hours, cells, bins, column)
    move = (part_codes(values, column, "hour") != hours) & (first <= last)
    picked = first + np.floor(rng.random(values.size) * (last - first + 1))
    return np.where(move, np.minimum(lower + picked * step, float(column.upper)), values)


def _hour_grid(values, hours, cells, bins: NumericBins, column: Any):
    """The first and last grid steps (from the lower bound) inside both the sampled hour of
    each value's day and the value's cell; first > last when there is none (or no hour)."""
    step, lower = float(column.resolution), float(column.lower)
    low, high = cell_bounds(bins, cells)
    day = np.floor(values / 86400.0) * 86400.0
    start = np.maximum(day + hours * 3600.0, low)
    stop = np.minimum(day + (hours + 1) * 3600.0, high + step / 2)  # an hour's end is excluded
    first = np.ceil((start - lower) / step - 1e-9)
    last = np.ceil((stop - lower) / step - 1e-9) - 1
    return first, np.where(hours >= 0, last, first - 1)


def cell_bounds(bins: NumericBins, cells: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The interval [low, high] on the axis that each cell covers."""
    if bins.values.size:
        values = bins.values[cells]
        return values - 0.5, values + 0.5
    edges, last = bins.edges, bins.size - 1
    low = edges[np.clip(cells - 1, 0, edges.size - 1)]
    high = edges[np.clip(cells, 0, edges.size - 1)]
    low = np.where(cells == 0, bins.lower, np.where(cells == last, bins.upper, low))
    high = np.where(cells == 0, bins.lower, np.where(cells == last, bins.upper, high))
    return low, high


def detect_format(present: list) -> str | None:
    """The first of ``DRAFT_FORMATS`` that reads every present value (None: not dates)."""
    texts = pd.Series([str(v).strip() for v in present], dtype=object)
    if texts.empty or not texts.str.contains(r"\d", regex=True).all():
        return None
    for fmt in DRAFT_FORMATS:
        head = pd.to_datetime(texts.head(50), format=fmt, errors="coerce")
        if head.isna().any():
            continue
        stamps = pd.to_datetime(texts, format=fmt, errors="coerce")
        seconds = (stamps - EPOCH).dt.total_seconds()
        if not stamps.isna().any() and seconds.between(FIRST_SECOND, LAST_SECOND).all():
            return fmt
    return None


def drafted_type(fmt: str) -> str:
    """A detected format's column type: datetime when it writes a time of day."""
    return "datetime" if format_step(fmt) < 86400 else "date"
