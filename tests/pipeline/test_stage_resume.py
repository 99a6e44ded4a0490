"""Resume per stage: a run restarts at the first stage not yet saved (pipeline.checkpoints).

A kill after the measure stage saved its output resumes without measuring again (no record is
read for a release, nothing is charged again) and fits the generator from the saved releases.
"""

from __future__ import annotations

import json

import pytest

import dpforge.pipeline.fit as fit_stage
import dpforge.pipeline.measure as measure_stage
from dpforge.errors import PrivacyError
from dpforge.pipeline.checkpoints import MEASURED
from dpforge.privacy.budget import BUDGET_SUFFIX, DataBudget
from dpforge.statistics.anchor import AnchorConfig
from dpforge.synthesizer import Synthesizer

pytestmark = pytest.mark.slow
DELTA = 1e-5
ANCHOR = AnchorConfig(steps=20, batch_size=256)


def _synth(schema, folder):
    return Synthesizer(
        schema, epsilon=3.0, delta=DELTA, seed=0, progress=False, anchor=ANCHOR,
        checkpoint_dir=folder,
    )  # fmt: skip


def test_a_run_killed_in_the_fit_stage_resumes_without_measuring_again(
    cancer, tmp_path, monkeypatch
):
    frame, schema = cancer
    budget = DataBudget(tmp_path / ("cancer" + BUDGET_SUFFIX))
    folder = tmp_path / "ck"

    def killed(*args, **kwargs):
        raise KeyboardInterrupt

    with monkeypatch.context() as patch:
        patch.setattr(fit_stage, "fit", killed)
        with pytest.raises(KeyboardInterrupt):
            _synth(schema, folder).fit(frame, budget=budget)
    saved = json.loads((folder / MEASURED).read_text())
    (run,) = budget.status().runs
    assert not run.reserved  # settled with the planned ledger before the kill

    def measured_again(*args, **kwargs):
        raise AssertionError("a resumed run measured again")

    monkeypatch.setattr(measure_stage, "release_size", measured_again)
    monkeypatch.setattr(measure_stage, "measure", measured_again)
    monkeypatch.setattr(measure_stage, "measure_adaptive", measured_again)
    synth = _synth(schema, folder).fit(frame, budget=budget)
    assert synth.ledger_.to_dict() == saved["setup"]["ledger"]
    assert len(budget.status().runs) == 1
    assert synth.sample(50, seed=0).shape == (50, frame.shape[1])


def test_the_measure_checkpoint_refuses_other_data(cancer, tmp_path):
    frame, schema = cancer
    folder = tmp_path / "ck"
    _synth(schema, folder).fit(frame)
    changed = frame.copy()
    changed.iloc[3, 0] = changed.iloc[4, 0]  # same size, one value changed
    with pytest.raises(PrivacyError, match="data differ"):
        _synth(schema, folder).fit(changed)
