"""DP bounds of a numeric column: a coarse noisy histogram on a public geometric grid finds the
range, a fine one inside it the quantiles (:func:`dp_bounds`, with its dp-accounting event
:func:`bounds_event`).
"""

import math
from collections.abc import Sequence

import dp_accounting
import numpy as np

from dpforge.engines.aggregates import (
    ColumnAggregates,
    noise_factor,
    noised_at_source,
)
from dpforge.statistics.bounds_bins import (
    _as_finite_floats,
    _empty_bin_threshold,
    _finite_range,
    _geometric_edges,
    _noisy_histogram,
    _quantile_bins,
)
from dpforge.statistics.dp_noise import (
    DpEstimate,
    _check_noise_multiplier,
    _check_probability,
    _check_rng,
    _check_sensitivity,
    _upper_tail_z,
    _warn_noise,
    histogram_event,
)

FINE_CDF_TOLERANCE = 0.02
MERGE_WIDTHS = (1, 2, 4, 8, 16)  # coarse bins merged when no single one stands out


def dp_bounds(
    values: np.ndarray | Sequence[float],
    noise_multiplier: float,
    rng: np.random.Generator,
    quantile: float = 0.01,
    *,
    bins: int = 64,
    min_exponent: int = -10,
    max_exponent: int = 40,
    spurious_bin_prob: float = 0.01,
    bins_per_octave: int = 1,
    widen_octaves: float = 1.0,
    fine: bool = True,
    grid: np.ndarray | None = None,
    sensitivity: float = 1,
) -> DpEstimate:
    """DP (lower, upper) bounds that hold all but about ``quantile`` of the values in each tail.

    Two discrete Gaussian histograms, each of L2 sensitivity 1, so the event is
    :func:`bounds_event`, two :func:`~dpforge.statistics.dp_noise.histogram_event` (charged in
    full even when the first shows only noise, so the cost never depends on the data):

    1. Coarse: a public, data-independent grid with edges 0, ±2^k for k in
       [min_exponent, max_exponent] and an overflow bin at each end. The bins holding the noisy
       ``quantile`` and ``1 - quantile`` points of the cumulative mass give a coarse range.
    2. Fine: ``bins`` equal-width bins over the coarse range (values outside it go to the end
       bins), its quantile bins located likewise; the result is the lower edge of the lower
       bin and the upper edge of the upper bin, i.e. rounded outwards.

    Reading noisy quantiles. Coarse grid: bins below ``σ·Φ⁻¹(1 - spurious_bin_prob / n_bins)``
    are zeroed first (post-processing, free); by a union bound no empty bin passes that level
    with probability ≥ 1 - spurious_bin_prob. Merely clipping negatives would leave ~0.4σ of
    spurious mass in each of the ~100 empty bins, enough to push the bounds out to ±2^40 for a
    few thousand records; zeroing drops at most a few σ of real records per bin, all in sparse
    bins. Fine grid: the quantiles are read from the raw noisy counts, whose cumulative sum is
    unbiased with noise σ·sqrt(j) after j bins (clipping would add a bias of ~0.4σ per empty bin
    and zeroing would lose every sparse bin of a small data set). The coarse histogram is "pure
    noise" when no bin passes the level above; the fine one when its noisy total is below
    ``σ·sqrt(bins)·Φ⁻¹(1 - spurious_bin_prob)``.

    An overflow bin is read as [2^max_exponent, 2^(max_exponent+1)) (mirrored below), so the
    bounds never exceed ±2^(max_exponent+1); this warns, as the data are clipped there. If the
    coarse histogram is pure noise, that whole range is returned; if only the fine one is, the
    coarse range is; both cases warn with :class:`DpNoiseWarning`. The result always has
    lower < upper.

    Finer public grid, one histogram (``bins_per_octave > 1``, ``fine=False``). The fine stage
    needs about ``N >= 70σ`` records to be read at all (see :func:`_affordable_bins`); below
    that its half of the budget is wasted and the result is the coarse range, whose edges are
    octaves widened by a further octave (seen on 767 daily power curves: [-4, 8] for values
    in [-2.3, 3.3]). With ``fine=False`` the event is ONE histogram's (so the same
    (ε, δ) buys less noise), the grid has ``bins_per_octave`` bins per octave (edges
    2^(j / bins_per_octave)) and the quantile bins are widened by ``widen_octaves`` (rounded to
    whole grid bins, at least one) instead of one octave. This is the setting for array
    channels (:func:`dpforge.statistics.metadata.complete_array_schema`).

    Public coarse grid (``grid``): increasing edges with -inf and +inf at the ends and 0 among
    them, used instead of the geometric one (quantile bins widened by one bin). Date columns
    pass a calendar of month starts (:mod:`dpforge.statistics.time_bounds`): on a grid of
    octaves, dates far from 1970 get a range of many years.

    ``sensitivity`` (k for a person with at most k rows): both histograms get noise std
    σ·k, and every level read from the noise above uses that std; the event is σ's for k rows
    (zCDP when k > 1, or when the sites add the noise: :func:`bounds_event`).
    """
    sigma = _check_noise_multiplier(noise_multiplier)
    rows = _check_sensitivity(sensitivity)
    std = sigma * rows
    _check_rng(rng)
    if not 0.0 <= quantile < 0.5:
        raise ValueError(f"quantile must be in [0, 0.5), got {quantile}")
    if bins < 1:
        raise ValueError(f"bins must be >= 1, got {bins}")
    spurious_bin_prob = _check_probability("spurious_bin_prob", spurious_bin_prob)
    if not (math.isfinite(widen_octaves) and widen_octaves > 0):
        raise ValueError(f"widen_octaves must be a finite number > 0, got {widen_octaves}")
    array = values if isinstance(values, ColumnAggregates) else _as_finite_floats(values)
    event = bounds_event(sigma, fine, rows, noised_at_source(array))
    limit = 2.0 ** (max_exponent + 1)  # overflow bins read as [2^max, 2^(max+1)), mirrored

    coarse_edges = _geometric_edges(min_exponent, max_exponent, bins_per_octave)
    widen = max(1, round(widen_octaves * bins_per_octave))
    if grid is not None:  # a public grid of the caller's (a calendar), widened by one bin
        coarse_edges, widen = _checked_grid(grid), 1
    coarse = _coarse_range(array, coarse_edges, std, rng, quantile, spurious_bin_prob, widen)
    if coarse is None:
        _warn_noise("the coarse histogram", f"the whole public grid ±{limit:g}")
        return DpEstimate((-limit, limit), event)
    (low, high), coarse_total = _finite_range(*coarse[0], limit), coarse[1]
    fine_bins = _affordable_bins(coarse_total, std * noise_factor(array), bins) if fine else 0
    if fine_bins < 2:
        return DpEstimate((float(low), float(high)), event)
    fine_edges = np.linspace(low, high, fine_bins + 1)
    fine = _fine_range(array, fine_edges, std, rng, quantile, spurious_bin_prob)
    if fine is None:
        _warn_noise("the fine histogram", f"the coarse range [{low:g}, {high:g}]")
        return DpEstimate((float(low), float(high)), event)
    return DpEstimate((float(fine[0]), float(fine[1])), event)


