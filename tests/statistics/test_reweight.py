"""Matching a pool of rows to released marginals (:mod:`dpforge.statistics.reweight`): the
weights bring the pool's marginals to the targets, the fast concatenated loss equals a loop over
marginals, resampling follows the weights (to a row per stratum along the pool sorted by its
cells), a condition keeps only the label's marginals."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from dpforge.statistics.marginals import CellColumn, MeasuredMarginal
from dpforge.statistics.pool_cells import PoolCells
from dpforge.statistics.reweight import (
    MarginalTargets,
    ReweightSettings,
    fit_weights,
    matched_index,
    objective,
    resample,
    stratified_order,
)


def _marginal(columns, shape, dist) -> MeasuredMarginal:
    total = 1000.0
    counts = np.asarray(dist, dtype=np.float64).ravel() * total
    return MeasuredMarginal(tuple(columns), tuple(shape), counts, total)


def _pool(n: int, rng: np.random.Generator) -> dict[str, CellColumn]:
    """Two independent uniform columns of 3 and 4 cells and a 2-class label."""
    return {
        "a": CellColumn(rng.integers(0, 3, n), 3),
        "b": CellColumn(rng.integers(0, 4, n), 4),
        "y": CellColumn(rng.integers(0, 2, n), 2),
    }


def _distance(targets, index, w) -> float:
    hist = np.bincount(index.reshape(-1), np.tile(w, len(targets)), minlength=targets.flat.size)
    return 0.5 * float(np.abs(hist - targets.flat).sum())


def test_weights_bring_the_pool_to_dependent_targets():
    rng = np.random.default_rng(0)
    cells = _pool(4000, rng)
    joint = np.array([[0.30, 0.05, 0.0, 0.05], [0.0, 0.2, 0.05, 0.0], [0.05, 0.0, 0.1, 0.2]])
    label = np.stack([joint.sum(1) * 0.4, joint.sum(1) * 0.6])  # y x a: a's 1-way as joint's
    targets = MarginalTargets(
        [_marginal(("a", "b"), (3, 4), joint), _marginal(("y", "a"), (2, 3), label)], "y"
    )
    index = targets.cell_index(cells)
    equal = np.full(4000, 1 / 4000)
    w = fit_weights(targets, index)
    assert w.sum() == pytest.approx(1.0)
    assert _distance(targets, index, w) < 0.15 * _distance(targets, index, equal)


def _slow_objective(theta: torch.Tensor, targets, cells, spread: float) -> torch.Tensor:
    """The oracle: each marginal's weighted histogram on its own, autograd for the gradient."""
    w = torch.softmax(theta, 0)
    value = spread * (w * torch.log(w * w.numel())).sum()
    for m in targets.targets:
        parts = [cells[c].index for c in m.columns]
        index = torch.as_tensor(np.ravel_multi_index(parts, m.shape))
        hist = torch.zeros(m.distribution.size, dtype=w.dtype).index_add_(0, index, w)
        value = value + 0.5 * (hist - torch.as_tensor(m.distribution)).abs().sum()
    return value


def test_the_fast_objective_and_gradient_equal_a_loop_over_marginals():
    rng = np.random.default_rng(1)
    cells = _pool(500, rng)
    targets = MarginalTargets(
        [
            _marginal(("a",), (3,), [0.2, 0.3, 0.5]),
            _marginal(("a", "b"), (3, 4), np.full(12, 1 / 12)),
            _marginal(("y", "b"), (2, 4), rng.dirichlet(np.ones(8))),
        ]
    )
    theta = rng.normal(0, 0.5, 500)
    value, grad = objective(
        theta, PoolCells(targets.cell_index(cells), targets.flat.size), targets.flat, 0.03
    )
    slow_theta = torch.tensor(theta, requires_grad=True)
    slow = _slow_objective(slow_theta, targets, cells, 0.03)
    slow.backward()
    assert value == pytest.approx(float(slow.detach()), rel=1e-12)
    assert np.allclose(grad, slow_theta.grad.numpy(), rtol=1e-9, atol=1e-15)


def test_resampling_draws_each_row_about_n_times_its_weight():
    rng = np.random.default_rng(2)
    w = rng.dirichlet(np.full(300, 0.3))
    picks = resample(w, 1000, rng)
    counts = np.bincount(picks, minlength=300)
    assert counts.sum() == 1000
    assert np.all(counts >= np.floor(1000 * w) - 1) and np.all(counts <= np.ceil(1000 * w) + 1)


def test_a_condition_keeps_only_the_label_marginals_given_the_class():
    joint = np.array([[0.1, 0.3], [0.4, 0.2]])  # y x a
    targets = MarginalTargets(
        [_marginal(("a",), (2,), [0.5, 0.5]), _marginal(("y", "a"), (2, 2), joint)], "y", 1
    )
    assert len(targets) == 1
    assert targets.targets[0].columns == ("a",)
    assert np.allclose(targets.flat, [0.4 / 0.6, 0.2 / 0.6])


def test_matched_indices_follow_the_target():
    rng = np.random.default_rng(3)
    cells = {"a": CellColumn(rng.integers(0, 3, 2800), 3)}
    targets = MarginalTargets([_marginal(("a",), (3,), [0.8, 0.1, 0.1])])
    index = matched_index(targets, cells, 700, ReweightSettings(), rng)
    assert len(index) == 700 and index.max() < 2800
    share = np.bincount(cells["a"].index[index], minlength=3) / 700
    assert share[0] == pytest.approx(0.8, abs=0.03)


def _column_errors(cells, picks, weights, n) -> dict[str, float]:
    """Per column, the largest gap (in rows) between the drawn rows' counts and n x the
    weighted pool's share."""
    out = {}
    for name, column in cells.items():
        drawn = np.bincount(column.index[picks], minlength=column.size)
        expected = n * np.bincount(column.index, weights, minlength=column.size) / weights.sum()
        out[name] = float(np.abs(drawn - expected).max())
    return out


def _one_column_targets() -> MarginalTargets:
    uniform = {"a": [1 / 3] * 3, "b": [0.25] * 4, "y": [0.5, 0.5]}
    return MarginalTargets([_marginal((k,), (len(v),), v) for k, v in uniform.items()])


def test_the_draw_along_the_sorted_pool_follows_the_weights_to_a_row_per_stratum():
    """Sorted by y (2 cells), then a (3), then b (4): y's counts are within a row of the
    weights, a's within a row per y stratum (2), b's within one per (y, a) stratum (6); a
    random order misses by the draw's own noise (tens of rows here)."""
    rng = np.random.default_rng(5)
    cells, targets = _pool(16_000, rng), _one_column_targets()
    index, weights = targets.cell_index(cells), rng.dirichlet(np.full(16_000, 2.0))
    order = stratified_order(targets, index, rng)
    assert sorted(order.tolist()) == list(range(16_000))
    errors = _column_errors(cells, order[resample(weights[order], 2000, rng)], weights, 2000)
    assert errors["y"] < 1 and errors["a"] < 2 and errors["b"] < 6
    shuffled = [
        _column_errors(cells, resample(weights, 2000, np.random.default_rng(s)), weights, 2000)
        for s in range(5)
    ]
    assert np.mean([e["y"] for e in shuffled]) > 5


@pytest.mark.parametrize("bad", [{"pool": 0}, {"chunk": 1.5}, {"balance": -1}])
def test_bad_settings_are_refused(bad):
    with pytest.raises(ValueError, match="ReweightSettings"):
        ReweightSettings(**bad)
