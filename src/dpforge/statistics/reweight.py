"""Rows that match the released marginals: draw a pool, weight it, resample (post-processing).

A table's generator is fitted to the measured marginals through the anchor's loss, but a finite
network leaves a gap: near-deterministic pairs (education x education-num) and the pairs its
smooth heads cannot bend to are the worst. At sample time dpforge therefore draws ``pool`` times
as many rows as asked, gives each a weight so that the weighted pool's histogram on every
released marginal is as close to it as the pool allows (the sum of their total-variation
distances, the anchor's L1 loss, plus ``spread`` times the KL divergence from equal weights,
which keeps the weights from piling on a few rows), and draws the rows asked for from the
weighted pool by systematic resampling (each pool row about ``n * weight`` times). The pool is
first sorted by its cells on the one-column marginals, fewest cells first (implicit
stratification, as survey samplers order their frames): in random order the draw of n rows
from 8n would add multinomial noise to every marginal (about 0.006 of a 2-cell column's share
at n = 5,900, more than the release's own noise there), while in sorted order the first
column's counts follow the weights to within one row and every later column's to within one
row per stratum of those before it. The drawn rows are then exchanged for undrawn ones until
their counts on every column and pair of columns follow the weighted pool
(:mod:`dpforge.statistics.balance`).

It reads only the stored release (the noisy counts the ledger records, projected to the
simplex as the anchor reads them) and generated rows: post-processing, free of privacy cost.
With a condition on the label only the marginals that hold the label are used, each as its
distribution given that class.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from dpforge.statistics.balance import balance_cells, balance_marginals, balanced_counts
from dpforge.statistics.marginals import CellColumn, MeasuredMarginal
from dpforge.statistics.pool_cells import PoolCells

__all__ = [
    "ReweightSettings", "MarginalTargets", "objective", "fit_weights", "resample",
    "matched_index", "drawn_index", "stratified_order",
]  # fmt: skip


# Adam on the pool rows' log-weights: its step size and steps, and the weight of the KL
# divergence of the weights from equal weights (bench/results/tables/matching.md).
REWEIGHT_LR = 0.05
REWEIGHT_STEPS = 300
SPREAD = 0.01

# The balanced marginals (column tuples) and the drawn rows' excess over the expected counts
# on their cells, carried from one chunk of a stream to the next.
Excess = tuple[tuple[tuple[str, ...], ...], np.ndarray]


@dataclass(frozen=True)
class ReweightSettings:
    """How sampled table rows are matched to the released marginals (public settings).

    pool: rows drawn per row returned.
    chunk: rows returned per matched chunk; each chunk matches the release on its own, so
        memory stays bounded (pool x chunk rows and their cells per marginal).
    balance: rounds of exchanges of drawn rows for undrawn ones that bring the drawn rows'
        counts on every column and pair of columns to the weighted pool's
        (:mod:`dpforge.statistics.balance`); 0 keeps the systematic draw as it is.
    """

    pool: int = 8
    chunk: int = 20_000
    balance: int = 40

    def __post_init__(self) -> None:
        for name in ("pool", "chunk"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(
                    f"ReweightSettings.{name} must be a whole number >= 1, got {value!r}"
                )
        if isinstance(self.balance, bool) or not isinstance(self.balance, int) or self.balance < 0:
            raise ValueError(
                f"ReweightSettings.balance must be a whole number >= 0, got {self.balance!r}"
            )


@dataclass(frozen=True)
class _Target:
    columns: tuple[str, ...]
    shape: tuple[int, ...]
    distribution: np.ndarray  # flat, sums to 1


class MarginalTargets:
    """The released marginals as target distributions, optionally given one label class."""

    def __init__(
        self,
        marginals: Sequence[MeasuredMarginal],
        label_name: str | None = None,
        label_class: int | None = None,
    ) -> None:
        targets = [_target(m, label_name, label_class) for m in marginals]
        self.targets = [t for t in targets if t is not None]
        sizes = [t.distribution.size for t in self.targets]
        self.offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        self.flat = np.concatenate([t.distribution for t in self.targets]) if sizes else np.zeros(0)

    def __len__(self) -> int:
        return len(self.targets)

    def cell_index(self, cells: Mapping[str, CellColumn]) -> np.ndarray:
        """(marginals, rows): each row's cell in the concatenated targets."""
        out = [self.offsets[i] + _flat_cells(t, cells) for i, t in enumerate(self.targets)]
        return np.stack(out) if out else np.zeros((0, 0), dtype=np.int64)


def _target(m: MeasuredMarginal, label_name: str | None, label_class: int | None) -> _Target | None:
    """``m``'s projected distribution; given ``label_class``, its slice for that class (None
    when ``m`` does not hold the label or the class has no mass in it)."""
    dist = m.distribution()
    if label_class is None:
        return _Target(m.columns, m.shape, dist.ravel())
    if label_name not in m.columns:
        return None
    at = m.columns.index(label_name)
    part = np.take(dist, label_class, axis=at)
    if part.sum() <= 0:
        return None
    keep = [i for i in range(len(m.columns)) if i != at]
    return _Target(
        tuple(m.columns[i] for i in keep), tuple(m.shape[i] for i in keep),
        (part / part.sum()).ravel(),
    )  # fmt: skip


def _flat_cells(target: _Target, cells: Mapping[str, CellColumn]) -> np.ndarray:
    """Each row's flat cell of ``target``."""
    parts = [cells[name].index for name in target.columns]
    if not target.columns:
        return np.zeros(len(next(iter(cells.values())).index), dtype=np.int64)
    return np.ravel_multi_index(parts, target.shape).astype(np.int64)


