"""Distinct matched rows (:mod:`dpforge.statistics.inclusion`): the shift makes the
probabilities sum to n, the written-out gradient equals finite differences of the objective,
the sample includes each row with its probability and never twice, and the fitted
probabilities bring the pool to the targets."""

from __future__ import annotations

import numpy as np
import pytest

from dpforge.statistics.inclusion import (
    _sigmoid,
    distinct_sample,
    fit_inclusion,
    inclusion_objective,
    shift_for,
)
from dpforge.statistics.pool_cells import PoolCells
from dpforge.statistics.reweight import ReweightSettings


def _pool(rng, size=400):
    """Two columns of 3 and 4 cells as one concatenated cell index, and random targets."""
    index = np.stack([rng.integers(0, 3, size), 3 + rng.integers(0, 4, size)])
    target = np.concatenate([rng.dirichlet(np.ones(3)), rng.dirichlet(np.ones(4))])
    return PoolCells(index, 7), target


@pytest.mark.parametrize("n", [1, 37, 399])
def test_the_shift_makes_the_probabilities_sum_to_n(n):
    theta = np.random.default_rng(n).normal(0, 3, 400)
    b = shift_for(theta, n, 0.0)
    assert _sigmoid(theta - b).sum() == pytest.approx(n, rel=1e-8)


def test_the_gradient_equals_finite_differences():
    rng = np.random.default_rng(0)
    cells, target = _pool(rng)
    theta, n = rng.normal(0, 1, 400), 50

    def value(t: np.ndarray) -> float:
        return inclusion_objective(t, shift_for(t, n, 0.0), cells, target, n)[0]

    _, grad = inclusion_objective(theta, shift_for(theta, n, 0.0), cells, target, n)
    for i in rng.choice(400, 8, replace=False):
        step = np.zeros(400)
        step[i] = 1e-6
        numeric = (value(theta + step) - value(theta - step)) / 2e-6
        assert grad[i] == pytest.approx(numeric, rel=1e-4, abs=1e-10)


def test_each_row_is_included_with_its_probability_and_never_twice():
    rng = np.random.default_rng(1)
    pi = np.array([0.9, 0.75, 0.6, 0.5, 0.4, 0.3, 0.2, 0.15, 0.1, 0.1])  # sums to 4
    seen = np.zeros(10)
    for _ in range(20_000):
        order = rng.permutation(10)  # Madow's systematic sampling over a random order
        picks = order[distinct_sample(pi[order], rng)]
        assert len(picks) == 4 and len(set(picks)) == 4
        seen[picks] += 1
    assert np.allclose(seen / 20_000, pi, atol=0.015)


def test_fitted_probabilities_bring_the_pool_to_the_targets():
    rng = np.random.default_rng(2)
    cells, target = _pool(rng, 2000)
    n = 500
    pi = fit_inclusion(target, cells, n, ReweightSettings(steps=300))
    assert pi.sum() == pytest.approx(n) and pi.max() <= 1

    def gap(p: np.ndarray) -> float:
        return 0.5 * float(np.abs(cells.to_cells @ (p / n) - target).sum())

    assert gap(pi) < 0.2 * gap(np.full(2000, n / 2000))


def test_distinct_needs_a_pool():
    with pytest.raises(ValueError, match="pool >= 2"):
        ReweightSettings(pool=1, distinct=True)
