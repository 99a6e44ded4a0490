"""Matching without repeats: inclusion probabilities fitted to the marginals, then a sample.

:mod:`dpforge.statistics.reweight` weights a pool and resamples it with replacement, so a pool
row the weights favour is drawn several times. Here each pool row gets an inclusion
probability ``pi_i`` in (0, 1) with ``sum(pi) = n`` instead, and ``n`` distinct rows are drawn
with exactly those probabilities (systematic sampling along an order of the pool, Madow 1949). The
sample's expected histogram on every marginal is then the ``pi``-weighted pool's, and no row
is taken twice.

``pi_i = sigmoid(theta_i - b(theta))``, with ``b`` the shift that makes the probabilities sum
to ``n`` (found by safeguarded Newton steps). The objective is the sum of the marginals' TVDs
between the ``pi / n``-weighted pool and their targets; its gradient in ``theta`` through the
shift is ``s * (g - (s . g) / sum(s))`` with ``s = pi * (1 - pi)`` and ``g`` the gradient in
``pi``. Adam on ``theta``, from equal probabilities. Post-processing of the release, like the
weights.
"""

from __future__ import annotations

import numpy as np
import torch

from dpforge.statistics.pool_cells import PoolCells

__all__ = ["fit_inclusion", "inclusion_objective", "distinct_sample"]


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * x))


def shift_for(theta: np.ndarray, n: int, start: float) -> float:
    """The ``b`` with ``sum(sigmoid(theta - b)) = n`` (0 < n < len(theta)): Newton steps from
    ``start``, bisection where a step leaves the bracket."""
    lo, hi = float(theta.min()) - 50.0, float(theta.max()) + 50.0
    b = min(max(start, lo), hi)
    for _ in range(100):
        pi = _sigmoid(theta - b)
        excess = float(pi.sum()) - n
        if abs(excess) <= 1e-9 * n:
            break
        lo, hi = (b, hi) if excess > 0 else (lo, b)  # the sum falls as b grows
        slope = float((pi * (1.0 - pi)).sum())
        step = b + excess / slope if slope > 0 else np.inf
        b = step if lo < step < hi else 0.5 * (lo + hi)
    return b


def inclusion_objective(
    theta: np.ndarray, b: float, cells: PoolCells, target: np.ndarray, n: int
) -> tuple[float, np.ndarray]:
    """The value and gradient in ``theta`` (with ``b`` = :func:`shift_for`) of the summed TVDs
    between the pool weighted by ``pi / n`` and the targets."""
    pi = _sigmoid(theta - b)
    diff = cells.to_cells @ (pi / n) - target
    g = 0.5 * (cells.to_rows @ np.sign(diff)) / n
    s = pi * (1.0 - pi)
    return 0.5 * float(np.abs(diff).sum()), s * (g - (s @ g) / s.sum())


def fit_inclusion(target: np.ndarray, cells: PoolCells, n: int, settings) -> np.ndarray:
    """Inclusion probabilities (each in (0, 1), summing to ``n``) of the pool's rows that
    minimise :func:`inclusion_objective`: ``settings.steps`` Adam steps at ``settings.lr``.
    ``target``: the concatenated target distributions (``MarginalTargets.flat``)."""
    size = cells.to_rows.shape[0]
    if not 0 < n < size:
        raise ValueError(f"a pool of {size} rows cannot give {n} distinct rows")
    theta = torch.zeros(size, dtype=torch.float64)
    opt = torch.optim.Adam([theta], lr=settings.lr)
    b = shift_for(theta.numpy(), n, 0.0)
    for _ in range(settings.steps):
        _, grad = inclusion_objective(theta.numpy(), b, cells, target, n)
        theta.grad = torch.from_numpy(grad)
        opt.step()
        b = shift_for(theta.numpy(), n, b)
    return _sigmoid(theta.numpy() - b)


def distinct_sample(pi: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Distinct row indices, row i included with probability ``pi[i]`` (each at most 1, summing
    to a whole number n): systematic sampling along the rows' order as given, so exactly n
    rows (the caller orders them: at random for Madow's sampling, or sorted by their cells)."""
    edges = np.concatenate([[0.0], np.cumsum(pi)])
    n = int(round(edges[-1]))
    points = np.minimum(rng.uniform() + np.arange(n), edges[-1] * (1 - 1e-12))
    picks = np.searchsorted(edges, points, side="right") - 1
    return np.clip(picks, 0, len(pi) - 1)
