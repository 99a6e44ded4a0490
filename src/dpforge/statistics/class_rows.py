"""Each class's row of a label x numeric marginal pooled to what its records carry (issue 22).

Round 1 gives every cell of a label x column marginal the same noise, and the number of
numeric cells is sized for N / K records a class (:func:`.cells.cells_for_noise`). A small
class's row then holds fewer records a cell than the noise it carries (nmes at epsilon 1: 640
records of the smaller class on 11-21 cells, noise sd 34 a cell), its empty cells keep their
positive noise through the projection, and the generator learns class relations that are not
there (bench/results/tables/quality_gaps.md, "Session 35: nmes's LR gap").

Here, in each class's row whose records over its cells stand under ``z`` noise sd a cell (``n
< z * sd * C``), a cell whose noisy count stands ``ALONE * z`` sd above 0 on its own keeps its
count (a class's records heaped on one value, such as psid's non-participants at 0 hours, are
a relation the release carries well: pooling whole rows took every label relation out of psid
at epsilon 1, and keeping every cell above ``z`` sd lost nmes's gain). The other cells, with
the records left (``n'`` on ``C'`` cells), are pooled into ``P = floor((n' / (z sd))^2 / C')``
runs of adjacent cells of about equal mass of the column's own distribution, so that each
pool's expected count (n' / P) stands ``z`` sd of its summed noise (sd * sqrt(C' / P)) above
0; each pool's summed noisy count is then spread over its cells in proportion to the column's
distribution (its 1-way marginal, measured on all N records). Rows with enough records, a
nullable column's "missing" cell and every other marginal are left as they are; each row
keeps its released total. Reads only the released counts, the classes' released totals (the
rows' sums) and the public noise sd: free post-processing.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace

import numpy as np

from dpforge.statistics.marginals import MeasuredMarginal
from dpforge.statistics.row_totals import class_totals

__all__ = ["pooled_class_rows", "pooled_row"]

# A cell keeps its own count when it stands ALONE * z noise sd above 0 (trials on nmes and
# psid at epsilon 1, bench/results/tables/quality_gaps.md, "Session 35: per-class rows").
ALONE = 2.0


def pooled_class_rows(
    measured: Sequence[MeasuredMarginal],
    label_name: str | None,
    numeric: Mapping[str, bool],
    std: float,
    z: float,
) -> list[MeasuredMarginal]:
    """``measured`` with the label x numeric marginals' class rows pooled (module docstring).
    ``numeric``: each numeric column's name and whether it is nullable (a last, "missing"
    cell that is never pooled); ``std``: the noise sd of each cell of the release."""
    if z <= 0 or std <= 0 or label_name is None:
        return list(measured)
    totals = class_totals(measured, label_name)
    out = []
    for m in measured:
        if m.is_label_by(label_name, numeric):
            shape = _column_shape(measured, m)
            present = m.shape[1] - int(numeric[m.columns[1]])
            rows = np.array(m.noisy_counts, dtype=np.float64).reshape(m.shape)
            for k, row in enumerate(rows):
                row[:present] = pooled_row(row[:present], totals[k], shape[:present], std, z)
            m = replace(m, noisy_counts=rows.ravel())
        out.append(m)
    return out


def pooled_row(row: np.ndarray, n: float, shape: np.ndarray, std: float, z: float) -> np.ndarray:
    """One class's noisy row pooled for ``n`` records (module docstring); ``shape``: the
    column's distribution on the same cells. Unchanged when ``n >= z * std * len(row)``, or
    when the cells that do not stand out on their own hold enough of the records left."""
    cells = row.size
    if n >= z * std * cells:
        return row
    alone = row >= ALONE * z * std  # a cell that stands out on its own keeps its count
    rest, others = max(n - float(row[alone].sum()), 0.0), int((~alone).sum())
    if others == 0 or rest >= z * std * others:
        return row
    pools = _pools(
        np.where(alone, 0.0, shape), max(1, math.floor((rest / (z * std)) ** 2 / others))
    )
    pools = np.where(alone, pools.max() + 1 + np.cumsum(alone), pools)
    pools = np.unique(pools, return_inverse=True)[1].astype(np.int64)
    count = pools.max() + 1
    weight = np.where(shape > 0, shape, 0.0) if shape.sum() > 0 else np.ones(cells)
    mass = np.bincount(pools, weight, count)
    weight = np.where(mass[pools] > 0, weight, 1.0)  # a pool the column has no mass in: even
    mass = np.bincount(pools, weight, count)
    sums = np.bincount(pools, row, count)
    return sums[pools] * weight / mass[pools]


def _pools(shape: np.ndarray, n_pools: int) -> np.ndarray:
    """Each cell's pool: ``n_pools`` runs of adjacent cells of about equal mass of ``shape``
    (a cell goes to the pool its middle falls in), numbered 0.. without gaps."""
    weight = np.clip(np.asarray(shape, dtype=np.float64), 0.0, None)
    if weight.sum() <= 0:
        weight = np.ones_like(weight)
    share = weight / weight.sum()
    middle = np.cumsum(share) - share / 2
    index = np.minimum((middle * n_pools).astype(np.int64), n_pools - 1)
    return np.unique(index, return_inverse=True)[1].astype(np.int64)


def _column_shape(measured: Sequence[MeasuredMarginal], m: MeasuredMarginal) -> np.ndarray:
    """The column's distribution on ``m``'s cells: its 1-way marginal when measured, else
    ``m`` summed over the label (both projected)."""
    column = m.columns[1]
    for other in measured:
        if other.columns == (column,) and other.shape == (m.shape[1],):
            return other.distribution()
    return m.distribution().sum(axis=0)