def objective(
    theta: np.ndarray, cells: PoolCells, target: np.ndarray, spread: float
) -> tuple[float, np.ndarray]:
    """The value and the gradient in ``theta`` (log-weights) of the sum of the marginals' TVDs
    between the pool weighted by softmax(theta) and the targets, plus ``spread`` x KL(weights
    || equal weights). The gradient is written out (two sparse products) because autograd's
    scatter and gather are 4-5 times slower here; the tests check it against autograd."""
    w = np.exp(theta - theta.max())
    w /= w.sum()
    log_ratio = np.log(np.maximum(w * w.size, 1e-300))
    diff = cells.to_cells @ w - target
    value = 0.5 * float(np.abs(diff).sum()) + spread * float(w @ log_ratio)
    grad_w = 0.5 * (cells.to_rows @ np.sign(diff)) + spread * (log_ratio + 1.0)
    return value, w * (grad_w - w @ grad_w)


def fit_weights(
    targets: MarginalTargets,
    index: np.ndarray,
    start: np.ndarray | None = None,
    steps: int = REWEIGHT_STEPS,
    lr: float = REWEIGHT_LR,
    falling: bool = False,
) -> np.ndarray:
    """Weights (summing to 1) of the pool's rows that minimise :func:`objective`, by ``steps``
    of Adam (step size ``lr``, falling linearly to 0 if ``falling``) on the log-weights from
    ``start`` (equal weights when None). ``index`` is :meth:`MarginalTargets.cell_index` of
    the pool."""
    n_marginals, size = index.shape
    if n_marginals == 0 or size == 0:
        return np.full(size, 1.0 / max(size, 1))
    cells = PoolCells(index, targets.flat.size)
    theta = torch.zeros(size, dtype=torch.float64) if start is None else torch.tensor(start)
    opt = torch.optim.Adam([theta], lr=lr)
    for step in range(steps):
        if falling:
            opt.param_groups[0]["lr"] = lr * (1 - step / steps)
        _, grad = objective(theta.numpy(), cells, targets.flat, SPREAD)
        theta.grad = torch.from_numpy(grad)
        opt.step()
    w = np.exp(theta.numpy() - theta.numpy().max())
    return w / w.sum()


def resample(weights: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` row indices drawn with replacement, row i about ``n * weights[i]`` times
    (systematic resampling: one uniform draw, so the counts are the floor or the ceiling)."""
    edges = np.cumsum(weights / weights.sum())
    picks = np.searchsorted(edges, (rng.uniform() + np.arange(n)) / n, side="right")
    return np.minimum(picks, len(weights) - 1)


def stratified_order(
    targets: MarginalTargets, index: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """The pool's rows in random order, then stably sorted by their cells on every one-column
    target, the one with the fewest cells first (ties by position), so that a systematic draw
    along it spreads over each column's cells as the weights do. ``index``:
    :meth:`MarginalTargets.cell_index` of the pool. Public: it reads only cells and targets'
    sizes."""
    order = rng.permutation(index.shape[1])
    single = [i for i, t in enumerate(targets.targets) if len(t.columns) == 1]
    if not single:
        return order
    keys = sorted(single, key=lambda i: (targets.targets[i].distribution.size, i))
    # np.lexsort sorts by its last key first
    return order[np.lexsort([index[i, order] for i in reversed(keys)])]


def matched_index(
    targets: MarginalTargets,
    cells: Mapping[str, CellColumn],
    n: int,
    settings: ReweightSettings,
    rng: np.random.Generator,
) -> np.ndarray:
    """``n`` indices into a pool whose cells are ``cells``: weights fitted to ``targets``
    (:func:`fit_weights`), rows drawn by them systematically along the pool sorted by its
    cells (:func:`stratified_order`, :func:`resample`), returned in random order."""
    index = targets.cell_index(cells)
    expected = n * fit_weights(targets, index)
    return drawn_index(targets, cells, index, expected, settings.balance, rng)[0]


def drawn_index(
    targets: MarginalTargets,
    cells: Mapping[str, CellColumn],
    index: np.ndarray,
    expected: np.ndarray,
    rounds: int,
    rng: np.random.Generator,
    carried: Excess | None = None,
) -> tuple[np.ndarray, Excess | None]:
    """``expected.sum()`` indices drawn systematically along the pool sorted by its cells
    (:func:`stratified_order`, :func:`resample`; ``expected``: each row's expected draws),
    balanced by ``rounds`` of exchanges (:mod:`dpforge.statistics.balance`; from the
    ``carried`` excess of earlier chunks when it is on the same marginals), in random order;
    and the drawn rows' excess over ``expected`` per balanced cell (None without balancing)."""
    n = int(round(expected.sum()))
    order = stratified_order(targets, index, rng)
    picks = order[resample(expected[order], n, rng)]
    if not rounds:
        return rng.permutation(picks), None
    counts = np.bincount(picks, minlength=index.shape[1])
    stored = [t.columns for t in targets.targets]
    marginals = tuple(balance_marginals(list(cells), stored, index.shape[1]))
    pairs, size = balance_cells(cells, marginals)
    start = carried[1] if carried is not None and carried[0] == marginals else None
    counts, excess = balanced_counts(pairs, size, expected, counts, rounds, start)
    picks = np.repeat(np.arange(index.shape[1]), counts)
    excess = (marginals, excess)
    return rng.permutation(picks), excess
