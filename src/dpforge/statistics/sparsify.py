"""Noisy marginal counts set to 0 where they are likely noise alone (free post-processing).

Gaussian noise puts positive counts on empty cells, and the simplex projection keeps most of
them: a class's row of a label x column marginal keeps mass on cells where that class has no
record. Setting the counts under ``ZERO_BELOW`` noise standard deviations to 0 removes it, but
it also removes the real mass of cells whose counts are small but not 0, so it pays only where
the noise is large against the counts a cell can hold (bench/results/quality_gaps.md, session
35). The rule reads public inputs only: the released N, the label's classes and the noise the
plan fixed for round 1 (so epsilon, delta and the number of marginals), never a count.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from dpforge.statistics.cells import MIN_CELLS
from dpforge.statistics.marginals import MeasuredMarginal

__all__ = ["ZERO_BELOW", "ZERO_SIGNAL", "noise_bound", "sparsified", "zero_below_for"]

# The threshold, in noise standard deviations, of the rule (bench/results/quality_gaps.md:
# 1 barely moves psid at epsilon 3, 2 closes its LR gap).
ZERO_BELOW = 2.0
# The rule sparsifies where one class's records spread over MIN_CELLS cells leave each cell
# fewer than ZERO_SIGNAL noise standard deviations of round 1: where the cells rule
# (cells.cells_for_noise at its default cells_snr 2) wanted fewer cells than it may give.
ZERO_SIGNAL = 2.0


def noise_bound(n_public: float, n_classes: int, std: float) -> bool:
    """Whether the marginals are noise-bound: ``N / (K * MIN_CELLS) < ZERO_SIGNAL * std``
    (``K`` classes, at least 1; ``std`` the noise of one cell of round 1). Public inputs only."""
    if std <= 0:
        return False
    return n_public / (max(1, n_classes) * MIN_CELLS) < ZERO_SIGNAL * std


def zero_below_for(setting: float | None, n_public: float, n_classes: int, std: float) -> float:
    """The threshold a run applies (noise standard deviations; 0: none): ``setting`` when it
    is a number, else (None, the default) ``ZERO_BELOW`` where the marginals are noise-bound
    (:func:`noise_bound`) and 0 elsewhere."""
    if setting is not None:
        return setting
    return ZERO_BELOW if noise_bound(n_public, n_classes, std) else 0.0


def sparsified(
    measured: list[MeasuredMarginal], std: float, zero_below: float
) -> list[MeasuredMarginal]:
    """Noisy counts under ``zero_below`` noise standard deviations (``std``) set to 0: most
    cells of a sparse marginal (numbers heaped on a few points, a class that never takes some
    values, pairs of related columns) are empty, and their positive noise would otherwise
    survive the projection as mass spread where there is none. Every consumer reads the
    counts through their projection to the public N (``MeasuredMarginal.distribution``), so
    the total stays that N."""
    if zero_below <= 0 or std <= 0:
        return measured
    return [
        replace(m, noisy_counts=np.where(m.noisy_counts >= zero_below * std, m.noisy_counts, 0.0))
        for m in measured
    ]
