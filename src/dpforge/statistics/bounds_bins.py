"""The public bins of the DP bounds estimator (:mod:`dpforge.statistics.bounds_estimate`): the
geometric grid, (noisy) histograms over it, the bins holding a quantile, and the checks of the
values read.
"""

import math
import warnings
from collections.abc import Sequence

import numpy as np

from dpforge.engines.aggregates import (
    ColumnAggregates,
    EdgeCells,
    NoisyColumn,
)
from dpforge.errors import DataError
from dpforge.statistics.dp_noise import DpNoiseWarning, _upper_tail_z, gaussian_histogram

# --------------------------------------------------------------------------- bounds


def _geometric_edges(min_exponent: int, max_exponent: int, per_octave: int = 1) -> np.ndarray:
    """Public grid: -inf, -2^max, ..., -2^min, 0, 2^min, ..., 2^max, +inf (bins [a, b)), with
    ``per_octave`` bins in every octave (edges 2^(j / per_octave))."""
    if min_exponent >= max_exponent:
        raise ValueError(f"min_exponent ({min_exponent}) must be < max_exponent ({max_exponent})")
    if per_octave < 1:
        raise ValueError(f"bins_per_octave must be >= 1, got {per_octave}")
    steps = np.arange(min_exponent * per_octave, max_exponent * per_octave + 1)
    powers = 2.0 ** (steps / per_octave)
    return np.concatenate([[-np.inf], -powers[::-1], [0.0], powers, [np.inf]])


def _histogram(values: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Counts of ``values`` in bins [edges[i], edges[i+1]); outside values go to the end bins.

    Every record lands in exactly one bin, so one record changes one count by 1. Records kept
    by an engine (:class:`ColumnAggregates`) are counted there, on the same bins.
    """
    n_bins = len(edges) - 1
    if isinstance(values, ColumnAggregates):
        return values.bincount(EdgeCells(tuple(edges)), n_bins)
    return np.bincount(_bin_index(values, edges), minlength=n_bins).astype(float)


def _noisy_histogram(values, edges: np.ndarray, sigma: float, rng: np.random.Generator):
    """:func:`_histogram` with N(0, σ²) per bin: added here, or where the records are when
    their engine adds it there (:class:`NoisyColumn`, federated sites)."""
    if isinstance(values, NoisyColumn):
        return values.noisy_bincount(EdgeCells(tuple(edges)), len(edges) - 1, sigma)
    return gaussian_histogram(_histogram(values, edges), sigma, rng)


def _bin_index(values: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """The bin of each value in :func:`_histogram` (a public function of the value)."""
    index = np.searchsorted(edges, np.asarray(values, dtype=float), side="right") - 1
    return np.clip(index, 0, len(edges) - 2)


def _quantile_bins(mass: np.ndarray, quantile: float) -> tuple[int, int]:
    """First bins where the cumulative ``mass`` passes ``quantile`` and ``1 - quantile`` of it.

    ``mass`` must have a positive total; it may hold negative (noisy) entries.
    """
    cumulative = np.cumsum(mass)
    total = cumulative[-1]
    low = int(np.argmax(cumulative > quantile * total))
    high = int(np.argmax(cumulative >= (1.0 - quantile) * total))
    return low, high


def _empty_bin_threshold(sigma: float, n_bins: int, spurious_bin_prob: float) -> float:
    """Threshold that no empty bin of ``n_bins`` exceeds with probability ≥ 1 - p (union bound)."""
    return sigma * _upper_tail_z(spurious_bin_prob / n_bins)


def _finite_range(low: float, high: float, limit: float) -> tuple[float, float]:
    """Replace the infinite outer edges of the overflow bins by ±limit, warning about clipping."""
    if math.isinf(low) or math.isinf(high):
        warnings.warn(
            f"dp_bounds: the noisy quantiles fall beyond ±{limit / 2:g}, the end of the public "
            f"grid; the bounds are clipped at ±{limit:g} (raise max_exponent or declare the "
            "bounds public)",
            DpNoiseWarning,
            stacklevel=3,
        )
    return max(low, -limit), min(high, limit)


def _as_finite_floats(values: np.ndarray | Sequence[float]) -> np.ndarray:
    """1-D float array, refusing missing or infinite values (reject them before DP)."""
    try:
        array = np.asarray(values, dtype=float)
    except (TypeError, ValueError) as err:
        raise DataError(f"dp_bounds needs numeric values: {err}") from err
    if array.ndim != 1:
        raise DataError(f"dp_bounds needs a 1-D array, got shape {array.shape}")
    if not np.isfinite(array).all():
        raise DataError("dp_bounds got NaN or infinite values; reject or impute them first")
    return array
