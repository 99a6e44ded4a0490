"""Privacy accounting: ε of a DP event, calibration of σ or steps, and the privacy report.

All arithmetic is delegated to dp-accounting; this module only chooses accountants, validates
user input and guarantees the direction of every rounding (calibrated values never exceed the
target ε).

Accountants (both for the add-or-remove-one neighbouring relation, which matches Poisson
sampling):

* ``"pld"`` (default, the ε we report): privacy loss distributions with pessimistic
  discretisation, a rigorous upper bound on any grid. The grid is chosen per event: ε is
  computed on the grid 2⁻¹⁰ ≈ 1e-3, then on grids halved in turn until halving changes ε by less
  than 0.1% (or 1e-4), down to 2⁻¹⁷; the smallest (tightest) value is reported. No fixed grid
  is right for every event: 1e-3 is fast (pinned example: 8.172 in 0.03 s against 8.165 with
  1e-4 in 0.3 s) but loose for small ε over many steps (q = 0.001, σ = 3, 10,000 steps: 0.167
  instead of 0.107), while a fixed fine grid costs seconds for a single step. Every grid gives
  an upper bound, so the smallest value computed is one too. One evaluation costs 0.05-0.3 s
  (two or three grids) and is cached per (event, δ). Calibration uses this same accountant, so
  a calibrated σ or step count meets its target with exactly the ε we report.
* ``"rdp"``: Rényi DP with dp-accounting's default orders; shown next to PLD for comparison.
"""

from __future__ import annotations

import functools
import logging
import math
import numbers
from dataclasses import dataclass
from typing import Any

import dp_accounting
from dp_accounting.pld import PLDAccountant, privacy_loss_distribution
from dp_accounting.privacy_accountant import (
    NeighboringRelation,
    PrivacyAccountant,
    UnsupportedEventError,
)
from dp_accounting.rdp import RdpAccountant, rdp_privacy_accountant

from dpforge.errors import PrivacyError
from dpforge.privacy.discrete_gaussian import (
    DiscreteGaussianDpEvent,
    discrete_gaussian_pld,
    discrete_gaussian_rho,
)


class _KnownRdpNotice(logging.Filter):
    """Drops dp-accounting's notice that one RDP order's series did not converge: the
    accountant then leaves that order out, which can only make its epsilon larger (never
    smaller), so the notice changes nothing in what we print; left in, it fills the one-line
    answers of the command line with lines about q and sigma."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "failed to converge" not in str(record.msg)


logging.getLogger("absl").addFilter(_KnownRdpNotice())

__all__ = [
    "ACCOUNTANTS",
    "AdaptivePLDAccountant",
    "PrivacyReport",
    "dpsgd_event",
    "epsilon",
    "format_epsilon",
    "make_accountant",
    "privacy_report",
    "reporting_accountant",
    "validate_delta",
]

ACCOUNTANTS = ("pld", "rdp")

COARSEST_PLD_INTERVAL = 2.0**-10
FINEST_PLD_INTERVAL = 2.0**-17
PLD_RTOL = 1e-3  # refine the grid until halving it changes ε by less than 0.1% ...
PLD_ATOL = 1e-4  # ... or by less than 1e-4
_PLD_CACHE: dict[tuple[str, float], float] = {}
_PLD_CACHE_SIZE = 1024


# --------------------------------------------------------------------------- validation


def _real(value: Any, name: str) -> float:
    """``value`` as a float, or PrivacyError when it is not a real number."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise PrivacyError(f"{name}={value!r} is not a number; give a real number")
    return float(value)


def _check_sample_rate(sample_rate: Any) -> float:
    q = _real(sample_rate, "sample_rate")
    if not 0.0 < q <= 1.0:
        raise PrivacyError(
            f"sample_rate={sample_rate} is outside (0, 1]; use expected batch size / data set size"
        )
    return q