def _checked_grid(grid: np.ndarray) -> np.ndarray:
    """A caller's coarse grid: increasing, open at both ends, with 0 as an edge."""
    edges = np.asarray(grid, dtype=np.float64)
    if (
        edges.ndim != 1
        or edges.size < 4
        or not (np.isneginf(edges[0]) and np.isposinf(edges[-1]))
        or np.any(np.diff(edges) <= 0)
        or not np.any(edges == 0.0)
    ):
        raise ValueError("grid must increase from -inf to +inf and hold 0 as an edge")
    return edges


def bounds_event(
    noise_multiplier: float, fine: bool = True, rows: float = 1, at_source: bool = False
) -> dp_accounting.DpEvent:
    """The event of :func:`dp_bounds`: two histograms (:func:`histogram_event` of σ for
    ``rows`` per person, noised at the sites or not), or one when ``fine=False``."""
    one = histogram_event(noise_multiplier, rows, at_source)
    return dp_accounting.ComposedDpEvent([one, one]) if fine else one


def _affordable_bins(noisy_total: float, sigma: float, max_bins: int) -> int:
    """How many fine bins the noise allows: the noisy cumulative count after j bins errs by
    about σ·sqrt(j); keep that below FINE_CDF_TOLERANCE of the (noisy) number of records, so
    that quantiles read from it are not pulled inwards by noise. Post-processing: free."""
    if sigma == 0:
        return max_bins
    affordable = (FINE_CDF_TOLERANCE * max(noisy_total, 0.0) / sigma) ** 2
    return int(min(max_bins, affordable))


