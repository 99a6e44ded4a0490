"""A calibration that starts its bracket search from a close σ (``near``) finds the σ that the
search from σ = 1 finds, with fewer evaluations of the accountant (the composed releases of a
fit: statistics/rounds.py calibrates them from the σ of round 1 alone)."""

from __future__ import annotations

import math

import dp_accounting
import pytest

from dpforge.privacy import accounting, calibration
from dpforge.privacy.accounting import epsilon
from dpforge.privacy.release_noise import count_event

DELTA = 1e-5
SPENT = dp_accounting.ComposedDpEvent([count_event(40.0, 2) for _ in range(3)])


def _releases(sigma: float) -> dp_accounting.DpEvent:
    """Two count releases at weights 0.7 and 0.3 of the budget, as a fit's rounds compose."""
    return dp_accounting.ComposedDpEvent(
        [count_event(sigma / math.sqrt(0.7), 5), count_event(sigma / math.sqrt(0.3), 3)]
    )


def _computed(monkeypatch) -> list[str]:
    """The events whose PLD ε is computed (not read from the cache), from now on."""
    seen: list[str] = []
    original = accounting._converged_pld_epsilon

    def counting(event, delta):
        seen.append(repr(event))
        return original(event, delta)

    monkeypatch.setattr(accounting, "_converged_pld_epsilon", counting)
    monkeypatch.setattr(accounting, "_PLD_CACHE", {})
    return seen


@pytest.mark.parametrize(
    ("make_event", "target", "base", "near"),
    [
        (_releases, 1.0, SPENT, 2.9),  # near below the answer: the bracket grows upward
        (_releases, 1.0, SPENT, 3.6),  # near above it: the bracket grows downward
        (_releases, 3.0, None, 1.4),
        (count_event, 1.0, None, 3.0),  # a poor guess (20% off) still ends at the same σ
    ],
)
def test_the_search_from_a_close_sigma_finds_the_same_sigma(make_event, target, base, near):
    from_one = calibration.noise_for_target(make_event, target, DELTA, base_event=base)
    from_near = calibration.noise_for_target(make_event, target, DELTA, base_event=base, near=near)
    assert from_near == from_one
    spent = (
        make_event(from_near)
        if base is None
        else dp_accounting.ComposedDpEvent([base, make_event(from_near)])
    )
    assert epsilon(spent, DELTA) <= target


def test_a_close_sigma_takes_fewer_evaluations(monkeypatch):
    sigma = calibration.noise_for_target(_releases, 1.0, DELTA, base_event=SPENT)
    seen = _computed(monkeypatch)
    calibration.noise_for_target(_releases, 1.0, DELTA, base_event=SPENT)
    from_one = len(seen)
    monkeypatch.setattr(accounting, "_PLD_CACHE", {})
    seen.clear()
    calibration.noise_for_target(_releases, 1.0, DELTA, base_event=SPENT, near=sigma * 0.999)
    assert len(seen) <= from_one / 2  # a narrow bracket, and no evaluation far from the answer
