"""Matched table rows chunk after chunk: weights fitted once, then carried to fresh pools.

:func:`dpforge.statistics.reweight.matched_index` fits one weight per pool row (Adam, 300
steps on a pool of ``pool`` x n rows) and balances the draw (40 rounds of exchanges). That is
the first chunk's cost, about 7 CPU s for 20,000 rows of the demo's model; paid again for every
chunk it made 10^6 matched rows cost about 300 CPU s. A stream of chunks instead:

- matches its first chunk exactly as before (a sample of up to one chunk is unchanged);
- fits, once, a log-weight per released cell (``theta(row)`` = the sum of its cells' values,
  the same objective as the per-row weights) on at most ``CALIBRATION_ROWS`` of the first
  pool's rows. These carry to any pool of the same generator in closed form;
- draws every later chunk from a fresh pool of ``STREAM_POOL`` x n rows, weighted from the
  cell log-weights and refined per row for ``STREAM_STEPS`` steps, then balanced for
  ``STREAM_ROUNDS`` rounds starting from the excess the chunks before it left, so that all
  the chunks together follow the weighted pools (the balance streams);
- holds one chunk's pool at a time: memory stays bounded however many rows are asked.

Figures (10^6 rows, CPU s, peak memory, TVD; before and after at 10^5):
bench/results/memory/matched_sampling.md and matched_sampling_before.md. Post-processing of
the stored release only.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import torch

from dpforge.statistics.marginals import CellColumn
from dpforge.statistics.pool_cells import PoolCells
from dpforge.statistics.reweight import (
    SPREAD,
    Excess,
    MarginalTargets,
    ReweightSettings,
    drawn_index,
    fit_weights,
    objective,
)

__all__ = ["MatchStream", "fit_cell_weights"]

CALIBRATION_ROWS = 40_000  # first-pool rows the cell log-weights are fitted on
# Adam on the cell log-weights, its step size falling linearly to 0: a row's log-weight sums
# one per marginal, so a constant step keeps it swinging around the L1 optimum.
CELL_LR, CELL_STEPS = 0.1, 300
STREAM_POOL = 2  # pool rows per row for every chunk after the first
# Per-row Adam from the cell log-weights for those chunks, its step size falling linearly to 0
STREAM_STEPS, STREAM_LR = 80, 0.5
STREAM_ROUNDS = 8  # balance rounds for those chunks (most exchanges come in the first rounds)


def fit_cell_weights(targets: MarginalTargets, index: np.ndarray) -> np.ndarray:
    """One log-weight per cell of ``targets`` (``targets.flat``'s cells) such that the pool
    weighted by softmax(sum of each row's cells' log-weights) minimises
    :func:`dpforge.statistics.reweight.objective`; ``index``:
    :meth:`MarginalTargets.cell_index` of the pool. Unlike per-row weights they apply to any
    pool (:func:`cell_log_weights`)."""
    cells = PoolCells(index, targets.flat.size)
    log_weights = torch.zeros(targets.flat.size, dtype=torch.float64)
    opt = torch.optim.Adam([log_weights], lr=CELL_LR)
    for step in range(CELL_STEPS):
        opt.param_groups[0]["lr"] = CELL_LR * (1 - step / CELL_STEPS)
        theta = cells.to_rows @ log_weights.numpy()
        _, grad = objective(theta, cells, targets.flat, SPREAD)
        log_weights.grad = torch.from_numpy(cells.to_cells @ grad)
        opt.step()
    return log_weights.numpy()


def cell_log_weights(log_weights: np.ndarray, index: np.ndarray) -> np.ndarray:
    """Each pool row's log-weight: the sum of its cells' (``index``: cells x rows)."""
    return log_weights[index].sum(axis=0)


class MatchStream:
    """The matching of one sample call, chunk after chunk (see the module docstring). It keeps
    between chunks only the first pool's calibration rows, until the cell log-weights are
    fitted on them, those log-weights, and the balance's excess per cell."""

    def __init__(self, targets: MarginalTargets, settings: ReweightSettings) -> None:
        self.targets, self.settings = targets, settings
        self.chunks = 0
        self._calibration: np.ndarray | None = None
        self._log_weights: np.ndarray | None = None
        self._excess: Excess | None = None

    def pool_rows(self, n: int) -> int:
        """How many rows to generate for the next chunk of ``n`` rows."""
        return n * (
            self.settings.pool if self.chunks == 0 else min(STREAM_POOL, self.settings.pool)
        )

    def chunk_index(
        self, cells: Mapping[str, CellColumn], n: int, rng: np.random.Generator
    ) -> np.ndarray:
        """``n`` indices into the pool whose cells are ``cells`` (drawn :meth:`pool_rows`
        long), in random order."""
        index = self.targets.cell_index(cells)
        first = self.chunks == 0
        self.chunks += 1
        if first:
            self._calibration = index[:, :CALIBRATION_ROWS].copy()
            expected = n * fit_weights(self.targets, index)
            rounds = self.settings.balance
            picks, self._excess = drawn_index(self.targets, cells, index, expected, rounds, rng)
            return picks
        if self._log_weights is None:
            self._log_weights = self._fitted_log_weights()
        start = cell_log_weights(self._log_weights, index)
        expected = n * fit_weights(self.targets, index, start, STREAM_STEPS, STREAM_LR, True)
        rounds = min(self.settings.balance, STREAM_ROUNDS)
        picks, self._excess = drawn_index(
            self.targets, cells, index, expected, rounds, rng, self._excess
        )
        return picks

    def _fitted_log_weights(self) -> np.ndarray:
        calibration, self._calibration = self._calibration, None
        if calibration is None or calibration.shape[0] == 0 or calibration.shape[1] == 0:
            return np.zeros(self.targets.flat.size)
        return fit_cell_weights(self.targets, calibration)
