"""Each class's row of a label x column marginal projected onto its own total (issue 22).

Round 1 releases every label x column marginal with the same noise, sd a cell. Projecting a
whole table onto the simplex of the public N subtracts one amount from all of its cells, so
each class's row keeps the sum of its own noise, sd x sqrt(cells) records: on psid at epsilon 3
(219 records of the smaller class, 16 cells of sd 12) a row came out with 286 records where the
class has 219, the surplus spread over hours its members never work. A generator fitted to it
learns label relations the data do not have, and the class shares differ from one marginal to
the next.

The classes' totals are released many times over: as a row's sum in every label x column
marginal. Their inverse-variance mean (:func:`class_totals`, each row's summed noise has
variance sd^2 x cells) carries the noise of one row divided by about the square root of the
number of marginals. Clipped at 0 and scaled to the public N, it becomes every row's total
(``MeasuredMarginal.row_totals``), and each row is made a histogram of it
(``marginals.row_onto``): a row whose positive cells hold more loses the surplus from its
smallest cells first (the projection onto its own simplex), one whose cells hold less is scaled
up, so its empty cells stay empty. Reads only the released counts and the public N: free
post-processing, the ledger unchanged.

Off by default (``AnchorConfig.class_totals``): it lifts psid's LR AUC (a class whose members
all share one value, 0 hours) by 0.017 at epsilon 3 and 0.037 at epsilon 1 over 10 seeds, but
costs nmes 0.007 RF AUC and wage 0.008 LR AUC (bench/results/tables/quality_gaps.md, session 36).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from dpforge.statistics.marginals import MeasuredMarginal

__all__ = ["class_totals", "with_class_totals"]


def with_class_totals(
    measured: Sequence[MeasuredMarginal], label_name: str | None
) -> list[MeasuredMarginal]:
    """``measured`` with every marginal led by the label (label x column, and round 2's
    label x a x b) projected row by row onto the classes' totals pooled over the label x
    column marginals, scaled to the public N (module docstring); without a label, as it is."""
    if label_name is None or not any(m.is_label_by(label_name) for m in measured):
        return list(measured)
    totals = np.clip(class_totals(measured, label_name), 0.0, None)
    out = []
    for m in measured:
        if len(m.columns) >= 2 and m.columns[0] == label_name:
            scaled = _scaled(totals, m.total)
            m = replace(m, row_totals=tuple(float(t) for t in scaled))
        out.append(m)
    return out


def class_totals(measured: Sequence[MeasuredMarginal], label_name: str) -> np.ndarray:
    """Each class's released count: its rows' sums over every label x column marginal, each
    weighted by the inverse of its cells (the variance of a row's summed noise)."""
    sums, weights = 0.0, 0.0
    for m in measured:
        if m.is_label_by(label_name):
            rows = np.asarray(m.noisy_counts, dtype=np.float64).reshape(m.shape)
            sums = sums + rows.sum(axis=1) / m.shape[1]
            weights += 1.0 / m.shape[1]
    if not weights:
        raise ValueError(f"no label x column marginal of label {label_name!r} was measured")
    return np.asarray(sums / weights)


def _scaled(totals: np.ndarray, n: float) -> np.ndarray:
    """``totals`` scaled to sum to ``n`` (evenly split where they are all 0)."""
    if totals.sum() <= 0:
        return np.full(totals.shape, n / totals.size)
    return totals * (n / totals.sum())
