"""Noisy counts set to 0 where the noise is large against N (issue 22): the rule reads public
inputs only, changes no release's noise and keeps the projected total."""

from __future__ import annotations

import numpy as np
import pytest

import dpforge
import dpforge.kinds.table as table_kind
from dpforge.statistics.anchor import AnchorConfig
from dpforge.statistics.cells import MIN_CELLS
from dpforge.statistics.marginals import MeasuredMarginal
from dpforge.statistics.sparsify import (
    ZERO_BELOW,
    ZERO_SIGNAL,
    noise_bound,
    sparsified,
    zero_below_for,
)

NO_TRAINING = AnchorConfig(steps=0, scout_steps=0, batch_size=64)


def test_the_rule_sparsifies_only_where_the_noise_is_large_against_n():
    # psid at epsilon 3: 502 records, 2 classes, round 1's noise about 13.5 a cell
    assert noise_bound(502, 2, 13.5) and zero_below_for(None, 502, 2, 13.5) == ZERO_BELOW
    # nmes at epsilon 1, the nearest table the rule leaves alone: 2,937 records, noise 34.4
    assert not noise_bound(2937, 2, 34.4) and zero_below_for(None, 2937, 2, 34.4) == 0.0
    edge = 2 * MIN_CELLS * ZERO_SIGNAL * 10.0  # one class's cell holds exactly 2 sd
    assert not noise_bound(edge, 2, 10.0) and noise_bound(edge - 1, 2, 10.0)
    assert noise_bound(edge / 2 - 1, 0, 10.0) == noise_bound(edge / 2 - 1, 1, 10.0)  # no label
    assert zero_below_for(None, 100, 2, 0.0) == 0.0  # no noise (non-private): nothing to zero
    assert zero_below_for(0.0, 502, 2, 13.5) == 0.0  # a number is used as is: off
    assert zero_below_for(1.5, 10**6, 2, 1.0) == 1.5  # ... or everywhere
    with pytest.raises(ValueError, match="zero_below must be >= 0"):
        AnchorConfig(zero_below=-1.0).validate()


def test_counts_under_the_threshold_become_zero_and_the_total_stays_n():
    counts = np.array([50.0, 19.9, 20.0, -7.0, 12.1, 30.0])
    m = MeasuredMarginal(("y", "hours"), (2, 3), counts, 100.0)
    out = sparsified([m], std=10.0, zero_below=2.0)[0]
    assert out.noisy_counts.tolist() == [50.0, 0.0, 20.0, 0.0, 0.0, 30.0]
    assert out.distribution().sum() == pytest.approx(1.0)  # projected to N as before
    assert out.distribution()[1].tolist() == [0.0, 0.0, 0.3]  # the class's empty cells stay so
    assert m.distribution()[1, 1] > 0  # without it the noise kept mass there
    assert sparsified([m], std=10.0, zero_below=0.0)[0] is m  # off
    assert sparsified([m], std=0.0, zero_below=2.0)[0] is m  # no noise


def _fit(cancer, anchor: AnchorConfig, monkeypatch=None, seen=None):
    frame, schema = cancer
    if seen is not None:  # record the threshold each round used
        monkeypatch.setattr(
            table_kind, "zero_below_for", lambda *a: seen.append(zero_below_for(*a)) or seen[-1]
        )
    synth = dpforge.Synthesizer(
        schema, epsilon=1.0, delta=1e-5, seed=0, progress=False, anchor=anchor
    )
    return synth.fit(frame)


def _counts(synth) -> np.ndarray:
    return np.concatenate([m.noisy_counts for m in synth.sample_release_.marginals])


def test_the_choice_reads_public_inputs_only_and_the_ledger_is_unchanged(cancer, monkeypatch):
    frame, schema = cancer
    seen: list[float] = []
    default = _fit(cancer, NO_TRAINING, monkeypatch, seen)
    assert seen == [ZERO_BELOW, ZERO_BELOW]  # 569 records at epsilon 1: both rounds zeroed
    changed = frame.copy()
    changed.loc[:99, "diagnosis"] = changed.loc[:99, "diagnosis"].iloc[::-1].to_numpy()
    changed.loc[0, "mean_radius"] = changed["mean_radius"].max()
    seen.clear()
    _fit((changed, schema), NO_TRAINING, monkeypatch, seen)
    assert seen == [ZERO_BELOW, ZERO_BELOW]  # private values changed: the choice did not
    off = _fit(cancer, AnchorConfig(steps=0, scout_steps=0, batch_size=64, zero_below=0.0))
    assert default.ledger_.to_dict() == off.ledger_.to_dict()  # post-processing: same ledger
    zeroed, kept = _counts(default), _counts(off)
    assert zeroed.shape == kept.shape and (zeroed == 0).sum() > (kept == 0).sum()
    assert np.array_equal(zeroed[zeroed != 0], kept[zeroed != 0])  # the rest as released
