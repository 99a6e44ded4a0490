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


def test_every_real_path_is_offered_by_name():
    from dpforge.audit.releases import RELEASES
    from dpforge.audit.training_step import STEP_PATHS
    from dpforge.cli.audit import RELEASE_NAMES, STEP_NAMES

    assert tuple(RELEASES) == RELEASE_NAMES and tuple(STEP_PATHS) == STEP_NAMES


def test_release_audit_runs_the_real_code(tmp_path, monkeypatch, capsys):
    out = tmp_path / "marginals.json"
    args = ["audit", "--release", "marginals", "--runs", "500", "--seed", "0", "--out", out]
    code, text = run(args, monkeypatch, capsys)
    assert code == 0, text
    assert "release audit of marginals" in text and "consistent" in text
    saved = json.loads(out.read_text())
    assert saved["details"]["release"] == "table marginals" and not saved["violated"]
    assert saved["details"]["config"]["runs"] == 500


def test_release_audit_of_a_step_and_a_planted_defect_exits_3(monkeypatch, capsys):
    code, text = run(
        ["audit", "--release", "dpwgan-step", "--runs", "200", "--seed", "0"], monkeypatch, capsys
    )
    assert code == 0 and "training step audit of dpwgan-step" in text, text
    from dpforge.pipeline import measure

    real = measure.release_count
    monkeypatch.setattr(measure, "release_count", lambda n, *rest: real(4 * n, *rest))
    code, text = run(
        ["audit", "--release", "record-count", "--runs", "1000", "--seed", "0"], monkeypatch, capsys
    )
    assert code == 3 and "VIOLATED" in text, text


def test_release_audit_refuses_what_does_not_apply(monkeypatch, capsys):
    code, text = run(["audit", "--release", "sideways"], monkeypatch, capsys)
    assert code == 2 and "--release 'sideways' is unknown" in text and "pair-scores" in text
    code, text = run(["audit", "--release", "codes", "--steps", "3"], monkeypatch, capsys)
    assert code == 2 and "leave out --steps" in text
    code, text = run(["audit", "--release", "codes", "--runs", "5"], monkeypatch, capsys)
    assert code == 2 and "runs=5" in text
    code, text = run(["audit", "--help"], monkeypatch, capsys, unwrap=True)
    assert code == 0 and "gswgan-sanitizer" in text and "federated-site" in text
