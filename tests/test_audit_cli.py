"""`dpforge audit` as a user calls it."""

from __future__ import annotations

import json

from cli_support import run


def test_one_run_audit_on_a_table(tmp_path, cancer, monkeypatch, capsys):
    frame, schema = cancer
    data, schema_path = tmp_path / "data.csv", tmp_path / "schema.json"
    frame.to_csv(data, index=False)
    schema_path.write_text(schema.to_json())
    out = tmp_path / "audit.json"
    args = ["audit", data, "--schema", schema_path, "--steps", "20", "--seed", "0", "--out", out]
    code, text = run(args, monkeypatch, capsys)
    assert code == 0, text
    assert "one-run audit of dpforge" in text and "consistent" in text
    saved = json.loads(out.read_text())
    assert saved["lower_bound"] <= saved["claimed_epsilon"] and not saved["violated"]
    code, text = run(args, monkeypatch, capsys)
    assert code == 2 and "already exists" in text


def test_many_runs_audit_and_bad_options(monkeypatch, capsys):
    code, text = run(
        ["audit", "--kind", "many-runs", "--runs", "300", "--delta", "0.01", "--seed", "1"],
        monkeypatch,
        capsys,
    )
    assert code == 0 and "many-runs audit of dpforge" in text, text
    code, text = run(["audit", "--kind", "sideways"], monkeypatch, capsys)
    assert code == 2 and "--kind 'sideways' is unknown" in text
    code, text = run(["audit"], monkeypatch, capsys)
    assert code == 2 and "needs DATA" in text
    code, text = run(["audit", "--kind", "many-runs", "--runs", "5"], monkeypatch, capsys)
    assert code == 2 and "runs=5" in text