def _check_noise(noise_multiplier: Any) -> float:
    sigma = _real(noise_multiplier, "noise_multiplier")
    if not (sigma >= 0.0 and math.isfinite(sigma)):
        raise PrivacyError(
            f"noise_multiplier={noise_multiplier} must be finite and >= 0; "
            "use 0 only for a non-private baseline"
        )
    return sigma


def _check_steps(steps: Any, name: str = "steps") -> int:
    if isinstance(steps, bool) or not isinstance(steps, numbers.Integral) or steps < 0:
        raise PrivacyError(f"{name}={steps!r} must be a whole number >= 0")
    return int(steps)


def _check_epsilon(target: Any) -> float:
    eps = _real(target, "epsilon")
    if not (eps > 0.0 and math.isfinite(eps)):
        raise PrivacyError(f"epsilon={target} must be finite and > 0; choose a target such as 1-10")
    return eps


def validate_delta(delta: Any, dataset_size: int | None = None) -> float:
    """Check 0 < δ < 1 and, when the data set size N is known, δ < 1/N.

    A δ of 1/N or more allows a mechanism that publishes one whole record, so it protects no one.
    """
    d = _real(delta, "delta")
    if not 0.0 < d < 1.0:
        raise PrivacyError(f"delta={delta} must be in (0, 1); choose delta well below 1/N")
    if dataset_size is not None and d >= 1.0 / dataset_size:
        raise PrivacyError(
            f"delta={delta} is not below 1/N = 1/{dataset_size}, which protects no one; "
            f"choose delta well below {1.0 / dataset_size:.3g} (e.g. 1/N^1.1 or smaller)"
        )
    return d


def _check_accountant(accountant: Any) -> str:
    if accountant not in ACCOUNTANTS:
        raise PrivacyError(f"accountant={accountant!r} is unknown; use 'pld' or 'rdp'")
    return accountant


def _check_event(event: Any, name: str = "event") -> dp_accounting.DpEvent:
    if not isinstance(event, dp_accounting.DpEvent):
        raise PrivacyError(f"{name}={event!r} is not a dp_accounting.DpEvent")
    return event


# --------------------------------------------------------------------------- accountants


class AdaptivePLDAccountant(PrivacyAccountant):
    """dp-accounting's PLD accountant that refines its grid until ε converges.

    It records composed events in the base class's ledger and evaluates them on demand, so it
    plugs into ``dp_accounting.mechanism_calibration`` like any accountant.
    """

    def __init__(self) -> None:
        super().__init__(NeighboringRelation.ADD_OR_REMOVE_ONE)

    def _maybe_compose(
        self, event: dp_accounting.DpEvent, count: int, do_compose: bool
    ) -> PrivacyAccountant.CompositionErrorDetails | None:
        """Support check only; the base class keeps the composed events in ``ledger``."""
        if do_compose or _pld(COARSEST_PLD_INTERVAL).supports(event):
            return None
        return self.CompositionErrorDetails(
            invalid_event=event, error_message="not supported by the PLD accountant"
        )

    def get_epsilon(self, target_delta: float) -> float:
        """ε at ``target_delta`` on the coarsest grid that has converged (see module notes).

        Results are cached by (event, δ): calibration loops ask for the same event repeatedly.
        """
        event = self.ledger
        key = (repr(event), float(target_delta))
        if key not in _PLD_CACHE:
            if len(_PLD_CACHE) >= _PLD_CACHE_SIZE:
                _PLD_CACHE.clear()
            _PLD_CACHE[key] = _converged_pld_epsilon(event, target_delta)
        return _PLD_CACHE[key]


