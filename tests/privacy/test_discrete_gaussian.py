"""The discrete Gaussian's ledger event (dpforge.privacy.discrete_gaussian): its PLD is
dp-accounting's, its RDP the zCDP of CKS 2020, it is saved and loaded with the ledger, and
counts drawn with the discrete Gaussian are recorded with it and calibrated by PLD."""

from __future__ import annotations

import json

import dp_accounting
import pytest
from dp_accounting.pld import privacy_loss_distribution

from dpforge.errors import PrivacyError
from dpforge.privacy.accounting import epsilon, privacy_report
from dpforge.privacy.calibration import noise_for_target
from dpforge.privacy.discrete_gaussian import DiscreteGaussianDpEvent
from dpforge.privacy.ledger import PrivacyLedger, event_from_dict, event_to_dict
from dpforge.privacy.release_noise import count_event, release_event, table_event

DELTA = 1e-5


@pytest.mark.parametrize(("sigma", "sensitivity", "count"), [(3.0, 1, 1), (7.5, 2, 1), (4.0, 1, 6)])
def test_the_pld_epsilon_is_dp_accountings_pld_of_the_discrete_gaussian(sigma, sensitivity, count):
    single = DiscreteGaussianDpEvent(sigma, sensitivity)
    event = single if count == 1 else dp_accounting.SelfComposedDpEvent(single, count)
    direct = privacy_loss_distribution.from_discrete_gaussian_mechanism(
        sigma, sensitivity=sensitivity, value_discretization_interval=1e-4
    ).self_compose(count)
    assert epsilon(event, DELTA) == pytest.approx(direct.get_epsilon_for_delta(DELTA), rel=2e-3)
    assert privacy_report(event, DELTA).accountant == "pld"


@pytest.mark.parametrize("sigma", [4.0, 10.0, 30.0])
def test_for_large_sigma_it_approaches_the_continuous_gaussian_from_above(sigma):
    discrete = epsilon(DiscreteGaussianDpEvent(sigma), DELTA)
    continuous = epsilon(dp_accounting.GaussianDpEvent(sigma), DELTA)
    assert continuous <= discrete <= continuous * 1.005


@pytest.mark.parametrize(("sigma", "sensitivity"), [(2.0, 1), (9.0, 4)])
def test_rdp_analyses_it_as_its_zcdp(sigma, sensitivity):
    event = dp_accounting.SelfComposedDpEvent(DiscreteGaussianDpEvent(sigma, sensitivity), 3)
    zcdp = dp_accounting.SelfComposedDpEvent(
        dp_accounting.ZCDpEvent(sensitivity**2 / (2 * sigma**2)), 3
    )
    assert epsilon(event, DELTA, "rdp") == epsilon(zcdp, DELTA, "rdp")


def test_a_ledger_of_discrete_gaussians_saves_and_loads():
    ledger = PrivacyLedger()
    ledger.record("record count", count_event(4.0, rows=3))
    ledger.record("marginals", table_event(2.0, 5))
    ledger.record("old zCDP release", release_event(2.0))
    loaded = PrivacyLedger.from_dict(json.loads(json.dumps(ledger.to_dict())))
    assert loaded.entries == ledger.entries
    assert loaded.entries[0].event == DiscreteGaussianDpEvent(12.0 * (1 - 1e-12), 3)
    assert loaded.epsilon(DELTA) == ledger.epsilon(DELTA)


@pytest.mark.parametrize("bad", [{"sigma": 2.0, "sensitivity": 1.5}, {"sigma": -1.0}])
def test_a_corrupt_saved_event_is_refused(bad):
    data = event_to_dict(DiscreteGaussianDpEvent(2.0)) | bad
    with pytest.raises(PrivacyError):
        event_from_dict(data)


def test_the_events_of_counts_drawn_here_and_at_the_sites():
    assert count_event(3.0, 4, rows=2) == dp_accounting.SelfComposedDpEvent(
        DiscreteGaussianDpEvent(3.0 * 2 * 2 * (1 - 1e-12), 2), 4
    )
    assert table_event(3.0, 4) == count_event(3.0, 4)
    assert table_event(3.0, 4, rows=2) == release_event(3.0)  # rows may split over cells
    assert table_event(3.0, 4, at_source=True) == release_event(3.0)  # continuous shares
    assert count_event(0.0) == dp_accounting.NonPrivateDpEvent()


@pytest.mark.parametrize(("target", "sigma"), [(1.0, 3.7418), (3.0, 1.352), (10.0, 0.4991)])
def test_the_noise_of_one_count_at_a_target_is_pinned(target, sigma):
    """σ of one discrete Gaussian count at ε = 1 / 3 / 10, δ = 1e-5 (PLD); recorded as zCDP
    (RDP) it was 4.045 / 1.493 / 0.530, as the continuous Gaussian by PLD 3.731 / 1.391 / 0.500."""
    found = noise_for_target(count_event, target, DELTA)
    assert found == pytest.approx(sigma, abs=1e-4)
    assert epsilon(count_event(found), DELTA) <= target
