"""GS-WGAN accounting: the paper's number, the sound bound, calibration, ledger round trips.

Paper setting (Chen et al. 2020, code defaults): K = 1000 discriminators, σ = 1.07, B = 32
generated samples per step, 20,000 generator steps, δ = 1e-5. Values computed with
dp-accounting 0.6 (RDP, default orders).
"""

from __future__ import annotations

import math

import dp_accounting
import pytest
from dp_accounting.pld import privacy_loss_distribution

from dpforge.errors import PrivacyError
from dpforge.privacy.gswgan_accounting import (
    gswgan_epsilon,
    gswgan_event,
    gswgan_noise_std,
    gswgan_paper_epsilon,
    gswgan_step_event,
    noise_for_gswgan,
    steps_for_gswgan,
)
from dpforge.privacy.ledger import PrivacyLedger, event_from_dict, event_to_dict

DELTA = 1e-5
PAPER = dict(num_discriminators=1000, noise_multiplier=1.07, steps=20_000, batch_size=32)


def test_paper_analysis_reproduces_published_epsilon() -> None:
    """The paper's privacy_analysis.py: T·B independently subsampled Gaussians, ε ≈ 9.24."""
    assert gswgan_paper_epsilon(delta=DELTA, **PAPER) == pytest.approx(9.24, abs=0.05)


@pytest.mark.parametrize("relation", ["add_remove", "replace_one"])
def test_sound_bound_for_paper_setting(relation: str) -> None:
    """All B releases of a step share one draw: the sound RDP bound is ≈ 2.97e5."""
    eps = gswgan_epsilon(delta=DELTA, neighbouring=relation, **PAPER)
    assert eps == pytest.approx(296_563.65, rel=1e-3)


def test_paper_analysis_is_below_a_realisable_lower_bound() -> None:
    """A neighbouring pair allowed by the paper's assumptions has ε > 100 (optimistic PLD).

    Optimistic discretisation gives a lower bound on any grid (311.6 on a 1e-3 grid; the
    coarse grid here is looser but fast).
    """
    sigma_joint = PAPER["noise_multiplier"] / math.sqrt(PAPER["batch_size"])
    pld = privacy_loss_distribution.from_gaussian_mechanism(
        sigma_joint,
        pessimistic_estimate=False,
        use_connect_dots=False,
        value_discretization_interval=1e-2,
        sampling_prob=1 / PAPER["num_discriminators"],
    ).self_compose(PAPER["steps"])
    lower = pld.get_epsilon_for_delta(DELTA)
    assert lower > 100
    assert gswgan_paper_epsilon(delta=DELTA, **PAPER) < lower
    assert gswgan_epsilon(delta=DELTA, **PAPER) >= lower


def test_batch_of_one_and_relations_agree() -> None:
    one = dict(PAPER, batch_size=1)
    assert gswgan_epsilon(delta=DELTA, **one) == pytest.approx(1.2951, abs=1e-3)
    assert gswgan_epsilon(delta=DELTA, **one) == gswgan_epsilon(
        delta=DELTA, neighbouring="replace_one", **one
    )


def test_step_event_structure() -> None:
    step = gswgan_step_event(1000, 1.07, batch_size=32)
    releases = dp_accounting.SelfComposedDpEvent(dp_accounting.GaussianDpEvent(1.07), 32)
    assert step == dp_accounting.SampledWithoutReplacementDpEvent(1000, 1, releases)
    assert gswgan_event(1000, 1.07, 5, batch_size=32) == dp_accounting.SelfComposedDpEvent(step, 5)
    assert gswgan_event(1000, 1.07, 0, batch_size=32) == dp_accounting.NoOpDpEvent()
    assert gswgan_event(1000, 0.0, 5, batch_size=32) == dp_accounting.NonPrivateDpEvent()
    assert gswgan_epsilon(1000, 0.0, 5, DELTA, batch_size=32) == math.inf
    assert gswgan_epsilon(1000, 1.07, 0, DELTA, batch_size=32) == 0.0