def _converged_pld_epsilon(event: dp_accounting.DpEvent, target_delta: float) -> float:
    """PLD ε on grids 2⁻¹⁰, 2⁻¹¹, ... until halving the grid no longer changes it."""
    interval = COARSEST_PLD_INTERVAL
    eps = _pld(interval).compose(event).get_epsilon(target_delta)
    while interval > FINEST_PLD_INTERVAL and math.isfinite(eps) and eps > 0.0:
        interval /= 2.0
        finer = _pld(interval).compose(event).get_epsilon(target_delta)
        converged = eps - finer <= max(PLD_RTOL * finer, PLD_ATOL)
        eps = min(eps, finer)  # each grid gives an upper bound; keep the tightest
        if converged:
            break
    return float(eps)


def _pld(interval: float) -> PLDAccountant:
    return _GaussianReusingPLDAccountant(
        neighboring_relation=NeighboringRelation.ADD_OR_REMOVE_ONE,
        value_discretization_interval=interval,
    )


class _GaussianReusingPLDAccountant(PLDAccountant):
    """dp-accounting's PLD accountant that reuses the PLD of a Gaussian it has built before.

    Calibration asks for ε of the spent releases composed with a candidate σ dozens of times,
    and dp-accounting builds every Gaussian's PLD afresh each time (a third of a small table's
    accounting; bench/results/tables_speed/fit_speed.md). A Gaussian's PLD depends only on its
    standard deviation, the grid and the neighbouring relation, and PLDs are immutable, so composing
    the stored one gives the same ε to the last digit (tests/privacy/test_accounting_reuse.py).
    Every other event goes to dp-accounting's own code. It composes into the base class's
    ``_pld``, as dp-accounting's own branch does (pinned below 0.7 in pyproject.toml; the
    oracle test fails first if a release changes that).
    """

    def _maybe_compose(
        self, event: dp_accounting.DpEvent, count: int, do_compose: bool
    ) -> PrivacyAccountant.CompositionErrorDetails | None:
        if _worth_keeping(event) and do_compose and count == 1:
            interval = self._value_discretization_interval
            pld, non_private = _composed_pld(event, interval)
            self._contains_non_dp_event = self._contains_non_dp_event or non_private
            self._pld = self._pld.compose(pld)
            return None
        if isinstance(event, DiscreteGaussianDpEvent):  # dp-accounting has no event for it
            if do_compose and count > 0:
                interval = self._value_discretization_interval
                pld = discrete_gaussian_pld(event.sigma, event.sensitivity, count, interval)
                self._pld = self._pld.compose(pld)
            return None
        gaussian = isinstance(event, dp_accounting.GaussianDpEvent)
        if not (gaussian and do_compose and count > 0):
            return super()._maybe_compose(event, count, do_compose)
        sd = event.noise_multiplier / math.sqrt(count)  # as dp-accounting composes `count` of it
        interval = self._value_discretization_interval
        if sd < _KEPT_SMALLEST_SD or interval < _KEPT_FINEST_GRID:  # too large to keep
            return super()._maybe_compose(event, count, do_compose)
        self._pld = self._pld.compose(_gaussian_pld(sd, interval, self.neighboring_relation))
        return None


def _worth_keeping(event: dp_accounting.DpEvent) -> bool:
    """A composition of many releases: a fit's spent ledger, which calibration composes with
    every candidate σ (a small table's metadata alone is dozens of discrete Gaussians, each an
    FFT convolution: 68 of a 70 CPU s fit rebuilt them, once per candidate)."""
    return isinstance(event, dp_accounting.ComposedDpEvent) and len(event.events) >= _KEPT_PARTS


_KEPT_PARTS = 8  # from this many parts a composed event's PLD is built once per (event, grid)


def _composed_pld(
    event: dp_accounting.ComposedDpEvent, interval: float
) -> tuple[privacy_loss_distribution.PrivacyLossDistribution, bool]:
    """The PLD of a composed ``event`` on the grid ``interval`` and whether it holds a
    non-private part (the accountant's other state: ε is then infinite), built once per
    (repr, grid): PLDs are immutable, and composing the kept one gives what composing its
    parts again would (events holding lists do not hash, so their repr is the key)."""
    key = (repr(event), interval)
    if key not in _COMPOSED_PLDS:
        if len(_COMPOSED_PLDS) >= _KEPT_COMPOSED:
            _COMPOSED_PLDS.clear()
        accountant = _GaussianReusingPLDAccountant(
            neighboring_relation=NeighboringRelation.ADD_OR_REMOVE_ONE,
            value_discretization_interval=interval,
        )
        for part in event.events:
            accountant.compose(part)
        _COMPOSED_PLDS[key] = (accountant._pld, accountant._contains_non_dp_event)
    return _COMPOSED_PLDS[key]