def _coarse_range(
    values: np.ndarray,
    edges: np.ndarray,
    sigma: float,
    rng: np.random.Generator,
    quantile: float,
    spurious_bin_prob: float,
    widen: int = 1,
) -> tuple[tuple[float, float], float] | None:
    """Outer edges of the coarse quantile bins, read after zeroing the bins that noise explains,
    widened by ``widen`` groups of bins, and the noisy total count of the bins kept.

    When no single bin stands out (few records spread over many octaves), groups of 2, 4, 8,
    16 adjacent bins are tried: summing noisy counts is post-processing (free), the signal
    grows with the group and the noise only with its square root. None when even that fails.
    """
    noisy = _noisy_histogram(values, edges, sigma, rng)
    sigma = sigma * noise_factor(values)  # the noise the counts carry (sum of site noises)
    for width in MERGE_WIDTHS:
        group = np.arange(len(noisy)) // width
        merged = np.bincount(group, weights=noisy)
        level = math.sqrt(width) * _empty_bin_threshold(sigma, len(merged), spurious_bin_prob)
        signal = (merged > level)[group]
        if signal.any():
            kept = np.where(signal, noisy, 0.0)
            if kept.sum() <= 0:
                continue
            low, high = _quantile_bins(kept, quantile)
            return _widened(edges, low, high, widen * width), float(kept.sum())
    return None


def _widened(edges: np.ndarray, low: int, high: int, step: int = 1) -> tuple[float, float]:
    """The coarse range, ``step`` grid bins wider on each side, snapped to 0 when 0 is near.

    Zeroing the sparse bins drops the records of every sparse bin, which pulls the quantiles
    inwards on small data sets (seen: 2/3 of a column outside the range); one extra group of
    ``step`` geometric bins on each side (never across 0) compensates at the price of some
    resolution.
    When the range lies on one side of 0 and its inner edge is within an eighth of its outer
    edge, 0 is the inner edge: values spread over many octaves near 0 are then kept as well.
    """
    n_bins = len(edges) - 1
    zero = int(np.flatnonzero(edges == 0.0)[0])
    floor_index = zero if edges[low] > 0.0 else 0  # never widen across 0
    ceiling_index = zero if edges[high + 1] < 0.0 else n_bins
    lower = 0.0 if edges[low] == 0.0 else float(edges[max(low - step, floor_index)])
    upper = 0.0 if edges[high + 1] == 0.0 else float(edges[min(high + 1 + step, ceiling_index)])
    if 0.0 < lower <= upper / 8.0:
        lower = 0.0
    elif lower / 8.0 <= upper < 0.0:
        upper = 0.0
    return lower, upper


def _fine_range(
    values: np.ndarray,
    edges: np.ndarray,
    sigma: float,
    rng: np.random.Generator,
    quantile: float,
    spurious_bin_prob: float,
) -> tuple[float, float] | None:
    """Outer edges of the fine quantile bins, read from the raw (unclipped) noisy counts.

    None when the noisy total does not stand out from its noise, σ·sqrt(n_bins).
    """
    noisy = _noisy_histogram(values, edges, sigma, rng)
    sigma = sigma * noise_factor(values)  # the noise the counts carry (sum of site noises)
    total = noisy.sum()
    if total <= sigma * math.sqrt(len(noisy)) * _upper_tail_z(spurious_bin_prob) or total <= 0:
        return None
    low, high = _quantile_bins(noisy, quantile)
    return float(edges[low]), float(edges[high + 1])
