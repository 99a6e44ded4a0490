"""Generated CSV tables: read, draft a schema, check the data against it; by API and CLI."""

from __future__ import annotations

import json
import tempfile
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st
from property_support import assert_clean_error, assert_cli_clean, run_cli
from strategies import csv_tables

from dpforge.data.tables import draft_schema, read_csv, validate_table
from dpforge.errors import DataError, DpforgeError
from dpforge.schema.table import Schema


def _read_and_check(path: Path, target_index: int | None):
    """The user's path through the API: read, draft (with values), review, validate."""
    frame = read_csv(path)
    label = None if target_index is None else frame.columns[target_index % frame.shape[1]]
    draft = draft_schema(frame, label=label, with_values=True)
    reviewed = replace(draft, notes=())  # a person accepted the drafted values
    return frame, reviewed, validate_table(frame, reviewed)


@settings(max_examples=60)
@given(csv_tables(), st.none() | st.integers(0, 3))
def test_tables_are_read_drafted_and_checked_or_refused_on_one_line(table, target):
    text, names = table
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "data.csv"
        path.write_bytes(text.encode("utf-8"))
        try:
            frame, schema, typed = _read_and_check(path, target)
        except DpforgeError as exc:
            assert_clean_error(exc)
            return
        except Exception as exc:  # noqa: BLE001 - a traceback for the user
            assert_clean_error(exc)
    # Accepted: the reviewed draft survives its JSON file, and the typed table has every row
    # and every column but the identifiers (never read), present numbers finite and within the
    # bounds, present categories among the drafted ones; only nullable columns have empty cells.
    assert Schema.from_dict(json.loads(schema.to_json())) == schema
    assert schema.names == list(frame.columns)
    assert list(typed.columns) == schema.modelled.names
    assert len(typed) == len(frame) > 0
    assert len(set(schema.names)) == len(schema.names) and all(schema.names)
    for column in schema.modelled.columns:
        values = typed[column.name]
        assert column.nullable or not values.isna().any()
        values = values[values.notna()]
        if column.is_numeric:
            array = values.to_numpy(np.float64)
            assert np.isfinite(array).all()
            assert (array >= column.lower).all() and (array <= column.upper).all()
        else:
            assert set(values) <= set(column.categories)
    if schema.label is not None:
        assert 2 <= len(schema.label_column.categories) <= 50


@given(csv_tables(), st.none() | st.integers(0, 3))
def test_tables_through_dpforge_schema(table, target):
    text, names = table
    with tempfile.TemporaryDirectory() as folder:
        path, out = Path(folder) / "data.csv", Path(folder) / "schema.json"
        path.write_bytes(text.encode("utf-8"))
        args = ["schema", path, "--out", out]
        if target is not None:
            args += ["--target", names[target % len(names)].strip() or "x"]
        code, output = run_cli(args)
        assert_cli_clean(code, output)
        assert out.exists() == (code == 0), output


def test_a_nul_byte_and_a_repeated_column_are_refused(tmp_path):
    path = tmp_path / "d.csv"
    path.write_bytes(b"a,b\n1,2\n3,\x004\n")
    try:
        read_csv(path)
    except DataError as exc:
        assert "NUL byte (line 3)" in assert_clean_error(exc)
    else:
        raise AssertionError("a NUL byte was accepted")
    path.write_text("a,b, a\n1,2,3\n")
    try:
        read_csv(path)
    except DataError as exc:
        assert "names the column 'a' twice (columns 1 and 3" in str(exc)
    else:
        raise AssertionError("a repeated column name was accepted")


def test_a_continuous_target_is_refused_without_quoting_the_data(tmp_path):
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"x": rng.normal(size=300).round(3).astype(str), "y": ["a", "b"] * 150})
    path = tmp_path / "d.csv"
    frame.to_csv(path, index=False)
    code, output = run_cli(["schema", path, "--out", tmp_path / "s.json", "--target", "x"])
    assert code == 2
    assert "--target 'x' holds numbers with fractions" in output
    assert not any(value in output for value in frame["x"] if len(value) > 3)
    ids = pd.DataFrame({"id": [str(i) for i in range(300)], "y": ["a", "b"] * 150})
    ids.to_csv(path, index=False)
    code, output = run_cli(["schema", path, "--out", tmp_path / "s.json", "--target", "id"])
    assert code == 2 and "more than 50 distinct values" in output
    assert "300" not in output
