"""Reading private time series: wide or long CSV files and ``.npy`` / ``.npz`` arrays.

Every reader returns :class:`~dpforge.data.arrays.ArrayData` with values shaped
``(n_series, channels, length)`` (float64) and labels as text (``None`` without a label).
Errors name the file, the row (1-based, header not counted) or record, the column and the
value, and say what to do. All series must share one length: a fixed length is part of the
public schema, and variable lengths would be private metadata (design rule 2).

:func:`draft_series_schema` leaves every channel's bounds null (estimated under DP unless the
user declares a public measurement range) and marks classes read from the data for review.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dpforge.data.arrays import ArrayData
from dpforge.data.images import (
    LABELS_KEYS,
    draft_label,
    labels_as_text,
    pick_array,
    read_npz,
    require_file,
)
from dpforge.data.tables import MISSING_TOKENS, canonical_text, read_csv
from dpforge.errors import DataError, private
from dpforge.schema.array import TIMESERIES, ArraySchema, Channel
from dpforge.schema.table import REVIEW_KEY

SERIES_KEYS = ("x", "values", "series")
LAYOUTS = ("wide", "long")


def default_channel_names(n_channels: int) -> tuple[str, ...]:
    """'value' for a univariate series, else 'channel_0', 'channel_1', ..."""
    return ("value",) if n_channels == 1 else tuple(f"channel_{i}" for i in range(n_channels))


# -- checked columns of a CSV ------------------------------------------------------------------
def _require_columns(frame: pd.DataFrame, path: Path, names: Sequence[str]) -> None:
    for name in names:
        if name not in frame.columns:
            raise DataError(f"{path} has no column '{name}'; its columns are {list(frame.columns)}")
    if len(set(names)) != len(names):
        raise DataError(f"{path}: the same column is given two roles: {list(names)}")


def _numbers(frame: pd.DataFrame, columns: Sequence[str], path: Path) -> np.ndarray:
    """The columns as a (rows, columns) float64 matrix; the first bad cell (row by row) is an
    error that names its row, column and value."""
    text = frame[list(columns)].apply(lambda col: col.str.strip())
    numbers = np.column_stack([_floats(text[c]) for c in columns])
    bad = np.argwhere(~np.isfinite(numbers))
    if bad.size:
        row, col = (int(i) for i in bad[0])
        raise DataError(_bad_number(path, row + 1, columns[col], text.iat[row, col], len(bad)))
    return numbers


def _floats(text: pd.Series) -> np.ndarray:
    """Exact (round-trip) text-to-float conversion; NaN where a cell is not a number.

    pandas' own parser may differ from the written value in the last bit, so a CSV written with
    full precision would not read back equal.
    """
    cells = text.to_numpy(dtype=str)
    try:
        return cells.astype(np.float64)
    except ValueError:
        return np.fromiter(map(_float_or_nan, cells), dtype=np.float64, count=len(cells))


def _float_or_nan(cell: str) -> float:
    try:
        return float(cell)
    except ValueError:
        return math.nan


def _bad_number(path: Path, row: int, column: str, raw: str, count: int) -> str:
    where = f"{path}, row {private(row)}, column '{column}'"
    shown = private(raw, "r")
    if raw.lower() in MISSING_TOKENS:
        problem = f"missing value {shown}"
    else:
        try:
            float(raw)
            problem = f"value {shown} is not finite"
        except ValueError:
            problem = f"{shown} is not a number"
    return (
        f"{where}: {problem}; every value of a series must be a finite number "
        f"({private(count)} bad value(s) in all): fix them or remove the series"
    )


def _texts(frame: pd.DataFrame, column: str, path: Path, role: str) -> np.ndarray:
    """A column of labels or ids as text; a missing entry is an error naming its row."""
    texts = [canonical_text(v) for v in frame[column].tolist()]
    for row, text in enumerate(texts, start=1):
        if text.lower() in MISSING_TOKENS:
            raise DataError(
                f"{path}, row {private(row)}, column '{column}': missing {role} "
                f"{private(text, 'r')}; give every "
                f"row a {role} or remove the row"
            )
    return np.asarray(texts, dtype=object)


# -- wide CSV ---------------------------------------------------------------------------------
def read_wide_csv(
    path: str | Path,
    label: str | None = None,
    id_column: str | None = None,
    *,
    channels: Sequence[str] | None = None,
) -> ArrayData:
    """One row per series, its values in the remaining columns in file order: shape (1, length).

    ``label`` names a column of class labels (read as text); ``id_column`` a column of series
    ids, which is checked for duplicates (a repeated id suggests a long-layout file) and
    dropped. ``channels`` reads a multivariate file as written by
    :func:`dpforge.data.export.write_series_csv`: each value column is named
    ``<channel>_<anything>`` and is assigned to its channel, in file order.
    """
    path = Path(path)
    frame = read_csv(path)
    roles = [c for c in (label, id_column) if c is not None]
    _require_columns(frame, path, roles)
    value_columns = [str(c) for c in frame.columns if c not in roles]
    if not value_columns:
        raise DataError(f"{path} has no value columns besides {roles}")
    if id_column is not None:
        _check_unique_ids(_texts(frame, id_column, path, "series id"), path, id_column)
    numbers = _numbers(frame, value_columns, path)
    values = (
        numbers[:, None, :] if channels is None else _split(numbers, value_columns, channels, path)
    )
    labels = None if label is None else _texts(frame, label, path, "label")
    return ArrayData(np.ascontiguousarray(values), labels)


def _check_unique_ids(ids: np.ndarray, path: Path, column: str) -> None:
    seen: dict[str, int] = {}
    for row, series_id in enumerate(ids.tolist(), start=1):
        if series_id in seen:
            raise DataError(
                f"{path}, column '{column}': series id {private(series_id, 'r')} appears in "
                f"rows {private(seen[series_id])} and {private(row)}; a wide file has one row "
                "per series (is this a "
                "long file with one row per time point? read it with layout='long')"
            )
        seen[series_id] = row


def _split(
    numbers: np.ndarray, columns: Sequence[str], channels: Sequence[str], path: Path
) -> np.ndarray:
    channels = [str(c) for c in channels]
    if not channels or len(set(channels)) != len(channels):
        raise DataError(f"channels must be distinct names, at least one; got {channels}")
    groups: dict[str, list[int]] = {c: [] for c in channels}
    for j, column in enumerate(columns):
        owners = [c for c in channels if column.startswith(f"{c}_")]
        if not owners:
            raise DataError(
                f"{path}: column '{column}' belongs to none of the channels {channels} (its "
                "name must start with '<channel>_'); rename it or declare it as id or label"
            )
        groups[max(owners, key=len)].append(j)
    lengths = {c: len(g) for c, g in groups.items()}
    if len(set(lengths.values())) != 1:
        raise DataError(
            f"{path}: the channels have different numbers of columns {lengths}; every "
            "channel needs one column per time point"
        )
    return np.stack([numbers[:, groups[c]] for c in channels], axis=1)


# -- long CSV ---------------------------------------------------------------------------------
def read_long_csv(
    path: str | Path,
    id_column: str = "id",
    time_column: str = "time",
    value_columns: Sequence[str] | None = None,
    label: str | None = None,
) -> ArrayData:
    """One row per (series, time point); several value columns make several channels.

    ``value_columns`` defaults to every column that is not the id, time or label column, in
    file order. Times are numbers, or dates/times in ISO 8601 (2024-01-31, 2024-01-31T12:00);
    each series is sorted by time. All series must have the same time points (the error names
    the first series that differs from the first series in the file), and a label must be
    constant within a series. Series come back in the order of their first row in the file.
    """
    path = Path(path)
    frame = read_csv(path)
    columns = _long_value_columns(frame, path, id_column, time_column, value_columns, label)
    ids = _texts(frame, id_column, path, "series id")
    times = _time_keys(frame, time_column, path)
    values = _numbers(frame, columns, path)
    codes, names = pd.factorize(ids)
    grid = _series_rows(codes, times, list(names), path)
    _check_time_points(grid, times, frame[time_column].tolist(), list(names), path)
    labels = None if label is None else _series_labels(frame, label, grid, list(names), path)
    return ArrayData(np.ascontiguousarray(values[grid].transpose(0, 2, 1)), labels)


def _long_value_columns(
    frame: pd.DataFrame,
    path: Path,
    id_column: str,
    time_column: str,
    value_columns: Sequence[str] | None,
    label: str | None,
) -> list[str]:
    roles = [id_column, time_column] + ([label] if label is not None else [])
    if value_columns is None:
        _require_columns(frame, path, roles)
        columns = [str(c) for c in frame.columns if c not in roles]
    else:
        columns = [str(c) for c in value_columns]
        _require_columns(frame, path, roles + columns)
    if not columns:
        raise DataError(f"{path} has no value columns besides {roles}")
    return columns


def _time_keys(frame: pd.DataFrame, column: str, path: Path) -> np.ndarray:
    """Times as sortable float64 keys: numbers as they are, ISO dates as nanoseconds.

    The first row decides: a number there makes the column numeric, otherwise dates are read.
    """
    text = frame[column].str.strip()
    numbers = _floats(text)
    if np.isfinite(numbers[0]):
        keys, expected = numbers, "a finite number like the first row's"
    else:
        keys, expected = _date_keys(text), "an ISO 8601 date/time (2024-01-31, 2024-01-31T12:00)"
    bad = np.flatnonzero(~np.isfinite(keys))
    if bad.size:
        row = int(bad[0]) + 1
        raise DataError(
            f"{path}, row {private(row)}, column '{column}': time "
            f"{private(text.iat[row - 1], 'r')} is not "
            f"{expected}: fix the value"
        )
    return keys


def _date_keys(text: pd.Series) -> np.ndarray:
    """ISO dates as float nanoseconds, NaN where a value is not a date."""
    try:
        dates = pd.to_datetime(text, errors="coerce", format="ISO8601", utc=True)
    except (ValueError, TypeError):
        return np.full(len(text), np.nan)
    keys = dates.dt.tz_localize(None).to_numpy(dtype="datetime64[ns]").astype(np.int64)
    return np.where(dates.isna().to_numpy(), np.nan, keys.astype(np.float64))


def _series_rows(codes: np.ndarray, times: np.ndarray, names: list[str], path: Path) -> np.ndarray:
    """(n_series, length) matrix of row indices, each series' rows sorted by time."""
    counts = np.bincount(codes)
    differ = np.flatnonzero(counts != counts[0])
    if differ.size:
        s = int(differ[0])
        raise DataError(
            f"{path}: series {private(names[s], 'r')} has {private(counts[s])} time point(s) "
            f"but series {private(names[0], 'r')}, the first in the file, has "
            f"{private(counts[0])}: all series must have the "
            "same length; resample them or remove the series"
        )
    order = np.lexsort((times, codes))
    return order.reshape(len(names), int(counts[0]))