_COMPOSED_PLDS: dict[
    tuple[str, float], tuple[privacy_loss_distribution.PrivacyLossDistribution, bool]
] = {}
_KEPT_COMPOSED = 32


# Kept PLDs stay small: a PLD's length grows as 1 / (sd² x grid), and one of sd 0.5 on the
# grid 2⁻¹⁷ holds 5.6 million probabilities a side (90 MB). From sd 0.3 on, on grids no finer
# than 2⁻¹², one holds at most 5 MB (measured at sd 0.3, 2⁻¹²), so the 16 kept cost at most
# 80 MB (calibrations of a fit use sd of 1 or more on 2⁻¹⁰ and 2⁻¹¹: under 1 MB each).
_KEPT_FINEST_GRID = 2.0**-12
_KEPT_SMALLEST_SD = 0.3


@functools.lru_cache(maxsize=16)
def _gaussian_pld(
    sd: float, interval: float, relation: NeighboringRelation
) -> privacy_loss_distribution.PrivacyLossDistribution:
    """dp-accounting's PLD of one Gaussian (sensitivity 1), built once per (sd, grid)."""
    return privacy_loss_distribution.from_gaussian_mechanism(
        standard_deviation=sd,
        value_discretization_interval=interval,
        neighboring_relation=relation,
    )


def _is_partition_choice(event: dp_accounting.DpEvent) -> bool:
    """A choice of ONE of K disjoint partitions (GS-WGAN), the only without-replacement
    sampling dpforge records. Fixed-size batches of records (sample_size > 1, or one record
    out of N) are not analysable for add/remove neighbours and stay refused."""
    return (
        isinstance(event, dp_accounting.SampledWithoutReplacementDpEvent) and event.sample_size == 1
    )


class MixedRelationRdpAccountant(PrivacyAccountant):
    """RDP for add/remove-one neighbours that also takes GS-WGAN's partition choice.

    dp-accounting analyses ``SampledWithoutReplacementDpEvent`` only under REPLACE_ONE. dpforge
    records it only as ``SampledWithoutReplacementDpEvent(K, 1, .)``: one of K disjoint
    partitions chosen per step (any other without-replacement event is refused). In
    GS-WGAN's scheme (each record assigned to one of K subsets independently, one subset
    queried per step) adding or removing a record changes one subset, and the replace-one
    subsampling bound holds for that pair too (see ``dpforge.privacy.gswgan_accounting``). So
    each top-level part is composed by an RdpAccountant of the relation that analyses it, and
    the two RDP curves (same orders) are added: RDP composes additively whatever mechanism each
    curve came from, as long as both hold for the same neighbouring records.
    """

    def __init__(self) -> None:
        super().__init__(NeighboringRelation.ADD_OR_REMOVE_ONE)
        self._add_remove = RdpAccountant(neighboring_relation=NeighboringRelation.ADD_OR_REMOVE_ONE)
        self._replace_one = RdpAccountant(neighboring_relation=NeighboringRelation.REPLACE_ONE)

    def _part_accountant(self, event: dp_accounting.DpEvent) -> RdpAccountant:
        return self._replace_one if _is_partition_choice(event) else self._add_remove

    def _maybe_compose(
        self, event: dp_accounting.DpEvent, count: int, do_compose: bool
    ) -> PrivacyAccountant.CompositionErrorDetails | None:
        if isinstance(event, dp_accounting.ComposedDpEvent):
            for part in event.events:
                error = self._maybe_compose(part, count, do_compose)
                if error is not None:
                    return error
            return None
        if isinstance(event, dp_accounting.SelfComposedDpEvent):
            return self._maybe_compose(event.event, count * event.count, do_compose)
        if isinstance(event, DiscreteGaussianDpEvent):  # exactly ρ-zCDP (discrete_gaussian.py)
            event = dp_accounting.ZCDpEvent(discrete_gaussian_rho(event))
        return self._part_accountant(event)._maybe_compose(event, count, do_compose)

    def get_epsilon(self, target_delta: float) -> float:
        # dp-accounting has no public way to add two accountants' curves; both use the default
        # orders, so their private _rdp vectors align (dp-accounting is pinned below 0.7).
        rdp = self._add_remove._rdp + self._replace_one._rdp
        eps, _ = rdp_privacy_accountant.compute_epsilon(self._add_remove._orders, rdp, target_delta)
        return eps


