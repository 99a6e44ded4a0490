"""Free post-processing of noisy counts: the closest distribution to what was measured.

Gaussian noise makes counts negative and spreads mass over empty cells. The Euclidean projection
onto the scaled simplex ``{x >= 0, sum(x) = total}`` makes the counts a distribution with the
public total: it subtracts one common amount from every cell and clips at zero, so the mass
that clipping the negative cells would add is taken back from all cells (small noisy cells go
to zero first) rather than inflating the empty ones. It reads only the noisy counts and public
quantities, so it costs no privacy.
"""

from __future__ import annotations

import numpy as np

__all__ = ["project_to_simplex", "simplex_shift"]


def project_to_simplex(values: np.ndarray, total: float = 1.0) -> np.ndarray:
    """The point of ``{x >= 0, sum(x) = total}`` closest to ``values`` in L2 (Duchi et al. 2008)."""
    shift = simplex_shift(values, total)
    return np.maximum(np.asarray(values, dtype=np.float64) - shift, 0.0)


def simplex_shift(values: np.ndarray, total: float = 1.0) -> float:
    """The amount :func:`project_to_simplex` subtracts from every cell before clipping at 0
    (negative where the positive cells hold less than ``total``)."""
    v = np.asarray(values, dtype=np.float64).ravel()
    if v.size == 0:
        raise ValueError("cannot project an empty vector")
    if not total > 0:
        raise ValueError(f"total must be > 0, got {total}")
    ordered = np.sort(v)[::-1]
    cumulative = np.cumsum(ordered) - total
    ranks = np.arange(1, v.size + 1)
    last = np.nonzero(ordered - cumulative / ranks > 0)[0][-1]
    return float(cumulative[last] / (last + 1))
