"""Time-series readers: wide and long CSV, .npy/.npz; refusals name row, column, value."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from dpforge.data.arrays import ArrayData
from dpforge.data.series import (
    draft_series_schema,
    read_long_csv,
    read_series,
    read_series_array,
    read_wide_csv,
)
from dpforge.errors import DataError


def _write(tmp_path: Path, text: str, name: str = "s.csv") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


WIDE = "id,t0,t1,t2,kind\na,1,2,3,x\nb,4.5,5,6,y\nc,7,8,-9e1,x\n"

# The same three series in long form, rows shuffled and time unsorted.
LONG = (
    "id,time,value,kind\n"
    "b,1,5,y\n"
    "a,0,1,x\n"
    "c,2,-9e1,x\n"
    "a,2,3,x\n"
    "b,0,4.5,y\n"
    "a,1,2,x\n"
    "c,0,7,x\n"
    "b,2,6,y\n"
    "c,1,8,x\n"
)


# -- wide -------------------------------------------------------------------------------------
def test_wide_csv_with_id_and_label(tmp_path):
    data = read_wide_csv(_write(tmp_path, WIDE), label="kind", id_column="id")
    assert data.values.shape == (3, 1, 3) and data.values.dtype == np.float64
    assert data.values[:, 0].tolist() == [[1, 2, 3], [4.5, 5, 6], [7, 8, -90]]
    assert data.labels.tolist() == ["x", "y", "x"]


def test_wide_csv_without_roles_reads_every_column(tmp_path):
    data = read_wide_csv(_write(tmp_path, "t0,t1\n1,2\n3,4\n"))
    assert data.labels is None and data.values.tolist() == [[[1, 2]], [[3, 4]]]


@pytest.mark.parametrize(
    ("text", "kwargs", "pattern"),
    [
        ("t0,t1\n1,2\n3,abc\n", {}, "row 2, column 't1': 'abc' is not a number"),
        ("t0,t1\n1,\n3,4\n", {}, "row 1, column 't1': missing value ''"),
        ("t0,t1\n1,2\ninf,4\n", {}, "row 2, column 't0': value 'inf' is not finite"),
        ("t0,t1\nNA,x\n1,2\n", {}, r"row 1, column 't0'.*\(2 bad value\(s\) in all\)"),
        ("t0,t1\n1,2\n", {"label": "kind"}, r"no column 'kind'.*\['t0', 't1'\]"),
        ("t0,kind\n1,x\n2,\n", {"label": "kind"}, "row 2, column 'kind': missing label ''"),
        ("id,kind\na,x\n", {"label": "kind", "id_column": "id"}, "no value columns"),
        ("id,t0\na,1\nb,2\na,3\n", {"id_column": "id"}, "'a' appears in rows 1 and 3.*long"),
        ("t0,t1\n1,2\n", {"label": "t0", "id_column": "t0"}, "same column is given two roles"),
    ],
)
def test_wide_csv_errors(tmp_path, text, kwargs, pattern):
    path = _write(tmp_path, text)
    with pytest.raises(DataError, match=pattern) as info:
        read_wide_csv(path, **kwargs)
    assert str(path) in str(info.value)


def test_wide_csv_missing_or_empty_file(tmp_path):
    with pytest.raises(DataError, match="does not exist"):
        read_wide_csv(tmp_path / "none.csv")
    with pytest.raises(DataError, match="header but no rows"):
        read_wide_csv(_write(tmp_path, "t0,t1\n"))


def test_wide_csv_channels_by_column_prefix(tmp_path):
    text = "temp_t0,temp_t1,temp_rate_t0,temp_rate_t1,kind\n1,2,10,20,a\n3,4,30,40,b\n"
    data = read_wide_csv(_write(tmp_path, text), label="kind", channels=["temp", "temp_rate"])
    assert data.values.shape == (2, 2, 2)
    assert data.values[0].tolist() == [[1, 2], [10, 20]]  # longest prefix wins


@pytest.mark.parametrize(
    ("text", "channels", "pattern"),
    [
        ("a_t0,b_t0,c_t0\n1,2,3\n", ["a", "b"], "column 'c_t0' belongs to none of the channels"),
        ("a_t0,a_t1,b_t0\n1,2,3\n", ["a", "b"], r"different numbers of columns \{'a': 2, 'b': 1"),
        ("a_t0\n1\n", ["a", "a"], "distinct names"),
    ],
)
def test_wide_csv_channel_errors(tmp_path, text, channels, pattern):
    with pytest.raises(DataError, match=pattern):
        read_wide_csv(_write(tmp_path, text), channels=channels)


# -- long -------------------------------------------------------------------------------------
def test_long_csv_equals_wide_csv(tmp_path):
    wide = read_wide_csv(_write(tmp_path, WIDE, "w.csv"), label="kind", id_column="id")
    long = read_long_csv(_write(tmp_path, LONG, "l.csv"), label="kind")
    np.testing.assert_array_equal(long.values[[1, 0, 2]], wide.values)  # b first in LONG
    assert long.labels.tolist() == ["y", "x", "x"]


def test_long_csv_several_channels_and_custom_columns(tmp_path):
    text = (
        "series,step,temp,hum,note\n"
        "s1,2,12,0.2,ok\ns1,1,11,0.1,ok\ns2,1,21,0.3,ok\ns2,2,22,0.4,ok\n"
    )
    path = _write(tmp_path, text)
    data = read_long_csv(path, "series", "step", value_columns=["temp", "hum"])
    assert data.values.shape == (2, 2, 2) and data.labels is None
    assert data.values[0].tolist() == [[11, 12], [0.1, 0.2]]
    assert data.values[1].tolist() == [[21, 22], [0.3, 0.4]]
    with pytest.raises(DataError, match="row 1, column 'note': 'ok' is not a number"):
        read_long_csv(path, "series", "step")  # every other column is a value column


def test_long_csv_iso_dates_are_sorted_in_time(tmp_path):
    text = (
        "id,time,v\n"
        "a,2024-01-10,3\na,2024-01-02,2\na,2023-12-31T23:00,1\n"
        "b,2023-12-31T23:00,4\nb,2024-01-02,5\nb,2024-01-10,6\n"
    )
    data = read_long_csv(_write(tmp_path, text))
    assert data.values[:, 0].tolist() == [[1, 2, 3], [4, 5, 6]]


@pytest.mark.parametrize(
    ("text", "pattern"),
    [
        (
            "id,time,v\na,0,1\na,1,2\nb,0,3\n",
            "series 'b' has 1 time point.*series 'a', the first in the file, has 2",
        ),
        (
            "id,time,v\na,0,1\na,1,2\nb,0,3\nb,5,4\n",
            r"series 'b' has time point '5' \(row 4\) where series 'a'.*has '1'",
        ),
        ("id,time,v\na,0,1\na,0,2\n", r"series 'a' has time point '0' twice \(rows 1 and 2\)"),
        (
            "id,time,v,k\na,0,1,x\na,1,2,y\nb,0,3,x\nb,1,4,x\n",
            r"label 'k' of series 'a' changes from 'x' \(row 1\) to 'y' \(row 2\)",
        ),
        ("id,time,v\na,0,1\na,later,2\n", "row 2, column 'time': time 'later' is not a finite"),
        ("id,time,v\na,2024-01-01,1\na,soon,2\n", "row 2.*'soon' is not an ISO 8601 date"),
        ("id,time,v\na,0,1\n,1,2\n", "row 2, column 'id': missing series id ''"),
        ("id,time,v\na,0,1\na,1,x\n", "row 2, column 'v': 'x' is not a number"),
        ("id,t,v\na,0,1\n", r"no column 'time'; its columns are \['id', 't', 'v'\]"),
        ("id,time\na,0\n", "no value columns besides"),
    ],
)
def test_long_csv_errors(tmp_path, text, pattern):
    label = "k" if text.startswith("id,time,v,k") else None
    with pytest.raises(DataError, match=pattern):
        read_long_csv(_write(tmp_path, text), label=label)


def test_long_csv_unknown_value_column(tmp_path):
    with pytest.raises(DataError, match="no column 'w'"):
        read_long_csv(_write(tmp_path, "id,time,v\na,0,1\n"), value_columns=["w"])


# -- arrays -----------------------------------------------------------------------------------
def test_series_arrays(tmp_path):
    values = np.arange(12, dtype=np.int32).reshape(3, 4)
    np.save(tmp_path / "a.npy", values)
    data = read_series_array(tmp_path / "a.npy")
    assert data.values.shape == (3, 1, 4) and data.values.dtype == np.float64
    np.savez(tmp_path / "b.npz", series=values.reshape(3, 2, 2), labels=np.array([0, 1, 0]))
    data = read_series_array(tmp_path / "b.npz")
    assert data.values.shape == (3, 2, 2) and data.labels.tolist() == ["0", "1", "0"]


@pytest.mark.parametrize(
    ("name", "arrays", "kwargs", "pattern"),
    [
        ("a.npz", {"x": np.array([[1.0, np.nan]])}, {}, r"record 1 \(index 0\), channel 0, pos"),
        ("a.npz", {"x": np.zeros((2, 2, 2, 2))}, {}, r"\(series, length\).*\[2, 2, 2, 2\]"),
        ("a.npz", {"x": np.zeros((2, 0))}, {}, "no empty axis"),
        ("a.npz", {"x": np.array([["a"]])}, {}, "must be numbers"),
        ("a.npz", {"p": np.zeros(2), "q": np.zeros(2)}, {}, "cannot tell which holds the se"),
        ("a.npz", {"x": np.zeros((2, 3))}, {"labels_key": "y"}, "no array 'y' for the labels"),
        ("a.npy", np.zeros((2, 3)), {"labels_key": "y"}, "holds one array and no labels"),
        ("a.npy", np.array([{}, None]), {}, "not a plain numpy array"),
        ("a.txt", None, {}, "from .npy or .npz files"),
    ],
)
def test_series_array_errors(tmp_path, name, arrays, kwargs, pattern):
    path = tmp_path / name
    if isinstance(arrays, dict):
        np.savez(path, **arrays)
    elif arrays is not None:
        np.save(path, arrays, allow_pickle=True)
    with pytest.raises(DataError, match=pattern):
        read_series_array(path, **kwargs)


# -- dispatch ---------------------------------------------------------------------------------
def test_read_series_dispatch(tmp_path):
    wide = read_series(_write(tmp_path, WIDE, "w.csv"), label="kind", id_column="id")
    long = read_series(_write(tmp_path, LONG, "l.csv"), layout="long", label="kind")
    assert wide.values.shape == long.values.shape == (3, 1, 3)
    np.save(tmp_path / "a.npy", np.zeros((2, 5)))
    assert read_series(tmp_path / "a.npy").values.shape == (2, 1, 5)
    with pytest.raises(DataError, match=r"read_wide_csv does not take the option\(s\) \['time_c"):
        read_series(tmp_path / "w.csv", time_column="t")
    with pytest.raises(DataError, match="layout must be one of"):
        read_series(tmp_path / "w.csv", layout="tall")
    with pytest.raises(DataError, match="from .csv, .npy or .npz"):
        read_series(tmp_path / "w.parquet")


# -- schema draft -----------------------------------------------------------------------------
def test_draft_series_schema_leaves_bounds_null_and_flags_classes():
    data = ArrayData(np.zeros((3, 2, 5)), np.asarray(["10", "9", "10"], dtype=object))
    schema = draft_series_schema(data, channel_names=["temp", "hum"])
    assert schema.kind == "timeseries" and schema.shape == (2, 5)
    assert [(c.name, c.lower, c.upper) for c in schema.channels] == [
        ("temp", None, None),
        ("hum", None, None),
    ]
    assert schema.classes == ("9", "10") and schema.label_prior == "dp"
    assert len(schema.notes) == 2 and all("READ FROM THE PRIVATE DATA" in n for n in schema.notes)


def test_draft_series_schema_defaults_and_errors():
    plain = draft_series_schema(ArrayData(np.zeros((2, 1, 4))))
    assert plain.names == ["value"] and plain.label is None
    assert (
        len(plain.notes) == 1
        and "series length 4 was READ FROM THE PRIVATE DATA" in (plain.notes[0])
    )  # lengths are data-dependent metadata: reviewed like classes
    assert draft_series_schema(ArrayData(np.zeros((2, 3, 4)))).names == [
        "channel_0",
        "channel_1",
        "channel_2",
    ]
    with pytest.raises(DataError, match=r"2 channel\(s\) but 1 channel name"):
        draft_series_schema(ArrayData(np.zeros((2, 2, 4))), channel_names=["a"])
    with pytest.raises(DataError, match=r"\(channels, length\); got \[1, 2, 2\]"):
        draft_series_schema(ArrayData(np.zeros((2, 1, 2, 2))))
