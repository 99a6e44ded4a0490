"""``dpforge report`` on a model whose schema has identifier columns (issue 46.1).

A per-person model needs a "drop" (or "surrogate") column, and such columns are never sampled:
the full report and the release report must compare only the modelled columns, not fail on the
identifier the synthetic table lacks.
"""

from __future__ import annotations

import json

import pytest

import dpforge
from cli_support import run
from dpforge.schema.table import Column
from dpforge.statistics.anchor import AnchorConfig

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def per_person(cancer, tmp_path_factory):
    """Breast-cancer rows with a repeated person id ("drop", the unit) and a record number
    ("surrogate"), fitted per person with two rows at most."""
    frame, schema = cancer
    frame = frame.sample(frac=1.0, random_state=0).reset_index(drop=True)
    frame.insert(0, "person", [f"p{i // 2}" for i in range(len(frame))])
    frame.insert(1, "record", [f"r{i}" for i in range(len(frame))])
    columns = (Column("person", "drop"), Column("record", "surrogate"), *schema.columns)
    schema = schema.with_columns(columns)
    folder = tmp_path_factory.mktemp("identifiers")
    frame.iloc[:400].to_csv(folder / "train.csv", index=False)
    frame.iloc[400:].to_csv(folder / "test.csv", index=False)
    dpforge.Synthesizer(
        schema, epsilon=3.0, seed=0, progress=False, anchor=AnchorConfig(steps=20),
        privacy_unit="person", max_rows_per_unit=2,
    ).fit(frame.iloc[:400]).save(folder / "model")  # fmt: skip
    return folder


def test_the_full_report_of_a_per_person_model_compares_the_modelled_columns(
    per_person, tmp_path, monkeypatch, capsys
):
    out = tmp_path / "report.html"
    code, printed = run(
        ["report", per_person / "model", "-o", out, "--classifiers", "lr", "--no-attacks",
         "--real-train", per_person / "train.csv", "--real-test", per_person / "test.csv"],
        monkeypatch, capsys,
    )  # fmt: skip
    assert code == 0, printed
    page = out.read_text()
    assert "mean_radius" in page and "Traceback" not in printed


def test_the_release_report_of_a_per_person_model_is_written(
    per_person, tmp_path, monkeypatch, capsys
):
    out = tmp_path / "release.html"
    args = ["report", per_person / "model", "-o", out, "--release"]
    code, printed = run(args, monkeypatch, capsys)
    assert code == 0, printed
    schema = json.loads((per_person / "model" / "model.json").read_text())["schema"]
    assert {"name": "person", "type": "drop"} in schema["columns"]  # declared, never sampled
    assert "mean_radius" in out.read_text()