def make_accountant(accountant: str = "pld") -> PrivacyAccountant:
    """A fresh, empty accountant: ``"pld"`` (adaptive grid) or ``"rdp"`` (add/remove
    neighbours, sampling-without-replacement parts included: see MixedRelationRdpAccountant)."""
    if _check_accountant(accountant) == "pld":
        return AdaptivePLDAccountant()
    return MixedRelationRdpAccountant()


def reporting_accountant(event: dp_accounting.DpEvent) -> str:
    """The accountant that reports ε for ``event``: PLD (tighter) when it can analyse it."""
    return "pld" if make_accountant("pld").supports(event) else "rdp"


def _unsupported_part(acc: PrivacyAccountant, event: dp_accounting.DpEvent) -> str:
    """Name of the innermost sub-event that ``acc`` cannot analyse (for error messages)."""
    if isinstance(event, dp_accounting.ComposedDpEvent):
        for part in event.events:
            if not acc.supports(part):
                return _unsupported_part(acc, part)
    if isinstance(event, dp_accounting.SelfComposedDpEvent) and not acc.supports(event.event):
        return _unsupported_part(acc, event.event)
    return type(event).__name__


def _epsilon(event: dp_accounting.DpEvent, delta: float, accountant: str) -> float:
    """ε of an already validated event (no input checks; used inside calibration loops)."""
    acc = make_accountant(accountant)
    try:
        acc.compose(event)
    except UnsupportedEventError:
        other = "rdp" if accountant == "pld" else "pld"
        part = _unsupported_part(make_accountant(accountant), event)
        fix = (
            f"use accountant='{other}'"
            if make_accountant(other).supports(event)
            else "record an event that PLD or RDP can analyse (add/remove-one neighbours)"
        )
        raise PrivacyError(
            f"the {accountant.upper()} accountant cannot analyse {part}; {fix}"
        ) from None
    eps = float(acc.get_epsilon(delta))
    return math.inf if math.isnan(eps) else max(eps, 0.0)


def epsilon(event: dp_accounting.DpEvent, delta: float, accountant: str = "pld") -> float:
    """ε such that ``event`` is (ε, δ)-DP; ``math.inf`` when any part of it is non-private."""
    return _epsilon(_check_event(event), validate_delta(delta), _check_accountant(accountant))


# --------------------------------------------------------------------------- DP-SGD events


def dpsgd_event(sample_rate: float, noise_multiplier: float, steps: int) -> dp_accounting.DpEvent:
    """The event of ``steps`` DP-SGD steps: Poisson sampling with rate q, Gaussian noise σ.

    No steps is a :class:`NoOpDpEvent`; σ = 0 (with at least one step) is a
    :class:`NonPrivateDpEvent`, so that a non-private baseline reports ε = ∞.
    """
    q = _check_sample_rate(sample_rate)
    sigma = _check_noise(noise_multiplier)
    n = _check_steps(steps)
    if n == 0:
        return dp_accounting.NoOpDpEvent()
    if sigma == 0.0:
        return dp_accounting.NonPrivateDpEvent()
    step = dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(sigma))
    return dp_accounting.SelfComposedDpEvent(step, n)