def _check_time_points(
    grid: np.ndarray, times: np.ndarray, raw: list[Any], names: list[str], path: Path
) -> None:
    keys = times[grid]
    repeats = np.argwhere(np.diff(keys, axis=1) == 0)
    if repeats.size:
        s, j = (int(i) for i in repeats[0])
        rows = (int(grid[s, j]) + 1, int(grid[s, j + 1]) + 1)
        raise DataError(
            f"{path}: series {private(names[s], 'r')} has time point "
            f"{private(raw[grid[s, j]], 'r')} twice (rows {private(rows[0])} and "
            f"{private(rows[1])}): each series needs one row per time point"
        )
    differ = np.argwhere(keys != keys[0])
    if differ.size:
        s, j = (int(i) for i in differ[0])
        raise DataError(
            f"{path}: series {private(names[s], 'r')} has time point "
            f"{private(raw[grid[s, j]], 'r')} (row {private(int(grid[s, j]) + 1)}) where "
            f"series {private(names[0], 'r')}, the first in the file, has "
            f"{private(raw[grid[0, j]], 'r')}: all series must share the same time points; "
            "resample "
            "them or remove the series"
        )


def _series_labels(
    frame: pd.DataFrame, label: str, grid: np.ndarray, names: list[str], path: Path
) -> np.ndarray:
    per_row = _texts(frame, label, path, "label")[grid]
    differ = np.argwhere(per_row != per_row[:, :1])
    if differ.size:
        s, j = (int(i) for i in differ[0])
        raise DataError(
            f"{path}: the label '{label}' of series {private(names[s], 'r')} changes from "
            f"{private(per_row[s, 0], 'r')} (row {private(int(grid[s, 0]) + 1)}) to "
            f"{private(per_row[s, j], 'r')} (row {private(int(grid[s, j]) + 1)}); a label must "
            "be constant within a series"
        )
    return np.asarray(per_row[:, 0], dtype=object)


