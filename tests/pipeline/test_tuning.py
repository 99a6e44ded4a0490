"""Hyperparameter search accounted with RepeatAndSelectDpEvent: draws, ε, the search itself."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from dp_accounting import dp_event

from dpforge.errors import PrivacyError
from dpforge.privacy.accounting import dpsgd_event, epsilon
from dpforge.privacy.budget import BUDGET_SUFFIX, DataBudget
from dpforge.privacy.release_noise import grid_event
from dpforge.synthesizer import Synthesizer
from dpforge.tuning import PrivateScore, PublicScore, Repetitions, describe, tune

DELTA = 1e-5


@pytest.mark.parametrize(
    ("mean", "shape", "expected"),
    [
        (10, math.inf, 4.329497680252047),  # Poisson
        (10, 1, 4.10327065640215),  # geometric
        (10, 0, 3.5226334451373686),  # logarithmic
        (10, 0.5, 3.8305964055789374),  # truncated negative binomial
        (3, 1, 3.3367859327321936),
    ],
)
def test_search_epsilon_is_pinned_and_a_few_times_one_run(mean, shape, expected):
    one = dpsgd_event(0.01, 1.0, 1000)  # one trial: RDP ε = 2.10 at δ = 1e-5
    event = Repetitions(mean, shape).event(one)
    assert isinstance(event, dp_event.RepeatAndSelectDpEvent)
    tuned = epsilon(event, DELTA, "rdp")
    assert tuned == pytest.approx(expected, rel=1e-9)
    single = epsilon(one, DELTA, "rdp")
    assert single < tuned < mean * single


@pytest.mark.parametrize("shape", [math.inf, 1.0, 0.0, 0.5])
def test_the_number_of_trials_follows_the_declared_distribution(shape):
    reps = Repetitions(8.0, shape)
    rng = np.random.default_rng(12345)
    draws = np.array([reps.draw(rng) for _ in range(40_000)])
    se = draws.std() / math.sqrt(draws.size)
    assert abs(draws.mean() - 8.0) < 5 * se  # the mean the accountant was told
    if math.isinf(shape):
        p_one = 8.0 * math.exp(-8.0)
        assert (draws == 0).any()  # Poisson may draw no trial at all
    else:
        assert draws.min() >= 1
        gamma = reps.gamma()
        if shape == 0:
            p_one = (1 - gamma) / math.log(1 / gamma)
        else:  # truncated negative binomial (geometric for shape 1)
            p_one = shape * (1 - gamma) * gamma**shape / (1 - gamma**shape)
    observed = (draws == 1).mean()
    assert abs(observed - p_one) < 5 * math.sqrt(p_one * (1 - p_one) / draws.size)


def test_bad_repetitions_and_scores_are_refused():
    for mean, shape in [(0.5, 1), (10, -1), (math.nan, 1), (True, 1)]:
        with pytest.raises(PrivacyError):
            Repetitions(mean, shape)
    with pytest.raises(PrivacyError):
        PrivateScore(lambda s, r: np.zeros(len(r)), [1, 2], 0.0)


def test_private_score_is_a_noisy_clipped_mean():
    records = list(range(100))
    score = PrivateScore(lambda s, r: np.full(len(r), 3.0), records, noise_multiplier=2.0)
    assert score.event == grid_event(2.0)
    values = [score(None, np.random.default_rng(i)) for i in range(2000)]
    # per-record scores clipped to 1: mean 1, noise std 2 / 100 on the mean
    assert np.mean(values) == pytest.approx(1.0, abs=5 * 0.02 / math.sqrt(2000))
    assert np.std(values) == pytest.approx(0.02, rel=0.1)


def _candidates(schema, lrs=(0.15, 0.05)):
    from dpforge.methods.dpcgan import DPCGANConfig

    return [
        Synthesizer(
            schema,
            epsilon=2.0,
            delta=DELTA,
            anchor=None,
            epochs=12.0,
            progress=False,
            method_options=DPCGANConfig(d_lr_start=lr),
        )  # fmt: skip
        for lr in lrs
    ]


def _balance(synth: Synthesizer) -> float:
    """A public score: how close the generated labels are to balanced (no private data)."""
    rows = synth.sample(200, seed=0)
    return -abs(float((rows["diagnosis"] == "benign").mean()) - 0.5)


@pytest.mark.slow
def test_search_releases_the_best_trial_with_the_search_event(cancer, tmp_path):
    frame, schema = cancer
    budget = DataBudget(tmp_path / ("cancer" + BUDGET_SUFFIX))
    candidates = _candidates(schema)
    reps = Repetitions(2.0, 1.0)  # geometric, mean 2
    rng = np.random.default_rng(3)
    result = tune(candidates, frame, PublicScore(_balance, "label balance"), reps, rng,
                  budget=budget)  # fmt: skip
    assert result.candidate in (0, 1)
    assert not hasattr(result, "trials")  # K stays hidden: the bound is for K unknown
    assert not any(hasattr(c, "ledger_") for c in candidates)  # candidates untouched
    entries = result.synthesizer.ledger_.entries
    # The record count, released once for the whole search (every trial is sized by it), then
    # the search itself.
    assert len(entries) == 2 and entries[0].name.startswith("record count")
    assert isinstance(entries[1].event, dp_event.RepeatAndSelectDpEvent)
    # One trial's event: metadata-free schema, so just the DP-SGD steps (and a free score).
    trial = entries[1].event.event
    spent = result.synthesizer.privacy_spent()
    assert spent.accountant == "rdp" and spent.epsilon == pytest.approx(result.epsilon(DELTA))
    assert spent.epsilon > epsilon(trial, DELTA, "rdp")
    assert "ε =" in describe(result, DELTA) and "public" in result.score_kind
    # Charged once, before the trials, with the whole search's event.
    runs = budget.status().runs
    assert len(runs) == 1
    assert [e.event for e in runs[0].ledger.entries] == [e.event for e in entries]


@pytest.mark.slow
def test_candidates_with_other_privacy_settings_stop_the_search(cancer, tmp_path):
    frame, schema = cancer
    budget = DataBudget(tmp_path / ("cancer" + BUDGET_SUFFIX))
    odd = _candidates(schema, lrs=(0.15,))[0]
    odd.epsilon = 3.0
    candidates = [*_candidates(schema, lrs=(0.15,)), odd]
    rng = np.random.default_rng(0)
    reps = Repetitions(1000.0, 1.0)  # many trials: both candidates get picked early
    with pytest.raises(PrivacyError, match="other DP events than the first trial"):
        tune(candidates, frame, PublicScore(_balance), reps, rng, budget=budget)
    assert len(budget.status().runs) == 1  # the search was charged before it stopped


def test_candidates_with_a_checkpoint_folder_are_refused(cancer, tmp_path):
    frame, schema = cancer
    candidate = _candidates(schema, lrs=(0.15,))[0]
    candidate.checkpoint_dir = tmp_path / "ckpt"
    with pytest.raises(PrivacyError, match="checkpoint_dir"):
        tune([candidate], frame, PublicScore(_balance), Repetitions(2.0, 1.0),
             np.random.default_rng(0))  # fmt: skip


def _tiny_candidates(schema, lrs=(0.15, 0.05)):
    """Candidates that print their progress (as a user's would, progress=True by default)."""
    from dpforge.methods.dpcgan import DPCGANConfig

    small = {"batch_size": 32, "latent_dim": 8, "generator_hidden": (16,),
             "discriminator_hidden": (16,)}  # fmt: skip
    return [
        Synthesizer(
            schema,
            epsilon=2.0,
            delta=DELTA,
            anchor=None,
            epochs=6.0,
            progress=True,
            method_options=DPCGANConfig(d_lr_start=lr, **small),
        )  # fmt: skip
        for lr in lrs
    ]


def test_only_the_released_trial_prints(cancer, capsys):
    """Issue 20.3: every trial printed its generator losses while it trained; a discarded
    trial's are not covered by the search's guarantee. Only the released trial's lines appear,
    once, after the search: as many as one trial prints, each a step count and G's loss."""
    frame, schema = cancer
    score = PublicScore(_balance, "label balance")
    result = tune(_tiny_candidates(schema), frame, score, Repetitions(2.0, 1.0),
                  np.random.default_rng(5))  # fmt: skip
    assert Repetitions(2.0, 1.0).draw(np.random.default_rng(5)) == 2  # the search's K
    captured = capsys.readouterr()
    lines = [line for line in captured.out.splitlines() if line.startswith("step ")]
    steps = result.synthesizer.plan_.steps
    assert len(lines) == steps // max(1, steps // 20)  # one trial's lines, not one per trial
    assert len({line.split()[1] for line in lines}) == len(lines)  # no step shown twice
    for line in lines:
        assert re.fullmatch(rf"step \d+/{steps}  G -?\d+\.\d{{3}}\s*", line), line
    assert "step " not in captured.err


def test_the_search_is_charged_before_its_first_release(cancer, tmp_path, monkeypatch):
    """Issue 43.6: the search released the noisy record count (and trial 1's metadata and
    anchoring) before it charged the budget file. It is charged first now, through the one
    charging path, with a bound that covers the count and the first trial's early releases."""
    import dpforge.tuning as tuning

    frame, schema = cancer
    budget = DataBudget(tmp_path / ("cancer" + BUDGET_SUFFIX))
    seen = []
    original = tuning.release_count

    def counting(*args, **kwargs):
        seen.append(budget.status().runs)
        return original(*args, **kwargs)

    monkeypatch.setattr(tuning, "release_count", counting)
    monkeypatch.setattr(Synthesizer, "fit", lambda self, data, budget=None: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        tune(_candidates(schema), frame, PublicScore(_balance), Repetitions(2.0, 1.0),
             np.random.default_rng(3), budget=budget)  # fmt: skip
    (runs,) = seen
    assert len(runs) == 1 and runs[0].reserved
    assert runs[0].ledger.entries[0].name.startswith("record count")
    assert "hyperparameter search" in runs[0].description


def test_a_trial_that_stops_on_a_dp_outcome_has_spent_its_budget(cancer, tmp_path):
    """Issue 43.6: a trial that stopped on a DP outcome (a batch larger than the count
    released under DP) charged nothing but printed the count. Now the search's reservation
    stays, and the message gives the noisy count only, never N."""
    from dpforge.methods.dpcgan import DPCGANConfig

    frame, schema = cancer
    budget = DataBudget(tmp_path / ("cancer" + BUDGET_SUFFIX))
    too_big = Synthesizer(schema, epsilon=2.0, delta=DELTA, anchor=None, epochs=12.0,
                          progress=False, method_options=DPCGANConfig(batch_size=5000))  # fmt: skip
    with pytest.raises(PrivacyError, match="counted under DP") as caught:
        tune([too_big], frame, PublicScore(_balance), Repetitions(2.0, 1.0),
             np.random.default_rng(3), budget=budget)  # fmt: skip
    assert f" {len(frame)} " not in str(caught.value)
    (run,) = budget.status().runs
    assert run.reserved and budget.status().spent.epsilon > 2.0
