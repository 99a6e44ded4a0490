"""``dpforge evaluate`` and ``dpforge report`` on related tables, called as a user calls them."""

from __future__ import annotations

import json

import numpy as np
from tests.cli_support import run
from tests.evaluation.test_relational_metrics import _linked, _schema

from dpforge.evaluation.relational_features import split_parents


def _files(tmp_path):
    """schema.json, train/ and test/ (split by parent) and synthetic/: one CSV per table."""
    tables, schema = _linked(90), _schema()
    train, test = split_parents(tables, schema, 1 / 3, np.random.default_rng(0))
    shuffled = {n: t.copy() for n, t in train.items()}  # the links broken
    shuffled["items"]["id"] = np.random.default_rng(1).permutation(shuffled["items"]["id"])
    for name, side in (("train", train), ("test", test), ("synthetic", shuffled)):
        (tmp_path / name).mkdir()
        for table, frame in side.items():
            frame.to_csv(tmp_path / name / f"{table}.csv", index=False)
    (tmp_path / "schema.json").write_text(schema.to_json())
    real = []
    for flag, side in (("--real-train", "train"), ("--real-test", "test")):
        real += [flag, tmp_path / side / "people.csv", flag, tmp_path / side / "items.csv"]
    return [tmp_path / "synthetic", "--schema", tmp_path / "schema.json", *real]


def test_evaluate_related_tables_writes_every_metric(tmp_path, monkeypatch, capsys):
    args = _files(tmp_path)
    out = tmp_path / "metrics.json"
    code, text = run(["evaluate", *args, "-o", out, "--classifiers", "lr", "--no-attacks"],
                     monkeypatch, capsys, unwrap=True)  # fmt: skip
    assert code == 0, text
    assert "NOT differentially private" in text and "parent-level task ('g')" in text
    result = json.loads(out.read_text())
    assert result["tables"]["items"]["mean_one_way"] == 0  # the same rows, keys shuffled
    assert result["parent_child"]["items"]["mean"] > 0.1
    assert result["rows"]["real_holdout"]["people"] == 30 and result["attacks"] is None


def test_report_related_tables_is_one_page(tmp_path, monkeypatch, capsys):
    args = _files(tmp_path)
    out = tmp_path / "report.html"
    code, text = run(["report", *args, "-o", out, "--classifiers", "lr", "--no-attacks"],
                     monkeypatch, capsys)  # fmt: skip
    assert code == 0, text
    page = out.read_text()
    assert "<h2>Related tables</h2>" in page and "NOT differentially private" in page


def test_related_files_without_schema_or_with_a_missing_table_are_refused(
    tmp_path, monkeypatch, capsys
):
    args = _files(tmp_path)
    out = tmp_path / "metrics.json"
    code, text = run(["evaluate", args[0], *args[3:], "-o", out], monkeypatch, capsys, unwrap=True)
    assert code != 0 and "--real-train was given 2 times" in text and "--schema" in text
    (tmp_path / "synthetic" / "items.csv").unlink()
    code, text = run(["evaluate", *args, "-o", out], monkeypatch, capsys, unwrap=True)
    assert code != 0 and "items.csv does not exist" in text
    code, text = run(["report", *args, "-o", out, "--pair", "x,y"], monkeypatch, capsys)
    assert code != 0 and "--pair applies to a model folder" in " ".join(text.split())
    assert not out.exists()
