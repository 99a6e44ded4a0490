"""The statistics of the audits: the one-run p-value and bound, Clopper-Pearson, validity."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import special, stats

from dpforge.audit.bound import (
    best_lower_bound,
    clopper_pearson,
    epsilon_lower_bound,
    guesses_from_scores,
    p_value,
    two_sample_lower_bound,
)
from dpforge.errors import PrivacyError


def test_p_value_with_no_delta_is_the_binomial_tail():
    eps = 1.0
    expected = stats.binom.sf(79, 100, special.expit(eps))
    assert p_value(1000, 100, 80, eps, 0.0) == pytest.approx(expected, rel=1e-12)
    # δ only adds: the δ term of Steinke, Nasr & Jagielski's Theorem 5.2
    assert p_value(1000, 100, 80, eps, 1e-5) > expected


def test_all_guesses_right_gives_the_largest_bound():
    # r right out of r: (e^ε / (1 + e^ε))^r = 0.05 at the bound (δ = 0)
    for r in (10, 100, 1000):
        eps = epsilon_lower_bound(1000, r, r, 0.0)
        assert special.expit(eps) ** r == pytest.approx(0.05, rel=1e-4)
    assert epsilon_lower_bound(1000, 1000, 1000, 1e-5) == pytest.approx(5.78, abs=0.01)
    assert epsilon_lower_bound(1000, 100, 50, 1e-5) == 0.0  # chance level refutes nothing


def test_the_bound_is_valid_for_an_epsilon_dp_guesser():
    """Guesses from ε0-randomized response (exactly ε0-DP): the bound exceeds ε0 in at most
    5% of audits (checked with 400 audits and a binomial margin)."""
    eps0, m, rng = 1.0, 1000, np.random.default_rng(0)
    exceed = 0
    for _ in range(400):
        included = rng.random(m) < 0.5
        keep = rng.random(m) < special.expit(eps0)
        scores = np.where(included == keep, 1.0, -1.0) + 1e-6 * rng.standard_normal(m)
        bound, _ = best_lower_bound(scores, included, [(100, 100), (300, 0)], 0.0)
        exceed += bound > eps0
    assert exceed <= stats.binom.ppf(0.999, 400, 0.05)
    assert exceed < 40


def test_guesses_take_the_extremes():
    scores = np.array([5.0, 4.0, 3.0, 2.0, 1.0, 0.0])
    included = np.array([True, True, False, False, True, False])
    outcome = guesses_from_scores(scores, included, 2, 2)
    assert (outcome.guesses, outcome.correct) == (4, 3)
    with pytest.raises(PrivacyError):
        guesses_from_scores(scores, included, 4, 4)


def test_clopper_pearson_matches_scipy():
    interval = stats.binomtest(7, 200).proportion_ci(0.95, method="exact")
    low, high = clopper_pearson(7, 200, 0.05)
    assert (low, high) == pytest.approx((interval.low, interval.high), rel=1e-9)
    assert clopper_pearson(0, 50, 0.05)[0] == 0.0 and clopper_pearson(50, 50, 0.05)[1] == 1.0


def test_two_sample_bound():
    # 500/1000 against 5/1000: log((P_low - δ) / P_high) with exact one-sided 97.5% bounds
    low, _ = clopper_pearson(500, 1000, 0.05)
    _, high = clopper_pearson(5, 1000, 0.05)
    assert two_sample_lower_bound(500, 1000, 5, 1000, 0.0, 0.05) == pytest.approx(
        math.log(low / high)
    )
    assert two_sample_lower_bound(10, 1000, 10, 1000, 0.0, 0.05) == 0.0
