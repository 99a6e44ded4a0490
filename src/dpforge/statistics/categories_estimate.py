"""DP category list of a categorical column: a noisy count per observed category, released when
it passes a threshold that bounds the chance of releasing a category of few rows (its δ is
paid outside the histogram's event).
"""

from collections.abc import Sequence

import numpy as np
import pandas as pd

from dpforge.engines.aggregates import (
    ColumnAggregates,
    NoisyColumn,
)
from dpforge.errors import DataError, PrivacyError
from dpforge.statistics.dp_noise import (
    DpEstimate,
    _check_noise_multiplier,
    _check_probability,
    _check_rng,
    _refuse_rows_at_sites,
    _upper_tail_z,
    gaussian_histogram,
    histogram_event,
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

    Each distinct observed value (compared as a string) is counted, discrete Gaussian noise
    N_Z(0, σ²) is added (:func:`~dpforge.statistics.dp_noise.gaussian_histogram`), and the
    values whose noisy count reaches τ = 2 + σ·Φ⁻¹(1 - threshold_delta) are released, sorted.

    Why this is (ε, δ_H(ε) + threshold_delta)-DP, with δ_H the δ of the histogram's event
    (:func:`~dpforge.statistics.dp_noise.histogram_event`, ``DiscreteGaussianDpEvent(σ)``):
    a record has exactly one value. If its value also occurs in the other data set, the two
    releases are post-processing of noisy histograms over the same set of values that
    differ by 1 in one bin: the histogram's mechanism. If not, its value is a singleton that the
    smaller data set can never release and the larger one releases with probability
    P[1 + X ≥ τ]; otherwise both outputs have the same distribution. For X ~ N_Z(0, σ²) and a
    whole number m ≥ 1, P[X ≥ m] ≤ P[N(0, σ²) ≥ m - 1] (each mass exp(-x²/2σ²) at x ≥ m is at
    most the integral over [x - 1, x], and the normaliser Σ exp(-x²/2σ²) over the integers is
    at least σ·sqrt(2π)), so P[1 + X ≥ τ] ≤ threshold_delta: the discrete noise costs one count
    of threshold. So the mechanism is the histogram's except on an event of probability ≤
    threshold_delta, and under composition that δ simply adds to the δ of the rest of the
    ledger. This is the "partition selection" of Google's DP libraries and the Gaussian sparse
    histogram mechanism analysed exactly by Wilkins, Kifer, Zhang and Karrer ("Exact privacy
    analysis of the Gaussian sparse histogram mechanism", 2024), who show this standard bound is
    slightly conservative; ``extra_delta`` is threshold_delta. Where federated sites add the
    noise (continuous Gaussian shares, thresholded at each site), τ = 1 + σ·Φ⁻¹(1 -
    threshold_delta) and the event is their zCDP.

    One person with at most ``max_rows`` = k rows (:mod:`dpforge.privacy.person`). The noise
    parameter is σ·k: on the values both data sets hold, the person changes the counts by at
    most k in L2, which the zCDP of ``histogram_event(σ, k)`` covers. The person's own values
    number at most k (one per row) with counts c_1 + ... + c_m <= k, so each c_j <= k, and any
    of them is released with probability at most P[k + X >= τ], X ~ N_Z(0, (σk)²). With τ =
    k + 1 + σk·Φ⁻¹(1 - threshold_delta / k) each is at most threshold_delta / k (the bound
    above) and, by a union bound over the at most k values, the event outside the histogram's
    mechanism still has probability at most threshold_delta (PipelineDP's partition selection
    bounds the same way, with its L0 and Linf bounds both k here). k = 1 gives the threshold
    above.

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
        return DpEstimate(released, histogram_event(sigma, at_source=True), threshold_delta)
    names, counts = _category_counts(values)
    noisy = gaussian_histogram(counts, sigma, rng, sensitivity=rows)
    discrete = threshold + (sigma > 0)  # the discrete Gaussian's tail: one count further out
    released = [name for name, count in zip(names, noisy, strict=True) if count >= discrete]
    return DpEstimate(released, histogram_event(sigma, rows), threshold_delta)


def _check_max_rows(max_rows: int) -> int:
    """A person's most rows: a whole number >= 1."""
    if isinstance(max_rows, bool) or not isinstance(max_rows, int | np.integer) or max_rows < 1:
        raise PrivacyError(f"max_rows must be a whole number >= 1, got {max_rows!r}")
    return int(max_rows)