# -- arrays -----------------------------------------------------------------------------------
def read_series_array(
    path: str | Path, values_key: str | None = None, labels_key: str | None = None
) -> ArrayData:
    """Series from ``.npy`` (one array) or ``.npz``: (series, channels, length) or (series,
    length). A (series, length, channels) array must be transposed first: the shape cannot tell.

    For ``.npz``, ``values_key`` defaults to the first of 'x', 'values', 'series' or the only
    array; ``labels_key`` to 'y' or 'labels' when present (else no labels).
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix == ".npy":
        if values_key is not None or labels_key is not None:
            raise DataError(f"{path} is a .npy file: it holds one array and no labels; use .npz")
        return ArrayData(_series_values(_load_npy(path), str(path)))
    if suffix != ".npz":
        raise DataError(f"{path}: series arrays are read from .npy or .npz files")
    arrays = read_npz(path)
    key = pick_array(arrays, values_key, SERIES_KEYS, path, "series", fallback_single=True)
    if key is None:
        raise DataError(
            f"{path} holds arrays {sorted(arrays)}: none is named {list(SERIES_KEYS)}, so "
            "dpforge cannot tell which holds the series: pass values_key"
        )
    values = _series_values(arrays[key], f"{path}, array '{key}'")
    rest = {k: v for k, v in arrays.items() if k != key}
    lkey = pick_array(rest, labels_key, LABELS_KEYS, path, "labels", fallback_single=False)
    labels = (
        None if lkey is None else labels_as_text(arrays[lkey], len(values), f"{path}, '{lkey}'")
    )
    return ArrayData(values, labels)


def _load_npy(path: Path) -> np.ndarray:
    require_file(path)
    try:
        return np.load(path, allow_pickle=False)
    except ValueError:
        raise DataError(
            f"{path} is not a plain numpy array (it holds Python objects or is not a .npy "
            "file); dpforge loads no pickles because they can run code: save numbers"
        ) from None
    except (OSError, EOFError) as exc:
        raise DataError(f"{path} cannot be read as a .npy file ({exc}); write it again") from None


def _series_values(values: np.ndarray, where: str) -> np.ndarray:
    if values.ndim == 2:
        values = values[:, None, :]
    if values.ndim != 3 or 0 in values.shape:
        raise DataError(
            f"{where}: series must be shaped (series, channels, length) or (series, length) "
            f"with no empty axis; got {list(values.shape)}"
        )
    if values.dtype.kind not in "iubf":
        raise DataError(f"{where}: series values must be numbers, got dtype {values.dtype}")
    values = values.astype(np.float64)
    bad = np.argwhere(~np.isfinite(values))
    if bad.size:
        record, channel, step = (int(i) for i in bad[0])
        raise DataError(
            f"{where}: record {private(record + 1)} (index {private(record)}), channel {channel}, "
            f"position {step} holds "
            f"{private(values[record, channel, step])}; every value must be a finite number "
            f"({private(len(bad))} bad value(s) in all): fix or remove such series"
        )
    return values


# -- dispatch and schema draft --------------------------------------------------------------
def read_series(path: str | Path, *, layout: str = "wide", **options: Any) -> ArrayData:
    """Read time series by file suffix: ``.csv`` (``layout`` 'wide' or 'long'), ``.npy``,
    ``.npz``. ``options`` go to the reader (:func:`read_wide_csv`, :func:`read_long_csv` or
    :func:`read_series_array`); an option that reader does not take is an error naming it."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix == ".csv":
        if layout not in LAYOUTS:
            raise DataError(f"layout must be one of {LAYOUTS}, got {layout!r}")
        reader = read_wide_csv if layout == "wide" else read_long_csv
    elif suffix in (".npy", ".npz"):
        reader = read_series_array
    else:
        raise DataError(f"{path}: time series are read from .csv, .npy or .npz files")
    accepted = [p for p in inspect.signature(reader).parameters if p != "path"]
    unknown = sorted(set(options) - set(accepted))
    if unknown:
        raise DataError(
            f"{reader.__name__} does not take the option(s) {unknown}; it takes {accepted}"
        )
    return reader(path, **options)


