"""The ledger event of the discrete Gaussian mechanism, and its privacy loss distribution.

dp-accounting has the tight PLD of the discrete Gaussian
(``privacy_loss_distribution.from_discrete_gaussian_mechanism``) but no DpEvent for it, so the
event is defined here, the dp-accounting way: a frozen attrs class that only describes the
mechanism, which the accountants of :mod:`dpforge.privacy.accounting` learn to analyse (PLD:
that distribution; RDP: ``ZCDpEvent(Δ² / (2 σ²))``, as the discrete Gaussian of parameter σ
and integer sensitivity Δ is exactly that ρ-zCDP, Canonne, Kamath and Steinke 2020).
It is recorded for integer counts drawn with OpenDP's discrete Gaussian
(:mod:`dpforge.privacy.release_noise`); its (ε, δ) curve is not bounded by the continuous
Gaussian's (CKS 2020, Thm 7), so a ``GaussianDpEvent`` would not be a valid record of it.

No ``from __future__ import annotations`` here: the ledger decodes saved events by their
attrs field types, which must be the types themselves, as in dp-accounting's own events.
"""

import functools
import math
import numbers

import attr
import dp_accounting
from dp_accounting.pld import privacy_loss_distribution

from dpforge.errors import PrivacyError

__all__ = ["DiscreteGaussianDpEvent", "discrete_gaussian_pld", "discrete_gaussian_rho"]


def _check_sigma(instance, attribute, value) -> None:
    del instance, attribute  # attrs validator signature
    if (
        isinstance(value, bool)
        or not isinstance(value, numbers.Real)
        or not (math.isfinite(value) and value > 0)
    ):
        raise PrivacyError(
            f"DiscreteGaussianDpEvent sigma={value!r} must be a finite number > 0; "
            "record σ = 0 as a NonPrivateDpEvent"
        )


def _check_sensitivity(instance, attribute, value) -> None:
    del instance, attribute
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise PrivacyError(
            f"DiscreteGaussianDpEvent sensitivity={value!r} must be a whole number >= 1 "
            "(the most one neighbour moves the integer query)"
        )


@attr.s(frozen=True, slots=True, auto_attribs=True)
class DiscreteGaussianDpEvent(dp_accounting.DpEvent):
    """The discrete Gaussian mechanism on one integer-valued query.

    Attributes:
      sigma: the parameter σ of the noise N_Z(0, σ²), P[x] ∝ exp(-x² / 2σ²) on the integers
        (its standard deviation is a little below σ).
      sensitivity: the most that adding or removing one record (or person) moves the query,
        a whole number.

    A release of several integer queries with independent noise, each moved by at most
    ``sensitivity``, is their composition (a ``SelfComposedDpEvent``), not one event of a
    larger sensitivity: unlike the continuous Gaussian's, the discrete Gaussian's privacy is
    not a function of the L2 sensitivity alone.
    """

    sigma: float = attr.ib(validator=_check_sigma)
    sensitivity: int = attr.ib(default=1, validator=_check_sensitivity)


def discrete_gaussian_rho(event: DiscreteGaussianDpEvent) -> float:
    """ρ of the zCDP that ``event`` satisfies: Δ² / (2 σ²) (Canonne, Kamath and Steinke 2020)."""
    return event.sensitivity**2 / (2.0 * event.sigma**2)


@functools.lru_cache(maxsize=64)
def discrete_gaussian_pld(
    sigma: float, sensitivity: int, count: int, interval: float
) -> privacy_loss_distribution.PrivacyLossDistribution:
    """dp-accounting's PLD of ``count`` compositions of the discrete Gaussian (σ, Δ) on the grid
    ``interval``, add-or-remove neighbours, pessimistic (an upper bound on ε). Built once per
    argument tuple: calibration asks for the same spent releases many times, and PLDs are
    immutable."""
    single = privacy_loss_distribution.from_discrete_gaussian_mechanism(
        sigma, sensitivity=sensitivity, value_discretization_interval=interval
    )
    return single.self_compose(count) if count > 1 else single
