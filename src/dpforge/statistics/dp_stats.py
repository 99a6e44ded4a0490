"""Differentially private estimates of data-dependent metadata.

Column bounds, category lists and the label prior are read from private records, so (design
rule 2) they are either declared public in the schema or estimated here with a DP mechanism
whose cost goes into the run's privacy ledger. Every estimator is a pure function over arrays
that returns a :class:`DpEstimate`: the estimate together with the exact ``dp_accounting``
event describing the mechanism, plus any δ paid outside that event (thresholding).

Neighbouring data sets differ by adding or removing one record, as for the Poisson-subsampled
Gaussian used in training. Every mechanism here is a histogram in which one record changes one
bin by 1 (L2 sensitivity 1) with N(0, σ²) noise per bin, so one histogram is exactly
``GaussianDpEvent(σ)``. Noise comes only from the ``numpy.random.Generator`` passed in. Like
the rest of the DP-ML ecosystem, the analysis assumes ideal real-valued Gaussian noise; numpy's
floating-point sampler only approximates it (see Mironov 2012 on floating-point attacks).

Several rows per person (:mod:`dpforge.privacy.person`): once each person keeps at most ``k``
rows, one person changes a histogram by at most ``k`` in L2 (all rows in one bin). Every
estimator takes that ``sensitivity`` and adds ``sensitivity`` times the noise, keeping its event:
``GaussianDpEvent(σ)`` is the Gaussian mechanism of noise std σ·sensitivity.

Calling with ``noise_multiplier=0`` is the non-private baseline: the event is
``GaussianDpEvent(0)``, for which the accountant reports ε = ∞.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist

import dp_accounting
import numpy as np
import pandas as pd
from dp_accounting import mechanism_calibration
from dp_accounting.pld import pld_privacy_accountant

from dpforge.engines.aggregates import (
    ColumnAggregates,
    EdgeCells,
    ListedCells,
    NoisyColumn,
    noise_factor,
)
from dpforge.errors import DataError, PrivacyError

__all__ = [
    "DpEstimate",
    "DpNoiseWarning",
    "bounds_event",
    "dp_bounds",
    "dp_categories",
    "dp_label_prior",
    "gaussian_histogram",
    "noise_multiplier_for",
]

# PLD discretisation used for calibration. A PLD accountant's ε is an upper bound for any
# interval; 1e-3 is ~10x faster than the default 1e-4 at small σ and at most slightly more
# conservative (σ a little larger), so the returned σ never overspends.
_CALIBRATION_DISCRETIZATION = 1e-3


class DpNoiseWarning(UserWarning):
    """The noise drowned the signal: the estimate is valid (private) but uninformative."""


@dataclass(frozen=True)
class DpEstimate:
    """A DP estimate and what it cost.

    Attributes:
        value: the estimate (its type depends on the estimator).
        event: the dp-accounting event describing the mechanism; record it in the ledger.
        extra_delta: δ paid outside ``event`` (the threshold of a sparse histogram); add it to
            the δ that the accountant computes for the whole ledger.
    """

    value: object
    event: dp_accounting.DpEvent
    extra_delta: float = 0.0


# --------------------------------------------------------------------------- validation


def _check_noise_multiplier(noise_multiplier: float) -> float:
    """Return σ as a float; σ must be finite and ≥ 0 (0 is the non-private baseline)."""
    sigma = float(noise_multiplier)
    if not math.isfinite(sigma) or sigma < 0:
        raise PrivacyError(f"noise_multiplier must be a finite number >= 0, got {noise_multiplier}")
    return sigma


def _check_sensitivity(sensitivity: float) -> float:
    """The L2 sensitivity of one histogram under the run's relation: 1 per record, k per
    person with at most k rows."""
    value = float(sensitivity)
    if not (math.isfinite(value) and value >= 1.0):
        raise PrivacyError(f"sensitivity must be a finite number >= 1, got {sensitivity!r}")
    return value


def _check_rng(rng: np.random.Generator) -> None:
    """Refuse anything but an explicit Generator: noise never comes from global state."""
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")


def _check_probability(name: str, value: float) -> float:
    """Return ``value`` as a float strictly between 0 and 1."""
    p = float(value)
    if not 0.0 < p < 1.0:
        raise PrivacyError(f"{name} must be strictly between 0 and 1, got {value}")
    return p


# --------------------------------------------------------------------------- shared pieces


def gaussian_histogram(
    counts: np.ndarray, noise_multiplier: float, rng: np.random.Generator, sensitivity: float = 1
) -> np.ndarray:
    """Add N(0, (σ·sensitivity)²) independently to every count (the Gaussian mechanism).

    Private only if one neighbouring step (a record, or a person's bounded rows) changes
    ``counts`` by at most ``sensitivity`` in L2; the callers in this module build their
    histograms so that one record changes one entry by at most 1.
    """
    sigma = _check_noise_multiplier(noise_multiplier) * _check_sensitivity(sensitivity)
    _check_rng(rng)
    counts = np.asarray(counts, dtype=float)
    return counts + sigma * rng.standard_normal(counts.shape)


def _upper_tail_z(probability: float) -> float:
    """z such that P[N(0, 1) > z] = probability (accurate for tiny probabilities)."""
    return -NormalDist().inv_cdf(probability)


def noise_multiplier_for(epsilon: float, delta: float, releases: int = 1) -> float:
    """Smallest σ such that ``releases`` Gaussian histograms (sensitivity 1) are (ε, δ)-DP.

    Calibrated with dp-accounting's ``calibrate_dp_mechanism`` and a PLD accountant over
    ``SelfComposedDpEvent(GaussianDpEvent(σ), releases)`` (discretisation 1e-3, slightly
    conservative); an RDP analysis of the same events reports a somewhat larger ε. Use
    ``releases=2`` for :func:`dp_bounds` and ``releases=1`` for the other estimators; for
    :func:`dp_categories` pass the δ share left after ``threshold_delta``.
    """
    if not (math.isfinite(float(epsilon)) and float(epsilon) > 0):
        raise PrivacyError(f"epsilon must be a finite number > 0, got {epsilon}")
    delta = _check_probability("delta", delta)
    if isinstance(releases, bool) or not isinstance(releases, int | np.integer) or releases < 1:
        raise PrivacyError(f"releases must be an integer >= 1, got {releases!r}")

    def make_event(sigma: float) -> dp_accounting.DpEvent:
        return dp_accounting.SelfComposedDpEvent(dp_accounting.GaussianDpEvent(sigma), releases)

    def make_accountant() -> pld_privacy_accountant.PLDAccountant:
        return pld_privacy_accountant.PLDAccountant(
            value_discretization_interval=_CALIBRATION_DISCRETIZATION
        )

    sigma = mechanism_calibration.calibrate_dp_mechanism(
        make_accountant,
        make_event,
        float(epsilon),
        delta,
        mechanism_calibration.LowerEndpointAndGuess(0.0, 1.0),
        tol=1e-6,
    )
    return float(sigma)


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

    Two Gaussian histograms, each of L2 sensitivity 1, so the event is
    ``ComposedDpEvent([GaussianDpEvent(σ), GaussianDpEvent(σ)])`` (charged in full even when
    the first shows only noise, so the cost never depends on the data):

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
    in [-2.3, 3.3]). With ``fine=False`` the event is ONE ``GaussianDpEvent(σ)`` (so the same
    (ε, δ) buys less noise), the grid has ``bins_per_octave`` bins per octave (edges
    2^(j / bins_per_octave)) and the quantile bins are widened by ``widen_octaves`` (rounded to
    whole grid bins, at least one) instead of one octave. This is the setting for array
    channels (:func:`dpforge.statistics.metadata.complete_array_schema`).

    Public coarse grid (``grid``): increasing edges with -inf and +inf at the ends and 0 among
    them, used instead of the geometric one (quantile bins widened by one bin). Date columns
    pass a calendar of month starts (:mod:`dpforge.statistics.time_bounds`): on a grid of
    octaves, dates far from 1970 get a range of many years.

    ``sensitivity`` (k for a person with at most k rows): both histograms get noise std
    σ·k, and every level read from the noise above uses that std; the event stays σ's.
    """
    sigma = _check_noise_multiplier(noise_multiplier)
    std = sigma * _check_sensitivity(sensitivity)
    _check_rng(rng)
    if not 0.0 <= quantile < 0.5:
        raise ValueError(f"quantile must be in [0, 0.5), got {quantile}")
    if bins < 1:
        raise ValueError(f"bins must be >= 1, got {bins}")
    spurious_bin_prob = _check_probability("spurious_bin_prob", spurious_bin_prob)
    if not (math.isfinite(widen_octaves) and widen_octaves > 0):
        raise ValueError(f"widen_octaves must be a finite number > 0, got {widen_octaves}")
    array = values if isinstance(values, ColumnAggregates) else _as_finite_floats(values)
    event = bounds_event(sigma, fine)
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


def bounds_event(noise_multiplier: float, fine: bool = True) -> dp_accounting.DpEvent:
    """The event of :func:`dp_bounds`: two Gaussian histograms, or one when ``fine=False``."""
    one = dp_accounting.GaussianDpEvent(noise_multiplier)
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


def _warn_noise(stage: str, fallback: str) -> None:
    """Say that noise overwhelmed a histogram and what is returned instead."""
    warnings.warn(
        f"dp_bounds: {stage} cannot be told from noise (too few records for this "
        f"noise_multiplier); returning {fallback}. Declare the bounds public or spend more "
        "privacy budget on them.",
        DpNoiseWarning,
        stacklevel=3,
    )


# --------------------------------------------------------------------------- categories


def _category_counts(values: np.ndarray | Sequence[str]) -> tuple[list[str], np.ndarray]:
    """Distinct values as strings, sorted, with their counts; refuses missing values."""
    if isinstance(values, ColumnAggregates):  # validated by its engine: nothing is missing
        return values.value_counts()
    array = np.asarray(values, dtype=object)
    if array.ndim != 1:
        raise DataError(f"dp_categories needs a 1-D array, got shape {array.shape}")
    series = pd.Series(array, dtype=object)
    if series.isna().any():
        raise DataError("dp_categories got missing values (None/NaN); reject or impute them first")
    counts = series.astype(str).value_counts().sort_index()
    return [str(name) for name in counts.index], counts.to_numpy(dtype=float)


def dp_categories(
    values: np.ndarray | Sequence[str],
    noise_multiplier: float,
    threshold_delta: float,
    rng: np.random.Generator,
    max_rows: int = 1,
) -> DpEstimate:
    """DP list of the categories of a column with no public list (Gaussian sparse histogram).

    Each distinct observed value (compared as a string) is counted, N(0, σ²) is added, and the
    values whose noisy count reaches τ = 1 + σ·Φ⁻¹(1 - threshold_delta) are released, sorted.

    Why this is (ε, δ_G(ε) + threshold_delta)-DP, with δ_G the δ of ``GaussianDpEvent(σ)``:
    a record has exactly one value. If its value also occurs in the other data set, the two
    releases are post-processing of Gaussian histograms over the same set of values that
    differ by 1 in one bin: the Gaussian mechanism. If not, its value is a singleton that the
    smaller data set can never release and the larger one releases with probability
    P[1 + N(0, σ²) ≥ τ] = threshold_delta; otherwise both outputs have the same distribution.
    So the mechanism is the Gaussian one except on an event of probability ≤ threshold_delta,
    and under composition that δ simply adds to the δ of the rest of the ledger. This is the
    "partition selection" of Google's DP libraries and the Gaussian sparse histogram mechanism
    analysed exactly by Wilkins, Kifer, Zhang and Karrer ("Exact privacy analysis of the
    Gaussian sparse histogram mechanism", 2024), who show this standard bound is slightly
    conservative. The event is ``GaussianDpEvent(σ)``; ``extra_delta`` is threshold_delta.

    One person with at most ``max_rows`` = k rows (:mod:`dpforge.privacy.person`). The noise
    std is σ·k: on the values both data sets hold, the person changes the counts by at most k
    in L2, the Gaussian mechanism of ``GaussianDpEvent(σ)``. The person's own values number at
    most k (one per row) with counts c_1 + ... + c_m <= k, so each c_j <= k, and any of them is
    released with probability at most P[k + N(0, (σk)²) >= τ]. With τ = k + σk·Φ⁻¹(1 -
    threshold_delta / k) each is at most threshold_delta / k and, by a union bound over the at
    most k values, the event outside the Gaussian mechanism still has probability at most
    threshold_delta (PipelineDP's partition selection bounds the same way, with its L0 and
    Linf bounds both k here). k = 1 gives the threshold above.

    Values must be non-missing (None/NaN raise DataError); non-strings are converted with str.
    Noise is drawn in sorted order, so the result does not depend on the row order.
    """
    sigma = _check_noise_multiplier(noise_multiplier)
    threshold_delta = _check_probability("threshold_delta", threshold_delta)
    rows = _check_max_rows(max_rows)
    _check_rng(rng)
    threshold = rows + sigma * rows * _upper_tail_z(threshold_delta / rows)
    if isinstance(values, NoisyColumn):  # thresholded where the records are (each site)
        _refuse_rows_at_sites(rows)
        released = values.frequent_values(sigma, threshold)
        return DpEstimate(released, dp_accounting.GaussianDpEvent(sigma), threshold_delta)
    names, counts = _category_counts(values)
    noisy = gaussian_histogram(counts, sigma, rng, sensitivity=rows)
    released = [name for name, count in zip(names, noisy, strict=True) if count >= threshold]
    return DpEstimate(released, dp_accounting.GaussianDpEvent(sigma), threshold_delta)


def _refuse_rows_at_sites(rows: float) -> None:
    """Federated sites bound no person's rows across sites: only the per-record relation."""
    if rows != 1:
        raise PrivacyError(
            "a privacy unit (rows per person) is not supported with federated sites: a person's "
            "rows may sit at several sites; leave out --privacy-unit"
        )


def _check_max_rows(max_rows: int) -> int:
    """A person's most rows: a whole number >= 1."""
    if isinstance(max_rows, bool) or not isinstance(max_rows, int | np.integer) or max_rows < 1:
        raise PrivacyError(f"max_rows must be a whole number >= 1, got {max_rows!r}")
    return int(max_rows)


# --------------------------------------------------------------------------- label prior


def _class_counts(labels: Sequence, classes: Sequence) -> np.ndarray:
    """Counts of ``labels`` over the ``classes``; labels of other classes are not counted.

    The classes may be a DP release that left out rare ones (the threshold exists to hide
    them): their records are dropped before training, and here they count nowhere. One record
    still changes at most one count by 1. Nothing is reported about them (issue 13.6: their
    exact count used to be quoted in an error). Missing labels (None/NaN) are refused.
    """
    index = pd.Index(list(classes), dtype=object)
    if index.empty:
        raise ValueError("classes must not be empty")
    if not index.is_unique:
        raise ValueError(f"classes must be distinct, got {list(index)}")
    if isinstance(labels, ColumnAggregates):  # validated by its engine: nothing is missing
        return labels.bincount(ListedCells(tuple(index)), len(index))
    values = np.asarray(labels, dtype=object).ravel()
    if pd.isna(pd.Series(values, dtype=object)).any():
        raise DataError("dp_label_prior got missing labels (None/NaN); reject or impute them first")
    codes = index.get_indexer(values)
    return np.bincount(codes[codes >= 0], minlength=len(index)).astype(float)


def dp_label_prior(
    labels: Sequence,
    classes: Sequence,
    noise_multiplier: float,
    rng: np.random.Generator,
    floor: float | None = None,
    sensitivity: float = 1,
) -> DpEstimate:
    """DP class proportions over the public list ``classes`` (a probability vector).

    Gaussian noise on the class counts (one record changes one count by 1, so the event is
    ``GaussianDpEvent(σ)``), negatives clipped to 0, normalised, then mixed with the uniform
    distribution so that every class has probability ≥ ``floor`` (default 1% of the uniform
    share, 0.01 / K): p = (1 - K·floor)·p̂ + floor. Why a floor: the generator of a
    conditional GAN draws its labels from this prior, and a public class whose noisy count
    was clipped to 0 would otherwise never be generated (and log p would be -inf). Mixing
    moves each probability by at most K·floor ≤ 0.01 and is post-processing, hence free.
    If every noisy count is ≤ 0, p̂ is uniform and a :class:`DpNoiseWarning` is issued.
    ``sensitivity``: k for a person with at most k rows (noise std σ·k, same event).
    """
    sigma = _check_noise_multiplier(noise_multiplier)
    _check_rng(rng)
    if isinstance(labels, NoisyColumn):  # noised where the records are
        _refuse_rows_at_sites(sensitivity)
        noisy = labels.noisy_bincount(ListedCells(tuple(classes)), len(classes), sigma)
    else:
        noisy = gaussian_histogram(_class_counts(labels, classes), sigma, rng, sensitivity)
    k = len(noisy)
    floor = 0.01 / k if floor is None else float(floor)
    if not 0.0 < floor < 1.0 / k:
        raise ValueError(f"floor must be in (0, 1/{k}), got {floor}")
    noisy = np.clip(noisy, 0.0, None)
    total = noisy.sum()
    if total > 0:
        estimate = noisy / total
    else:
        warnings.warn(
            "dp_label_prior: every noisy class count is <= 0; returning the uniform prior",
            DpNoiseWarning,
            stacklevel=2,
        )
        estimate = np.full(k, 1.0 / k)
    prior = (1.0 - k * floor) * estimate + floor
    return DpEstimate(prior / prior.sum(), dp_accounting.GaussianDpEvent(sigma))
