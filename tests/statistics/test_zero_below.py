"""``AnchorConfig.zero_below`` (off by default): noisy counts under a number of noise standard
deviations set to 0 before the projection; free post-processing of the release."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from tests.anchor_support import NO_TRAINING, released_fit

from dpforge.data.encoder import SOFTMAX, Span
from dpforge.engines.aggregates import NoisyCells
from dpforge.statistics.marginals import MeasuredMarginal
from dpforge.statistics.rounds import AnchorPlan, measure_round_one, round_one_cell_std, sparsified


def test_counts_under_the_threshold_become_zero_and_the_total_stays_n():
    counts = np.array([50.0, 19.9, 20.0, -7.0, 12.1, 30.0])
    m = MeasuredMarginal(("y", "hours"), (2, 3), counts, 100.0)
    out = sparsified([m], std=10.0, zero_below=2.0)[0]
    assert out.noisy_counts.tolist() == [50.0, 0.0, 20.0, 0.0, 0.0, 30.0]
    assert out.distribution().sum() == pytest.approx(1.0)  # projected to N as before
    assert out.distribution()[1].tolist() == [0.0, 0.0, 0.3]  # the class's empty cells stay so
    assert m.distribution()[1, 1] > 0  # without it the noise kept mass there
    assert sparsified([m], std=10.0, zero_below=0.0)[0] is m  # off (the default)
    assert sparsified([m], std=0.0, zero_below=2.0)[0] is m  # no noise: nothing to zero


def _fit(cancer, zero_below: float):
    return released_fit(cancer, replace(NO_TRAINING, zero_below=zero_below))


def test_the_ledger_is_unchanged_and_only_small_counts_change(cancer):
    zeroed, kept = _fit(cancer, 2.0), _fit(cancer, 0.0)
    assert zeroed.ledger_.to_dict() == kept.ledger_.to_dict()  # post-processing: same ledger
    a, b = (
        np.concatenate([m.noisy_counts for m in s.sample_release_.marginals])
        for s in (zeroed, kept)
    )
    assert a.shape == b.shape and (a == 0).sum() > (b == 0).sum()
    assert np.array_equal(a[a != 0], b[a != 0])  # every other count as released


class _SiteNoisedCells(NoisyCells):
    """Counts noised where the records are, as a federated engine's: every site adds its own
    noise, so the sum carries ``noise_factor`` times the asked sd. Returns fixed counts."""

    noise_factor = 3.0

    def __init__(self, counts: np.ndarray):
        self._counts = counts

    def noisy_counts(self, marginals, std):
        return [self._counts.reshape(2, 3) for _ in marginals]

    def noisy_scores(self, model, std):
        raise NotImplementedError


def test_thresholds_read_the_noise_the_counts_carry_at_the_sites():
    plan = AnchorPlan(round_one_noise=5.0)
    here = round_one_cell_std(plan, 4, {"y": np.zeros(3, dtype=np.int64)})
    sites = _SiteNoisedCells(np.array([50.0, 19.9, 20.0, -7.0, 12.1, 30.0]))
    assert here == pytest.approx(5.0 * 2)  # noise x rows x sqrt(4 marginals released together)
    assert round_one_cell_std(plan, 4, sites) == pytest.approx(3 * here)
    spans = [Span("hours", 0, 3, SOFTMAX)]
    plan = AnchorPlan(round_one_noise=2.5, one_way=False)  # one marginal: y x hours, sd 2.5
    out = measure_round_one(plan, sites, spans, "y", np.random.default_rng(0), 100.0, 2.0)
    # sd 2.5 x 3 = 7.5 at the sites: 2 sd is 15, so 12.1 goes too (at 2.5 it would stay)
    assert out[0].noisy_counts.tolist() == [50.0, 19.9, 20.0, 0.0, 0.0, 30.0]
