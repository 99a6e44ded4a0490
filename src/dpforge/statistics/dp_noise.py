"""Shared pieces of the DP metadata estimators (:mod:`dpforge.statistics.dp_stats`): the estimate
type, the warning raised when noise overwhelms a histogram, argument checks, the Gaussian noisy
histogram and the calibration of a noise multiplier to (ε, δ) by the dp-accounting PLD
accountant.
"""

import math
import warnings
from dataclasses import dataclass
from statistics import NormalDist

import dp_accounting
import numpy as np
from dp_accounting import mechanism_calibration
from dp_accounting.pld import pld_privacy_accountant

from dpforge.errors import PrivacyError

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
