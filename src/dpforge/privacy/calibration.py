"""Calibration: the noise multiplier or the number of steps that fits a target epsilon.

Every function verifies its answer with the accountant that reports epsilon, so a run planned
with it never exceeds its target. ``*_for_target`` take any mechanism as a function from the
free parameter to its DpEvent; ``*_for_epsilon`` are the DP-SGD (Poisson-sampled Gaussian)
cases.

Every evaluation is bounded in memory and time: the PLD accountant's grid grows with epsilon
(sigma = 1 over a million full-batch steps ran out of memory), so an event whose RDP epsilon
(cheap at any step count) is above ``PLD_EPSILON_CEILING`` counts as epsilon = inf, an upper
bound that only makes a search more cautious.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import dp_accounting
from dp_accounting import mechanism_calibration

from dpforge.errors import PrivacyError
from dpforge.options import MAX_NOISE_MULTIPLIER, MIN_NOISE_MULTIPLIER
from dpforge.privacy.accounting import (
    _check_accountant,
    _check_epsilon,
    _check_event,
    _check_noise,
    _check_sample_rate,
    _check_steps,
    _epsilon,
    dpsgd_event,
    make_accountant,
    reporting_accountant,
    validate_delta,
)

__all__ = [
    "PLD_EPSILON_CEILING",
    "bounded_epsilon",
    "noise_for_epsilon",
    "noise_for_target",
    "steps_for_epsilon",
    "steps_for_target",
]

NOISE_DECIMALS = 4  # calibrated σ is rounded UP to this many decimals (printable as is)
# Calibration does not search below this σ (the PLD of a smaller σ grows without bound: the
# accountant ran out of memory), nor above the other.
_MIN_NOISE = MIN_NOISE_MULTIPLIER
_MAX_NOISE = MAX_NOISE_MULTIPLIER
_CALIBRATION_TOL = 0.5 * 10.0**-NOISE_DECIMALS
_STEP_GROWTH = 8  # the step search brackets the answer in [n, 8n] before calibrating
# Above this RDP epsilon the PLD accountant is not asked (its grid, hence its memory, grows with
# epsilon: at 1,000 over a million steps it needs 0.7 GB and 7 s; at 8,000, 1.4 GB and 20 s).
PLD_EPSILON_CEILING = 1000.0


def bounded_epsilon(event: dp_accounting.DpEvent, delta: float, accountant: str) -> float:
    """ε of ``event`` with bounded memory: inf when ``accountant`` is PLD and the RDP ε (an
    upper bound, cheap at any step count) is above PLD_EPSILON_CEILING.

    inf is an upper bound, so a calibration that uses it stays on the safe side.
    """
    if accountant == "pld" and rdp_epsilon_above(event, delta, PLD_EPSILON_CEILING):
        return math.inf
    return _epsilon(event, delta, accountant)


def rdp_epsilon_above(event: dp_accounting.DpEvent, delta: float, ceiling: float) -> bool:
    """True when the RDP accountant can analyse ``event`` and puts its ε above ``ceiling``."""
    if not make_accountant("rdp").supports(event):
        return False
    return _epsilon(event, delta, "rdp") > ceiling


def _with_base(base: dp_accounting.DpEvent, event: dp_accounting.DpEvent) -> dp_accounting.DpEvent:
    if isinstance(base, dp_accounting.NoOpDpEvent):
        return event
    return dp_accounting.ComposedDpEvent([base, event])


def _spent_by_base(base: dp_accounting.DpEvent, delta: float, target: float, acc: str) -> float:
    """ε of the base event; PrivacyError when it alone reaches the target."""
    spent = bounded_epsilon(base, delta, acc)
    if spent >= target:
        raise PrivacyError(
            f"epsilon={target} is already spent by the recorded events (epsilon={spent:.4g}); "
            "raise the target or spend less on metadata"
        )
    return spent


def noise_for_epsilon(
    epsilon: float,
    delta: float,
    sample_rate: float,
    steps: int,
    accountant: str = "pld",
    base_event: dp_accounting.DpEvent | None = None,
) -> float:
    """Smallest σ (rounded up to 4 decimals) with ε(base_event ∘ DP-SGD(q, σ, steps)) ≤ epsilon.

    ``base_event`` is what the run has already spent (metadata). The result is verified with the
    same accountant that reports ε, so training with it never exceeds the target. σ is not
    searched below MIN_NOISE_MULTIPLIER (a target met there returns it).
    """
    q, n = _check_sample_rate(sample_rate), _check_steps(steps)
    if n == 0:
        raise PrivacyError("steps=0: there is nothing to calibrate; give steps >= 1")
    return noise_for_target(
        lambda sigma: dpsgd_event(q, sigma, n), epsilon, delta, accountant, base_event
    )


def noise_for_target(
    make_event: Callable[[float], dp_accounting.DpEvent],
    epsilon: float,
    delta: float,
    accountant: str | None = None,
    base_event: dp_accounting.DpEvent | None = None,
    near: float | None = None,
) -> float:
    """Smallest σ (4 decimals) with ε(base_event ∘ make_event(σ)) ≤ epsilon, for any mechanism.

    ``accountant`` None picks the reporting one (PLD where it applies, else RDP). ``near``: a σ
    known to be close to the answer (a twin event's), where the search for a bracket starts,
    1% from it and widening; None starts at σ = 1, doubling. A fit's composed releases cost
    1.5-1.8 CPU s an evaluation at any σ: the doubling's steps up from σ = 1 and the root
    search's halvings of [σ, 2σ] are the evaluations a close σ saves. ε is jagged in σ at the
    1e-4 level (the discrete Gaussian's PLD), so the answer is the σ the rounding walk ends at,
    which both starts reach when the jags do not cross the target twice near it (checked in
    tests/privacy/test_calibration_near.py and by the pinned pipeline fixtures).
    """
    target, d = _check_epsilon(epsilon), validate_delta(delta)
    base = _check_event(base_event or dp_accounting.NoOpDpEvent(), "base_event")

    def event_of(sigma: float) -> dp_accounting.DpEvent:
        return _with_base(base, make_event(sigma))

    acc = _check_accountant(accountant or reporting_accountant(event_of(1.0)))
    _spent_by_base(base, d, target, acc)

    def gap(sigma: float) -> float:
        return bounded_epsilon(event_of(sigma), d, acc) - target

    if near is None:
        low, high = _bracket_noise(gap, target)
    else:
        low, high = _bracket_noise(gap, target, near, _NEAR_RATIO, widen=True)
    if low is None:
        return high
    sigma = mechanism_calibration.calibrate_dp_mechanism(
        lambda: make_accountant(acc),
        event_of,
        target,
        d,
        bracket_interval=mechanism_calibration.ExplicitBracketInterval(low, high),
        tol=_CALIBRATION_TOL,
    )
    return _round_noise_up(float(sigma), gap)


def _bracket_noise(
    gap: Any, target: float, start: float = 1.0, ratio: float = 2.0, widen: bool = False
) -> tuple[float | None, float]:
    """(low, high) with gap(low) > 0 ≥ gap(high), searched outward from ``start`` (clamped to
    the searched σ range) in steps of ``ratio``: doubling from σ = 1 by default; from a
    known-close σ, 1% away first and each further step twice as far in log σ (``widen``), so
    a good guess costs two evaluations and a poor one a few more.

    ``low`` is None when even the smallest searched σ meets the target. An unreachable target
    is refused, with the smallest ε that the largest σ gives, once the search reaches it
    (only then: the PLD of a discrete Gaussian of very large σ takes seconds to build).
    """
    sigma = min(max(start, _MIN_NOISE), _MAX_NOISE)
    if gap(sigma) <= 0.0:
        while sigma > _MIN_NOISE:
            lower = max(sigma / ratio, _MIN_NOISE)
            if gap(lower) > 0.0:
                return lower, sigma
            sigma, ratio = lower, ratio * ratio if widen else ratio
        return None, _MIN_NOISE
    while sigma * ratio < _MAX_NOISE and gap(sigma * ratio) > 0.0:
        sigma, ratio = sigma * ratio, ratio * ratio if widen else ratio
    if sigma * ratio >= _MAX_NOISE:
        _check_reachable(gap, target)
    return sigma, min(sigma * ratio, _MAX_NOISE)


# The first step of a bracket search from a known-close σ: a fit's composed releases at round
# 1's σ alone are at ε 1.00017 for a target of 1 (the seeded demo), within 1% of the answer.
_NEAR_RATIO = 1.01


def _check_reachable(gap: Any, target: float) -> None:
    """PrivacyError naming the smallest reachable ε when even σ = _MAX_NOISE misses ``target``."""
    smallest = gap(_MAX_NOISE) + target
    if smallest <= target:
        return
    shown = f"above {PLD_EPSILON_CEILING:g}" if math.isinf(smallest) else _ceil_4(smallest)
    raise PrivacyError(
        f"epsilon={target:g} cannot be reached: even noise_multiplier={_MAX_NOISE:.0f} (the "
        f"largest) gives epsilon {shown}; choose epsilon of at least that, or fewer steps or a "
        "smaller sample rate"
    )


def _ceil_4(value: float) -> str:
    """``value`` rounded UP to 4 significant digits (a reachable bound is never understated)."""
    digits = 3 - math.floor(math.log10(value)) if value > 0 else 4
    return f"{math.ceil(value * 10**digits) / 10**digits:.{max(digits, 0)}f}"


def _round_noise_up(sigma: float, gap: Any) -> float:
    """The smallest σ on the 10⁻⁴ grid near ``sigma`` that meets the target (gap ≤ 0).

    Checked with the reporting accountant, so the printed σ is exactly the σ that meets ε.
    """
    scale = 10**NOISE_DECIMALS
    rounded = math.ceil(sigma * scale - 1e-9) / scale
    for _ in range(100):
        if gap(rounded) <= 0.0:
            break
        rounded = round(rounded + 1.0 / scale, NOISE_DECIMALS)
    else:
        raise RuntimeError(f"noise calibration did not meet its target near sigma={sigma}")
    while rounded - 1.0 / scale >= _MIN_NOISE and gap(rounded - 1.0 / scale) <= 0.0:
        rounded = round(rounded - 1.0 / scale, NOISE_DECIMALS)
    return rounded


def steps_for_epsilon(
    epsilon: float,
    delta: float,
    sample_rate: float,
    noise_multiplier: float,
    accountant: str = "pld",
    base_event: dp_accounting.DpEvent | None = None,
    max_steps: int = 10_000_000,
) -> int:
    """Largest step count (≤ max_steps) with ε(base_event ∘ DP-SGD(q, σ, steps)) ≤ epsilon.

    0 when even one step exceeds the target (always the case for σ = 0). The answer is exact:
    ε(steps) ≤ epsilon < ε(steps + 1) with the given accountant.
    """
    q, sigma = _check_sample_rate(sample_rate), _check_noise(noise_multiplier)
    return steps_for_target(
        lambda n: dpsgd_event(q, sigma, n), epsilon, delta, accountant, base_event, max_steps
    )


def steps_for_target(
    make_event: Callable[[int], dp_accounting.DpEvent],
    epsilon: float,
    delta: float,
    accountant: str | None = None,
    base_event: dp_accounting.DpEvent | None = None,
    max_steps: int = 10_000_000,
) -> int:
    """Largest n (≤ max_steps) with ε(base_event ∘ make_event(n)) ≤ epsilon, for any mechanism
    whose ε grows with n. ``accountant`` None picks the reporting one."""
    target, d = _check_epsilon(epsilon), validate_delta(delta)
    cap = _check_steps(max_steps, "max_steps")
    base = _check_event(base_event or dp_accounting.NoOpDpEvent(), "base_event")

    def event_of(n: int) -> dp_accounting.DpEvent:
        return _with_base(base, make_event(int(n)))

    acc = _check_accountant(accountant or reporting_accountant(event_of(1)))
    _spent_by_base(base, d, target, acc)

    def fits(n: int) -> bool:
        return bounded_epsilon(event_of(n), d, acc) <= target

    if cap == 0 or not fits(1):
        return 0
    low = 1
    while low < cap and fits(min(_STEP_GROWTH * low, cap)):
        low = min(_STEP_GROWTH * low, cap)
    if low == cap:
        return cap
    high = min(_STEP_GROWTH * low, cap)
    guess = mechanism_calibration.calibrate_dp_mechanism(
        lambda: make_accountant(acc),
        event_of,
        target,
        d,
        bracket_interval=mechanism_calibration.ExplicitBracketInterval(low, high),
        discrete=True,
    )
    return _exact_steps(int(guess), low, high, fits)


def _exact_steps(guess: int, low: int, high: int, fits: Any) -> int:
    """Move ``guess`` (within a step or two of the answer) to the exact largest fitting count."""
    n = min(max(guess, low), high - 1)
    while not fits(n):
        n -= 1
    while n + 1 < high and fits(n + 1):
        n += 1
    return n
