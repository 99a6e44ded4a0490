"""Related tables resume: a fit interrupted after its parent part, called again with the same
checkpoint folder, charges the budget file nothing more, measures the finished part not again
(its releases are the same), keeps the same rows per parent, and refuses other settings."""

from __future__ import annotations

import json

import pytest

from cli_support import options_file, run
from dpforge.errors import PrivacyError
from dpforge.privacy.budget import BUDGET_SUFFIX, DataBudget
from dpforge.relational import RelationalSynthesizer
from dpforge.relational_checkpoint import RUN_FILE
from dpforge.statistics.anchor import AnchorConfig
from dpforge.synthesizer import Synthesizer
from tests.relational.support import hospital, hospital_schema

FAST = AnchorConfig(steps=20, batch_size=256)
FAST_SECTIONS = {"anchor": {"steps": 20, "batch_size": 256}, "output": {"progress": False}}


class Crash(Exception):
    """Stands for a kill after the parent part finished."""


def _model(schema, folder, epsilon: float = 3.0) -> RelationalSynthesizer:
    # seed None: the rows kept per parent come from the OS, kept in the folder for the resume
    return RelationalSynthesizer(
        schema, epsilon, progress=False, anchor=FAST, checkpoint_dir=folder
    )


def _crash_after_parent(monkeypatch, error: type[BaseException] = Crash) -> None:
    fit, calls = Synthesizer.fit, []

    def crashing(self, data, **options):
        calls.append(1)
        if len(calls) == 2:  # the first child part, before any of its releases
            raise error
        return fit(self, data, **options)

    monkeypatch.setattr(Synthesizer, "fit", crashing)


def _crashed_run(tmp_path, monkeypatch):
    """The hospital's fit killed after its parent part: (tables, schema, budget, folder)."""
    tables, schema = hospital(n=60)
    budget = DataBudget(tmp_path / ("patients.csv" + BUDGET_SUFFIX))
    folder = tmp_path / "checkpoints"
    with monkeypatch.context() as patch:
        _crash_after_parent(patch)
        with pytest.raises(Crash):
            _model(schema, folder).fit(tables, budget=budget)
    return tables, schema, budget, folder


@pytest.mark.slow
def test_an_interrupted_fit_resumes_without_a_second_charge(tmp_path, monkeypatch):
    tables, schema, budget, folder = _crashed_run(tmp_path, monkeypatch)
    (charged,) = budget.status().runs
    # the crash left the parts that did not run charged at their bounds: never less than ran
    assert "reserved" in charged.ledger.entries[-1].name
    assert (folder / RUN_FILE).is_file() and (folder / "patients" / "measured.json").is_file()
    parent_measured = (folder / "patients" / "measured.json").read_bytes()

    model = _model(schema, folder).fit(tables, budget=budget)
    (run,) = budget.status().runs  # the same run, settled: nothing charged twice
    assert run.run_id == charged.run_id and not run.reserved
    assert run.ledger.to_dict() == model.ledger_.to_dict()
    assert (folder / "patients" / "measured.json").read_bytes() == parent_measured
    assert model.privacy_spent().epsilon <= 3.0
    assert {"patients", "visits", "drugs"} == set(model.sample(20, seed=1))


@pytest.mark.slow
def test_a_resume_with_other_settings_is_refused_before_any_charge(tmp_path, monkeypatch):
    tables, schema, budget, folder = _crashed_run(tmp_path, monkeypatch)
    before = budget.status().runs
    with pytest.raises(PrivacyError, match="epsilon"):
        _model(schema, folder, epsilon=2.0).fit(tables, budget=budget)
    assert budget.status().runs == before


@pytest.mark.slow
def test_the_command_line_resumes_a_killed_related_fit(tmp_path, monkeypatch, capsys):
    tables, _ = hospital(n=60)
    for name, frame in tables.items():
        frame.to_csv(tmp_path / f"{name}.csv", index=False)
    (tmp_path / "hospital.json").write_text(json.dumps(hospital_schema()))
    args = [
        "fit", *[tmp_path / f"{n}.csv" for n in ("patients", "visits", "drugs")],
        "--schema", tmp_path / "hospital.json", "--out", tmp_path / "model",
        "--options", options_file(FAST_SECTIONS), "--checkpoint-dir", tmp_path / "private",
    ]  # fmt: skip
    with monkeypatch.context() as patch:
        _crash_after_parent(patch, KeyboardInterrupt)  # Ctrl-C as the first child part starts
        code, out = run(args, monkeypatch, capsys, unwrap=True)
    assert code == 130 and "--checkpoint-dir" in out and not (tmp_path / "model").exists()
    code, out = run(args, monkeypatch, capsys)
    assert code == 0, out
    budget = DataBudget(tmp_path / ("patients.csv" + BUDGET_SUFFIX))
    (run_record,) = budget.status().runs
    assert not run_record.reserved
