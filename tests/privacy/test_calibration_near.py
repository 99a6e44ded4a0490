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
SPENT = dp_accounting.ComposedDpEvent([count_event(40.0, 2), count_event(30.0)])


def _releases(sigma: float) -> dp_accounting.DpEvent:
    """Two count releases at weights 0.7 and 0.3 of the budget, as a fit's rounds compose."""
    return dp_accounting.ComposedDpEvent(
        [count_event(sigma / math.sqrt(0.7), 3), count_event(sigma / math.sqrt(0.3), 2)]
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
    ("make_event", "target", "near"),
    [
        (count_event, 1.0, 3.0),  # a poor guess (20% below) still ends at the same σ
        (count_event, 3.0, 1.5),  # above the answer: the bracket grows downward
        (dp_accounting.GaussianDpEvent, 2.0, 2.0),
    ],
)
def test_the_search_from_a_close_sigma_finds_the_same_sigma(make_event, target, near):
    from_one = calibration.noise_for_target(make_event, target, DELTA)
    assert calibration.noise_for_target(make_event, target, DELTA, near=near) == from_one
    assert epsilon(make_event(from_one), DELTA) <= target


def test_composed_releases_from_a_close_sigma_take_fewer_evaluations(monkeypatch):
    seen = _computed(monkeypatch)
    from_one = calibration.noise_for_target(_releases, 1.0, DELTA, base_event=SPENT)
    evaluated = len(seen)
    for near in (0.9997 * from_one, 1.0003 * from_one):  # below and above the answer
        monkeypatch.setattr(accounting, "_PLD_CACHE", {})
        seen.clear()
        found = calibration.noise_for_target(_releases, 1.0, DELTA, base_event=SPENT, near=near)
        assert found == from_one
        assert len(seen) < evaluated  # no evaluation far from the answer, a narrow bracket
    spent = dp_accounting.ComposedDpEvent([SPENT, _releases(from_one)])
    assert epsilon(spent, DELTA) <= 1.0