def draft_series_schema(
    data: ArrayData,
    label: str | None = "label",
    *,
    channel_names: Sequence[str] | None = None,
    with_values: bool = True,
) -> ArraySchema:
    """Draft the public schema of a set of time series, shape (channels, length).

    Every channel's bounds are null: a series' range is private, so declare a public
    measurement range or let dpforge estimate it under DP. ``channel_names`` names the channels
    (e.g. the value columns of a long file); by default 'value' or 'channel_<i>'. Classes
    present in the data are put in the draft (with ``with_values``) with a review note, because
    they were read from the private data. ``label=None`` ignores the labels.
    """
    shape = data.shape
    if len(shape) != 2:
        raise DataError(f"time series must be shaped (channels, length); got {list(shape)}")
    names = default_channel_names(shape[0]) if channel_names is None else tuple(channel_names)
    if len(names) != shape[0]:
        raise DataError(f"{shape[0]} channel(s) but {len(names)} channel name(s): {list(names)}")
    channels = tuple(Channel(str(n)) for n in names)
    schema = draft_label(
        ArraySchema(TIMESERIES, (shape[0], shape[1]), channels), data, label, with_values
    )
    return replace(schema, notes=(_length_note(shape[1]), *schema.notes))


def _length_note(length: int) -> str:
    """Series lengths are data-dependent metadata (design rule 2) unless fixed by the source."""
    return (
        f"DRAFT: the series length {length} was READ FROM THE PRIVATE DATA. Keep it only if it "
        "is public (a fixed sampling plan, e.g. 24 hourly values a day); records of another "
        f"length are refused. Delete this '{REVIEW_KEY}' entry when done."
    )
