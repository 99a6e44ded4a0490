"""A steward's raw file as it comes (issue 46.6-46.8): a semicolon delimiter, a repeated person
id, a list of names, a 0 / 0.5 / 1 code, and samples written at the declared resolution."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from cli_support import run
from dpforge.data.encoder import snap
from dpforge.data.tables import draft_schema, header_delimiter, read_csv
from dpforge.schema.table import Column

RNG = np.random.default_rng(0)
N = 300


def _visits() -> pd.DataFrame:
    """Visits of 100 patients, three each: an id, a first name per patient, a code, an age."""
    patient = np.repeat(np.arange(1, 101), 3)
    names = np.array([f"Name{i}" for i in range(150)])
    return pd.DataFrame(
        {
            "patient_id": patient,
            "first_name": names[RNG.permutation(150)[:100]][patient - 1],
            "severity": RNG.choice(["0", "0.5", "1"], size=N),
            "age": RNG.integers(18, 90, size=N),
        }
    )


@pytest.mark.parametrize("delimiter", [";", "\t", "|", ","])
def test_the_delimiter_is_read_off_the_header(tmp_path, delimiter):
    path = tmp_path / "visits.csv"
    _visits().to_csv(path, sep=delimiter, index=False)
    assert header_delimiter(path) == delimiter
    frame = read_csv(path)
    assert list(frame.columns) == ["patient_id", "first_name", "severity", "age"]
    assert len(frame) == N


def test_a_semicolon_file_drafts_its_columns_on_the_command_line(tmp_path, monkeypatch, capsys):
    data, out = tmp_path / "visits.csv", tmp_path / "schema.json"
    _visits().to_csv(data, sep=";", index=False)
    code, printed = run(["schema", data, "--out", out], monkeypatch, capsys)
    assert code == 0, printed
    types = {c["name"]: c["type"] for c in json.loads(out.read_text())["columns"]}
    assert list(types) == ["patient_id", "first_name", "severity", "age"]
    assert (types["patient_id"], types["severity"], types["age"]) == (
        "drop", "categorical", "integer",
    )  # fmt: skip


def test_the_draft_says_a_repeated_id_is_the_privacy_unit():
    schema = draft_schema(_visits())
    assert schema.column("patient_id").type == "drop"
    unit = [n for n in schema.notes if "patient_id" in n]
    assert len(unit) == 1 and "--privacy-unit patient_id --max-rows-per-unit K" in unit[0]


def test_names_are_not_copied_into_the_schema_as_categories():
    frame = _visits()
    frame["first_name"] = [f"Name{i}" for i in RNG.integers(0, 250, size=N)]
    schema = draft_schema(frame)
    assert schema.column("first_name").type == "drop"
    assert any("'first_name' holds text of over 100 values" in n for n in schema.notes)


def test_a_code_with_fractions_is_drafted_categorical():
    column = draft_schema(_visits()).column("severity")
    assert (column.type, column.categories) == ("categorical", ("0", "0.5", "1"))


def test_samples_are_written_at_the_declared_resolution():
    column = Column("lab", "continuous", lower=0.05, upper=50.0, resolution=0.1)
    values = snap(np.array([19.7 + 1e-9, 0.05, 3.3333]), column)
    assert [str(v) for v in values] == ["19.75", "0.05", "3.35"]
    rows = snap(
        np.linspace(0, 50, 1001), Column("x", "continuous", lower=0, upper=50, resolution=0.1)
    )
    assert all(len(str(v).partition(".")[2]) <= 1 for v in rows)


def test_an_out_of_bounds_refusal_names_every_column_outside_its_bounds():
    from dpforge.data.tables import validate_table
    from dpforge.errors import DataError
    from dpforge.schema.table import Schema

    schema = Schema(
        (
            Column("age", "integer", lower=18, upper=90),
            Column("lab", "continuous", lower=0, upper=10),
            Column("bmi", "continuous", lower=10, upper=60),
        )
    )
    frame = pd.DataFrame({"age": ["17", "40"], "lab": ["5", "12.5"], "bmi": ["20", "30"]})
    with pytest.raises(DataError) as refused:
        validate_table(frame, schema)
    text = str(refused.value)
    assert text.startswith("2 columns hold values outside their declared bounds")
    assert "column 'age', row 1" in text and "column 'lab', row 2" in text and "bmi" not in text
    assert text.endswith("(--clip-out-of-bounds)")


def test_the_schema_command_prints_the_drafts_notes(tmp_path, monkeypatch, capsys):
    data, out = tmp_path / "visits.csv", tmp_path / "schema.json"
    _visits().to_csv(data, index=False)
    code, printed = run(["schema", data, "--out", out], monkeypatch, capsys, unwrap=True)
    assert code == 0, printed
    assert "check: column 'patient_id' looks like a person's id" in printed
    assert "--privacy-unit patient_id --max-rows-per-unit K" in printed