def test_noise_std_is_sigma_times_sensitivity() -> None:
    """Noise std = σ · 2C, as in the paper's code (SENSITIVITY = 2)."""
    assert gswgan_noise_std(1.07, 1.0) == pytest.approx(2.14)
    assert gswgan_noise_std(0.5, 0.1) == pytest.approx(0.1)


def test_epsilon_grows_with_batch_steps_and_shrinks_with_more_discriminators() -> None:
    base = dict(num_discriminators=100, noise_multiplier=2.0, steps=500, batch_size=4)
    eps = gswgan_epsilon(delta=DELTA, **base)
    assert gswgan_epsilon(delta=DELTA, **dict(base, batch_size=8)) > eps
    assert gswgan_epsilon(delta=DELTA, **dict(base, steps=1000)) > eps
    assert gswgan_epsilon(delta=DELTA, **dict(base, num_discriminators=200)) < eps
    assert gswgan_epsilon(delta=DELTA, **dict(base, noise_multiplier=3.0)) < eps


def test_noise_calibration_for_paper_schedule() -> None:
    """ε = 10 with the paper's K, T and B needs σ = 2.871 (not 1.07)."""
    sigma = noise_for_gswgan(10.0, DELTA, 1000, 20_000, batch_size=32)
    assert sigma == pytest.approx(2.871, abs=1e-3)
    assert gswgan_epsilon(1000, sigma, 20_000, DELTA, batch_size=32) <= 10.0
    assert gswgan_epsilon(1000, sigma - 1e-4, 20_000, DELTA, batch_size=32) > 10.0


def test_steps_calibration_is_exact() -> None:
    n = steps_for_gswgan(2.0, DELTA, 100, 3.0, batch_size=4)
    assert n > 0
    assert gswgan_epsilon(100, 3.0, n, DELTA, batch_size=4) <= 2.0
    assert gswgan_epsilon(100, 3.0, n + 1, DELTA, batch_size=4) > 2.0
    assert steps_for_gswgan(2.0, DELTA, 100, 0.0, batch_size=4) == 0
    assert steps_for_gswgan(2.0, DELTA, 100, 3.0, batch_size=4, max_steps=5) == 5


def test_events_survive_a_ledger_round_trip() -> None:
    event = gswgan_event(1000, 1.07, 20_000, batch_size=32)
    assert event_from_dict(event_to_dict(event)) == event
    ledger = PrivacyLedger()
    ledger.record("gswgan generator steps", event)
    assert PrivacyLedger.from_dict(ledger.to_dict()).event() == ledger.event()


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(num_discriminators=0, noise_multiplier=1.0, steps=1, batch_size=1),
        dict(num_discriminators=10, noise_multiplier=-1.0, steps=1, batch_size=1),
        dict(num_discriminators=10, noise_multiplier=math.nan, steps=1, batch_size=1),
        dict(num_discriminators=10, noise_multiplier=1.0, steps=-1, batch_size=1),
        dict(num_discriminators=10, noise_multiplier=1.0, steps=1, batch_size=0),
        dict(num_discriminators=10, noise_multiplier=1.0, steps=1.5, batch_size=1),
        dict(num_discriminators=True, noise_multiplier=1.0, steps=1, batch_size=1),
    ],
)
def test_bad_inputs_are_privacy_errors(kwargs: dict) -> None:
    with pytest.raises(PrivacyError):
        gswgan_epsilon(delta=DELTA, **kwargs)


def test_batch_size_is_required_and_relation_checked() -> None:
    with pytest.raises(TypeError):
        gswgan_step_event(1000, 1.07)  # type: ignore[call-arg]
    with pytest.raises(PrivacyError, match="neighbouring"):
        gswgan_epsilon(delta=DELTA, neighbouring="substitute", **PAPER)
    with pytest.raises(PrivacyError, match="delta"):
        gswgan_epsilon(delta=1.5, **PAPER)
    with pytest.raises(PrivacyError, match="epsilon"):
        noise_for_gswgan(0.0, DELTA, 1000, 10, batch_size=1)
    with pytest.raises(PrivacyError, match="steps=0"):
        noise_for_gswgan(1.0, DELTA, 1000, 0, batch_size=1)
