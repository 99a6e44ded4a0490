"""Differentially private estimates of data-dependent metadata.

Column bounds, category lists and the label prior are read from private records, so (design
rule 2) they are either declared public in the schema or estimated here with a DP mechanism
whose cost goes into the run's privacy ledger. Every estimator is a pure function over arrays
that returns a :class:`DpEstimate`: the estimate together with the exact ``dp_accounting``
event describing the mechanism, plus any δ paid outside that event (thresholding).

Neighbouring data sets differ by adding or removing one record, as for the Poisson-subsampled
Gaussian used in training. Every mechanism here is a histogram in which one record changes one
bin by 1 with discrete Gaussian noise N_Z(0, σ²) per bin, drawn by
:mod:`dpforge.privacy.release_noise` (OpenDP in a release run, so that floating point cannot
betray the counts, Mironov 2012; the run's seeded generator otherwise), so one histogram is
exactly ``DiscreteGaussianDpEvent(σ)`` (:func:`~dpforge.statistics.dp_noise.histogram_event`).

Several rows per person (:mod:`dpforge.privacy.person`): once each person keeps at most ``k``
rows, one person changes a histogram by at most ``k`` in L2 (its rows may fall in several bins).
Every estimator takes that ``sensitivity`` and adds ``sensitivity`` times the noise; the event
is then the zCDP of noise multiplier σ, ``ZCDpEvent(1 / 2σ²)``, as it is for histograms noised
at federated sites (a sum of continuous Gaussian shares).

Calling with ``noise_multiplier=0`` is the non-private baseline: the event is
``NonPrivateDpEvent``, for which the accountant reports ε = ∞.

Layout: the shared pieces (estimate type, checks, noisy histogram, calibration) are in
:mod:`~dpforge.statistics.dp_noise`, the bounds in :mod:`~dpforge.statistics.bounds_estimate`
(bins in :mod:`~dpforge.statistics.bounds_bins`), the category lists in
:mod:`~dpforge.statistics.categories_estimate`; the label prior is here. Every public name is
importable from this module. The label prior reads ``gaussian_histogram`` and
``_class_counts`` through this module's globals, which the privacy audit's defect injection
(``tests/privacy/broken_parts.py``) replaces.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np
import pandas as pd

from dpforge.engines.aggregates import (
    ColumnAggregates,
    ListedCells,
    NoisyColumn,
)
from dpforge.errors import DataError
from dpforge.statistics.bounds_bins import _geometric_edges  # noqa: F401 (tests import it here)
from dpforge.statistics.bounds_estimate import bounds_event, dp_bounds
from dpforge.statistics.categories_estimate import dp_categories
from dpforge.statistics.dp_noise import (
    DpEstimate,
    DpNoiseWarning,
    _check_noise_multiplier,
    _check_rng,
    _refuse_rows_at_sites,
    gaussian_histogram,
    histogram_event,
    noise_multiplier_for,
)

__all__ = [
    "DpEstimate",
    "DpNoiseWarning",
    "bounds_event",
    "dp_bounds",
    "dp_categories",
    "dp_label_prior",
    "gaussian_histogram",
    "histogram_event",
    "noise_multiplier_for",
]


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

    Discrete Gaussian noise on the class counts (one record changes one count by 1, so the
    event is :func:`histogram_event`), negatives clipped to 0, normalised, then mixed with the
    uniform distribution so that every class has probability ≥ ``floor`` (default 1% of the uniform
    share, 0.01 / K): p = (1 - K·floor)·p̂ + floor. Why a floor: the generator of a
    conditional GAN draws its labels from this prior, and a public class whose noisy count
    was clipped to 0 would otherwise never be generated (and log p would be -inf). Mixing
    moves each probability by at most K·floor ≤ 0.01 and is post-processing, hence free.
    If every noisy count is ≤ 0, p̂ is uniform and a :class:`DpNoiseWarning` is issued.
    ``sensitivity``: k for a person with at most k rows (noise σ·k, the event's zCDP).
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
    event = histogram_event(sigma, sensitivity, isinstance(labels, NoisyColumn))
    return DpEstimate(prior / prior.sum(), event)
