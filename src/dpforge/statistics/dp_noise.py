"""Shared pieces of the DP metadata estimators (:mod:`dpforge.statistics.dp_stats`): the estimate
type, the warning raised when noise overwhelms a histogram, argument checks, the noisy
histogram (discrete Gaussian, drawn by :mod:`dpforge.privacy.release_noise`), its ledger event
and the calibration of a noise multiplier to (ε, δ) by the accountant that reports that event.
"""

import math
import warnings
from dataclasses import dataclass
from statistics import NormalDist

import dp_accounting
import numpy as np

from dpforge.errors import PrivacyError
from dpforge.privacy.calibration import noise_for_target
from dpforge.privacy.release_noise import noisy_counts, table_event


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
    """Add discrete Gaussian noise of parameter σ·sensitivity independently to every count
    (whole numbers), drawn by :func:`dpforge.privacy.release_noise.noisy_counts` (OpenDP in a
    release run), so that floating point cannot betray the counts (Mironov 2012).

    Private only if one neighbouring step (a record, or a person's bounded rows) changes
    ``counts`` by at most ``sensitivity`` in L2; the callers in this module build their
    histograms so that one record changes one entry by at most 1. The event is
    :func:`histogram_event`.
    """
    sigma = _check_noise_multiplier(noise_multiplier) * _check_sensitivity(sensitivity)
    _check_rng(rng)
    return noisy_counts(np.asarray(counts, dtype=float), sigma, rng)


def histogram_event(
    noise_multiplier: float, rows: float = 1, at_source: bool = False
) -> dp_accounting.DpEvent:
    """The ledger event of one histogram of this module at noise multiplier σ (std σ·rows):
    one record moves one bin by 1, so with the discrete Gaussian drawn here it is
    ``DiscreteGaussianDpEvent(σ)``; a person's ``rows`` may fall in several bins, and noise
    added at federated sites (``at_source``) is a sum of continuous shares, both recorded as
    their zCDP (:func:`dpforge.privacy.release_noise.table_event`); σ = 0 is non-private."""
    return table_event(noise_multiplier, 1, _whole_rows(rows), at_source)


def _whole_rows(rows: float) -> int:
    value = _check_sensitivity(rows)
    if not value.is_integer():
        raise PrivacyError(f"rows per person must be a whole number, got {rows!r}")
    return int(value)


def _upper_tail_z(probability: float) -> float:
    """z such that P[N(0, 1) > z] = probability (accurate for tiny probabilities)."""
    return -NormalDist().inv_cdf(probability)


def noise_multiplier_for(
    epsilon: float, delta: float, releases: int = 1, rows: float = 1, at_source: bool = False
) -> float:
    """Smallest σ (4 decimals) such that ``releases`` histograms, each the
    :func:`histogram_event` of σ for ``rows`` and ``at_source``, are (ε, δ)-DP.

    Calibrated with :func:`dpforge.privacy.calibration.noise_for_target` by the accountant
    that reports those events (PLD for the discrete Gaussian, RDP for zCDP), so the estimates
    never spend more than their share. Use ``releases=2`` for :func:`dp_bounds` and
    ``releases=1`` for the other estimators; for :func:`dp_categories` pass the δ share left
    after ``threshold_delta``.
    """
    if not (math.isfinite(float(epsilon)) and float(epsilon) > 0):
        raise PrivacyError(f"epsilon must be a finite number > 0, got {epsilon}")
    delta = _check_probability("delta", delta)
    if isinstance(releases, bool) or not isinstance(releases, int | np.integer) or releases < 1:
        raise PrivacyError(f"releases must be an integer >= 1, got {releases!r}")
    count = int(releases)

    def make_event(sigma: float) -> dp_accounting.DpEvent:
        one = histogram_event(sigma, rows, at_source)
        return one if count == 1 else dp_accounting.SelfComposedDpEvent(one, count)

    return float(noise_for_target(make_event, float(epsilon), delta))


def _warn_noise(stage: str, fallback: str) -> None:
    """Say that noise overwhelmed a histogram and what is returned instead."""
    warnings.warn(
        f"dp_bounds: {stage} cannot be told from noise (too few records for this "
        f"noise_multiplier); returning {fallback}. Declare the bounds public or spend more "
        "privacy budget on them.",
        DpNoiseWarning,
        stacklevel=3,
    )


def _refuse_rows_at_sites(rows: float) -> None:
    """Federated sites bound no person's rows across sites: only the per-record relation."""
    if rows != 1:
        raise PrivacyError(
            "a privacy unit (rows per person) is not supported with federated sites: a person's "
            "rows may sit at several sites; leave out --privacy-unit"
        )
