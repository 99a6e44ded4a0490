"""Class tails trimmed to what stands out from the noise (issue 22, nmes; free post-processing).

A label x numeric column marginal of a small class has few records a cell; its empty tail
cells keep positive noise through the simplex projection, and the generator puts that class's
values where it has none (nmes: 2.9 % of the smaller class's income at 30-60, real 0 %). Here,
in each class's row of such a marginal, the cells outside the first and the last cell whose
noisy count stands ``z`` noise standard deviations above 0 are set to 0. Reads only the
released counts and their public noise std; a row where no cell stands out is left as it is.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import replace

import numpy as np

from dpforge.statistics.marginals import MeasuredMarginal

__all__ = ["trimmed_tails"]


def trimmed_tails(
    measured: Sequence[MeasuredMarginal],
    label_name: str | None,
    numeric: Collection[str],
    std: float,
    z: float,
) -> list[MeasuredMarginal]:
    """``measured`` with each class's tails of every label x numeric marginal trimmed."""
    if z <= 0 or std <= 0 or label_name is None:
        return list(measured)
    out = []
    for m in measured:
        if m.is_label_by(label_name, numeric):
            rows = np.asarray(m.noisy_counts, dtype=np.float64).reshape(m.shape)
            m = replace(m, noisy_counts=np.stack([_trim(r, z * std) for r in rows]).ravel())
        out.append(m)
    return out


def _trim(row: np.ndarray, threshold: float) -> np.ndarray:
    standing = np.flatnonzero(row >= threshold)
    if standing.size == 0:
        return row
    kept = np.zeros_like(row)
    kept[standing[0] : standing[-1] + 1] = row[standing[0] : standing[-1] + 1]
    return kept