# --------------------------------------------------------------------------- report


@dataclass(frozen=True)
class PrivacyReport:
    """ε of one event (or ledger) at one δ, under both accountants.

    ``epsilon_pld`` / ``epsilon_rdp`` are None when that accountant cannot analyse the event.
    ``delta`` is the total δ guaranteed; ``extra_delta`` of it was paid outside the accountant
    (the accountants were asked for ε at ``delta - extra_delta``).
    """

    epsilon_pld: float | None
    epsilon_rdp: float | None
    delta: float
    extra_delta: float = 0.0

    @property
    def accountant(self) -> str:
        """The accountant behind :attr:`epsilon`: PLD whenever it applies."""
        return "pld" if self.epsilon_pld is not None else "rdp"

    @property
    def epsilon(self) -> float:
        """The reported ε: PLD's, or RDP's for events PLD cannot analyse."""
        value = self.epsilon_pld if self.epsilon_pld is not None else self.epsilon_rdp
        return math.inf if value is None else value

    @property
    def is_private(self) -> bool:
        """False when ε is infinite (some access was non-private)."""
        return math.isfinite(self.epsilon)

    def summary(self) -> str:
        """One line, ε rounded up: ``ε = 8.17 (PLD; RDP 8.81) at δ = 1e-05``."""
        other = "rdp" if self.accountant == "pld" else "pld"
        other_eps = self.epsilon_rdp if other == "rdp" else self.epsilon_pld
        extra = "" if other_eps is None else f"; {other.upper()} {format_epsilon(other_eps)}"
        return (
            f"ε = {format_epsilon(self.epsilon)} ({self.accountant.upper()}{extra}) "
            f"at δ = {self.delta:.3g}"
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dict; infinite ε is the string ``"inf"``."""
        return {
            "epsilon": _json_float(self.epsilon),
            "accountant": self.accountant,
            "epsilon_pld": _json_float(self.epsilon_pld),
            "epsilon_rdp": _json_float(self.epsilon_rdp),
            "delta": self.delta,
            "extra_delta": self.extra_delta,
        }


def format_epsilon(value: float, decimals: int = 2) -> str:
    """ε for display, rounded UP (a printed bound must never be below the computed one)."""
    if math.isinf(value):
        return "∞"
    scale = 10**decimals
    return f"{math.ceil(value * scale - 1e-9) / scale:.{decimals}f}"


def _json_float(value: float | None) -> float | str | None:
    if value is None or math.isfinite(value):
        return value
    return "inf"


def _optional_epsilon(event: dp_accounting.DpEvent, delta: float, acc: str) -> float | None:
    if not make_accountant(acc).supports(event):
        return None
    return _epsilon(event, delta, acc)


def privacy_report(
    event: dp_accounting.DpEvent, delta: float, extra_delta: float = 0.0
) -> PrivacyReport:
    """ε under PLD and RDP for ``event`` at total δ = ``delta``, ``extra_delta`` of it pre-paid."""
    d, extra = validate_delta(delta), _real(extra_delta, "extra_delta")
    _check_event(event)
    if not 0.0 <= extra < d:
        raise PrivacyError(
            f"delta={delta} must exceed the delta already paid outside the accountant "
            f"({extra_delta}); choose a larger delta"
        )
    eps_pld = _optional_epsilon(event, d - extra, "pld")
    eps_rdp = _optional_epsilon(event, d - extra, "rdp")
    if eps_pld is None and eps_rdp is None:
        part = _unsupported_part(make_accountant("pld"), event)
        raise PrivacyError(f"neither PLD nor RDP can analyse {part}; record a supported event")
    return PrivacyReport(eps_pld, eps_rdp, d, extra)
