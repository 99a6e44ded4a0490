"""The PLD accountant that reuses Gaussian PLDs reports exactly what dp-accounting's own does.

Oracle: dp-accounting's ``PLDAccountant`` on the same event and grid, which builds every
Gaussian's PLD afresh. Reuse is an optimisation only, so the ε must agree to the last digit,
for events that repeat a Gaussian, self-compose it, mix it with sampled and Laplace events,
and after the stored PLD has been used many times.
"""

from __future__ import annotations

import dp_accounting
import pytest
from dp_accounting.pld import PLDAccountant
from dp_accounting.privacy_accountant import NeighboringRelation

from dpforge.privacy import accounting, calibration
from dpforge.privacy.accounting import dpsgd_event

GAUSS = dp_accounting.GaussianDpEvent

EVENTS = {
    "one Gaussian": GAUSS(1.3),
    "repeated Gaussians": dp_accounting.ComposedDpEvent([GAUSS(6.2), GAUSS(13.5), GAUSS(6.2)]),
    "self-composed": dp_accounting.SelfComposedDpEvent(GAUSS(2.0), 7),
    "nested": dp_accounting.ComposedDpEvent(
        [dp_accounting.SelfComposedDpEvent(GAUSS(4.0), 3), GAUSS(4.0 / 3**0.5), GAUSS(9.0)]
    ),
    "with DP-SGD and Laplace": dp_accounting.ComposedDpEvent(
        [GAUSS(3.0), dpsgd_event(0.01, 1.1, 200), dp_accounting.LaplaceDpEvent(2.0)]
    ),
}


def _oracle(event: dp_accounting.DpEvent, interval: float, delta: float) -> float:
    acc = PLDAccountant(
        NeighboringRelation.ADD_OR_REMOVE_ONE, value_discretization_interval=interval
    )
    return acc.compose(event).get_epsilon(delta)


@pytest.mark.parametrize("name", sorted(EVENTS))
@pytest.mark.parametrize("interval", [2.0**-10, 2.0**-12])
def test_same_epsilon_as_dp_accounting(name: str, interval: float) -> None:
    event = EVENTS[name]
    first = accounting._pld(interval).compose(event).get_epsilon(1e-5)
    again = accounting._pld(interval).compose(event).get_epsilon(1e-5)  # from stored PLDs
    expected = _oracle(event, interval, 1e-5)
    assert first == expected
    assert again == expected


def test_stored_pld_is_not_changed_by_composing_it() -> None:
    """Composing the stored PLD into many events must not alter it (PLDs are immutable)."""
    interval = 2.0**-10
    accounting._gaussian_pld.cache_clear()
    for count in range(1, 6):
        event = dp_accounting.ComposedDpEvent([GAUSS(5.0)] * count)
        got = accounting._pld(interval).compose(event).get_epsilon(1e-6)
        assert got == _oracle(event, interval, 1e-6)
    info = accounting._gaussian_pld.cache_info()
    assert info.misses == 1 and info.hits == 14  # one PLD built, reused 1 + 2 + ... + 5 - 1 times


def test_non_private_and_zero_noise_still_infinite() -> None:
    acc = accounting._pld(2.0**-10).compose(dp_accounting.ComposedDpEvent([GAUSS(0.0), GAUSS(2.0)]))
    assert acc.get_epsilon(1e-5) == float("inf")


def test_calibrated_noise_unchanged_against_oracle_accountant() -> None:
    """A calibration on top of spent releases (the pattern the reuse speeds up) reports the
    same ε as dp-accounting's own accountant at the grid the adaptive accountant settled on."""
    spent = dp_accounting.ComposedDpEvent([GAUSS(6.2), GAUSS(13.5)])
    sigma = calibration.noise_for_target(GAUSS, 3.0, 1e-5, base_event=spent)
    event = dp_accounting.ComposedDpEvent([spent, GAUSS(sigma)])
    reported = accounting.epsilon(event, 1e-5)
    assert reported <= 3.0
    grids = [2.0**-k for k in range(10, 18)]
    assert any(_oracle(event, g, 1e-5) == reported for g in grids)


@pytest.mark.parametrize(("sd", "interval"), [(5.0, 2.0**-13), (0.2, 2.0**-10)])
def test_large_plds_are_not_kept_and_give_the_same_epsilon(sd: float, interval: float) -> None:
    """A fine grid or a small sd makes a PLD of millions of values: built afresh each time."""
    accounting._gaussian_pld.cache_clear()
    event = dp_accounting.ComposedDpEvent([GAUSS(sd), GAUSS(sd)])
    got = accounting._pld(interval).compose(event).get_epsilon(1e-5)
    assert got == _oracle(event, interval, 1e-5)
    assert accounting._gaussian_pld.cache_info().currsize == 0


def test_a_composed_ledger_kept_once_gives_the_same_epsilon_and_keeps_a_non_private_part():
    """A fit's spent ledger (many parts) is composed once per grid and reused by calibration:
    the same ε as composing its parts afresh, and a non-private part still makes it infinite."""
    from dpforge.privacy.accounting import _KEPT_PARTS, _converged_pld_epsilon
    from dpforge.privacy.discrete_gaussian import DiscreteGaussianDpEvent

    parts = [DiscreteGaussianDpEvent(3.0 + i, 1) for i in range(_KEPT_PARTS)]
    many = dp_accounting.ComposedDpEvent(parts)
    candidate = dp_accounting.GaussianDpEvent(2.0)
    composed = _converged_pld_epsilon(dp_accounting.ComposedDpEvent([many, candidate]), 1e-5)
    flat = _converged_pld_epsilon(dp_accounting.ComposedDpEvent([*parts, candidate]), 1e-5)
    assert composed == pytest.approx(flat, rel=1e-9)
    leaky = dp_accounting.ComposedDpEvent([*parts, dp_accounting.NonPrivateDpEvent()])
    assert _converged_pld_epsilon(dp_accounting.ComposedDpEvent([leaky, candidate]), 1e-5) == float(
        "inf"
    )
