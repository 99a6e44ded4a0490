"""Accounting: pinned ε values, calibration round trips, input checks, the privacy report.

Pinned values are the published-run settings of design.md §5, computed with dp-accounting 0.6
(PLD converged to 8.165 / 2.970 with a 1e-5 grid; RDP with the default orders).
"""

from __future__ import annotations

import json
import math

import dp_accounting
import pytest
from dp_accounting.pld import PLDAccountant

from dpforge.errors import PrivacyError
from dpforge.options import MIN_NOISE_MULTIPLIER
from dpforge.privacy.accounting import (
    AdaptivePLDAccountant,
    PrivacyReport,
    dpsgd_event,
    epsilon,
    format_epsilon,
    privacy_report,
    validate_delta,
)
from dpforge.privacy.calibration import noise_for_epsilon, steps_for_epsilon

DELTA = 1e-5
MNIST = dict(sample_rate=600 / 60_000, noise_multiplier=1.15, steps=24_900)
THYROID = dict(sample_rate=32 / 3772, noise_multiplier=1.15, steps=round(50 * 3772 / 32))
# a smaller run for calibration tests (cheaper PLD evaluations)
SMALL_Q, SMALL_STEPS = 0.01, 1_000


def test_pinned_mnist_run() -> None:
    event = dpsgd_event(**MNIST)
    assert epsilon(event, DELTA, "rdp") == pytest.approx(8.80, abs=0.01)
    assert epsilon(event, DELTA, "pld") == pytest.approx(8.17, abs=0.01)
    assert epsilon(event, DELTA) == epsilon(event, DELTA, "pld")  # PLD is the default


def test_pinned_thyroid_run() -> None:
    assert THYROID["steps"] == 5894
    event = dpsgd_event(**THYROID)
    assert epsilon(event, DELTA, "rdp") == pytest.approx(3.24, abs=0.01)
    assert epsilon(event, DELTA, "pld") == pytest.approx(2.97, abs=0.01)


def test_dpsgd_event_structure() -> None:
    event = dpsgd_event(0.01, 1.15, 10)
    step = dp_accounting.PoissonSampledDpEvent(0.01, dp_accounting.GaussianDpEvent(1.15))
    assert event == dp_accounting.SelfComposedDpEvent(step, 10)
    assert dpsgd_event(0.01, 0.0, 10) == dp_accounting.NonPrivateDpEvent()
    assert dpsgd_event(0.01, 1.15, 0) == dp_accounting.NoOpDpEvent()
    assert dpsgd_event(0.01, 0.0, 0) == dp_accounting.NoOpDpEvent()  # nothing happened


@pytest.mark.parametrize("accountant", ["pld", "rdp"])
def test_non_private_is_infinite_and_noop_is_zero(accountant: str) -> None:
    assert epsilon(dp_accounting.NonPrivateDpEvent(), DELTA, accountant) == math.inf
    assert epsilon(dpsgd_event(0.01, 0.0, 5), DELTA, accountant) == math.inf
    mixed = dp_accounting.ComposedDpEvent(
        [dpsgd_event(0.01, 1.0, 10), dp_accounting.NonPrivateDpEvent()]
    )
    assert epsilon(mixed, DELTA, accountant) == math.inf
    assert epsilon(dp_accounting.NoOpDpEvent(), DELTA, accountant) == 0.0


def test_adaptive_pld_is_tight_where_a_fixed_coarse_grid_is_not() -> None:
    """Small ε over many steps: 1e-3 grid gives 0.167; the adaptive grid is within 0.5%."""
    event = dpsgd_event(0.001, 3.0, 10_000)
    coarse = PLDAccountant(value_discretization_interval=1e-3).compose(event).get_epsilon(DELTA)
    fine = PLDAccountant(value_discretization_interval=2**-15).compose(event).get_epsilon(DELTA)
    adaptive = epsilon(event, DELTA)
    assert coarse > 0.16
    assert adaptive == pytest.approx(fine, rel=0.005)


def test_adaptive_pld_accountant_is_a_dp_accounting_accountant() -> None:
    acc = AdaptivePLDAccountant()
    assert isinstance(acc.ledger, dp_accounting.NoOpDpEvent)
    assert acc.supports(dpsgd_event(**MNIST))
    assert not acc.supports(dp_accounting.ZCDpEvent(0.1))
    eps = acc.compose(dpsgd_event(**THYROID)).get_epsilon(DELTA)
    assert eps == pytest.approx(2.97, abs=0.01)


def test_pld_is_tighter_than_rdp_and_grows_with_steps() -> None:
    eps = [epsilon(dpsgd_event(0.01, 1.15, n), DELTA) for n in (100, 1_000, 10_000)]
    assert eps == sorted(eps) and len(set(eps)) == 3
    for n in (100, 1_000, 10_000):
        event = dpsgd_event(0.01, 1.15, n)
        assert epsilon(event, DELTA, "pld") < epsilon(event, DELTA, "rdp")


def test_event_only_rdp_can_analyse_is_reported_with_rdp() -> None:
    """Accounted model selection (design rule 6) has an RDP analysis only."""
    event = dp_accounting.dp_event.RepeatAndSelectDpEvent(
        dpsgd_event(0.01, 1.15, 100), mean=5.0, shape=1.0
    )
    with pytest.raises(PrivacyError) as err:
        epsilon(event, DELTA)
    assert str(err.value) == (
        "the PLD accountant cannot analyse RepeatAndSelectDpEvent; use accountant='rdp'"
    )
    assert math.isfinite(epsilon(event, DELTA, "rdp"))
    report = privacy_report(event, DELTA)
    assert report.epsilon_pld is None and report.accountant == "rdp"
    assert report.epsilon == report.epsilon_rdp
    assert report.summary().endswith("(RDP) at δ = 1e-05")


def test_event_no_accountant_can_analyse_is_refused() -> None:
    """Fixed-size batches need the replace-one relation, which our accountants do not use."""
    event = dp_accounting.SampledWithoutReplacementDpEvent(
        1000, 10, dp_accounting.GaussianDpEvent(1.0)
    )
    with pytest.raises(PrivacyError, match="cannot analyse SampledWithoutReplacementDpEvent"):
        epsilon(event, DELTA, "rdp")
    with pytest.raises(PrivacyError, match="neither PLD nor RDP"):
        privacy_report(event, DELTA)


# --------------------------------------------------------------------------- validation


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"sample_rate": 0.0}, "sample_rate=0.0"),
        ({"sample_rate": 1.5}, "sample_rate=1.5"),
        ({"sample_rate": -0.1}, "sample_rate=-0.1"),
        ({"sample_rate": "0.1"}, "sample_rate='0.1'"),
        ({"noise_multiplier": -1.0}, "noise_multiplier=-1.0"),
        ({"noise_multiplier": math.inf}, "noise_multiplier=inf"),
        ({"noise_multiplier": math.nan}, "noise_multiplier=nan"),
        ({"steps": -1}, "steps=-1"),
        ({"steps": 1.5}, "steps=1.5"),
        ({"steps": True}, "steps=True"),
    ],
)
def test_dpsgd_event_rejects_bad_input(kwargs: dict, fragment: str) -> None:
    args = {"sample_rate": 0.01, "noise_multiplier": 1.0, "steps": 10, **kwargs}
    with pytest.raises(PrivacyError) as err:
        dpsgd_event(**args)
    assert fragment in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize("delta", [0.0, 1.0, 1.5, -1e-5, math.nan, "1e-5"])
def test_epsilon_rejects_bad_delta(delta: object) -> None:
    with pytest.raises(PrivacyError, match="delta="):
        epsilon(dp_accounting.NoOpDpEvent(), delta)


def test_epsilon_rejects_bad_accountant_and_event() -> None:
    with pytest.raises(PrivacyError, match="accountant='gdp' is unknown; use 'pld' or 'rdp'"):
        epsilon(dp_accounting.NoOpDpEvent(), DELTA, "gdp")
    with pytest.raises(PrivacyError, match="is not a dp_accounting.DpEvent"):
        epsilon("gaussian", DELTA)


def test_validate_delta_refuses_one_over_n() -> None:
    assert validate_delta(1e-5, 60_000) == 1e-5
    with pytest.raises(PrivacyError, match=r"delta=0\.001 is not below 1/N = 1/1000"):
        validate_delta(1e-3, 1000)


@pytest.mark.parametrize("target", [0.0, -1.0, math.inf, math.nan])
def test_calibration_rejects_bad_epsilon(target: float) -> None:
    with pytest.raises(PrivacyError, match="epsilon="):
        noise_for_epsilon(target, DELTA, 0.01, 100)
    with pytest.raises(PrivacyError, match="epsilon="):
        steps_for_epsilon(target, DELTA, 0.01, 1.0)


# --------------------------------------------------------------------------- calibration


def test_noise_for_epsilon_pinned_run_round_trip() -> None:
    """PLD-calibrated σ meets ε = 8 on the MNIST run; 1e-4 less noise would not."""
    q, steps = MNIST["sample_rate"], MNIST["steps"]
    sigma = noise_for_epsilon(8.0, DELTA, q, steps)
    assert sigma == round(sigma, 4)  # printable as is
    assert 7.99 <= epsilon(dpsgd_event(q, sigma, steps), DELTA) <= 8.0
    assert epsilon(dpsgd_event(q, sigma - 1e-4, steps), DELTA) > 8.0
    assert 1.15 < sigma < 1.2  # 1.15 gives 8.17 > 8


def test_noise_for_epsilon_round_trip_rdp() -> None:
    """RDP calibration (PLD is covered by the pinned run above)."""
    accountant, target = "rdp", 1.0
    sigma = noise_for_epsilon(target, DELTA, SMALL_Q, SMALL_STEPS, accountant=accountant)
    eps = epsilon(dpsgd_event(SMALL_Q, sigma, SMALL_STEPS), DELTA, accountant)
    assert target * 0.99 <= eps <= target
    assert epsilon(dpsgd_event(SMALL_Q, sigma - 1e-4, SMALL_STEPS), DELTA, accountant) > target


def test_noise_for_epsilon_with_a_huge_target_returns_the_smallest_searched_noise() -> None:
    assert noise_for_epsilon(1e9, DELTA, 1.0, 1, accountant="rdp") == MIN_NOISE_MULTIPLIER


def test_noise_for_epsilon_needs_steps() -> None:
    with pytest.raises(PrivacyError, match="steps=0"):
        noise_for_epsilon(1.0, DELTA, 0.01, 0)


def test_steps_for_epsilon_pinned_run_round_trip() -> None:
    q, sigma = MNIST["sample_rate"], MNIST["noise_multiplier"]
    steps = steps_for_epsilon(8.0, DELTA, q, sigma)
    assert epsilon(dpsgd_event(q, sigma, steps), DELTA) <= 8.0
    assert epsilon(dpsgd_event(q, sigma, steps + 1), DELTA) > 8.0
    assert 23_000 < steps < 24_900


def test_steps_for_epsilon_round_trip_rdp() -> None:
    """RDP calibration (PLD is covered by the pinned run above)."""
    accountant = "rdp"
    steps = steps_for_epsilon(1.0, DELTA, SMALL_Q, 2.0, accountant=accountant)
    assert epsilon(dpsgd_event(SMALL_Q, 2.0, steps), DELTA, accountant) <= 1.0
    assert epsilon(dpsgd_event(SMALL_Q, 2.0, steps + 1), DELTA, accountant) > 1.0


def test_steps_for_epsilon_edge_cases() -> None:
    assert steps_for_epsilon(1.0, DELTA, 0.01, 0.0) == 0  # non-private: not a single step
    assert steps_for_epsilon(0.01, DELTA, 1.0, 1.0) == 0  # one full-batch step exceeds 0.01
    assert steps_for_epsilon(10.0, DELTA, 0.001, 20.0, max_steps=50) == 50  # cap reached
    with pytest.raises(PrivacyError, match="max_steps=-1"):
        steps_for_epsilon(1.0, DELTA, 0.01, 1.0, max_steps=-1)


def test_base_event_makes_calibration_spend_less_on_training() -> None:
    """Metadata already spent (two Gaussian releases) leaves less for DP-SGD.

    RDP keeps this fast; PLD calibration on a base event is checked in test_ledger.py.
    """
    base = dp_accounting.SelfComposedDpEvent(dp_accounting.GaussianDpEvent(20.0), 2)
    args = (1.0, DELTA, SMALL_Q, SMALL_STEPS, "rdp")
    plain, with_base = noise_for_epsilon(*args), noise_for_epsilon(*args, base_event=base)
    assert with_base > plain
    total = dp_accounting.ComposedDpEvent([base, dpsgd_event(SMALL_Q, with_base, SMALL_STEPS)])
    assert epsilon(total, DELTA, "rdp") <= 1.0
    alone = epsilon(dpsgd_event(SMALL_Q, with_base, SMALL_STEPS), DELTA, "rdp")
    assert epsilon(total, DELTA, "rdp") > alone  # composition spends more than training alone

    steps_plain = steps_for_epsilon(1.0, DELTA, SMALL_Q, 1.5, accountant="rdp")
    steps_base = steps_for_epsilon(1.0, DELTA, SMALL_Q, 1.5, accountant="rdp", base_event=base)
    assert steps_base < steps_plain


def test_base_event_that_spends_the_budget_is_refused() -> None:
    base = dp_accounting.GaussianDpEvent(0.5)  # ε ≈ 9.6 at δ = 1e-5
    with pytest.raises(PrivacyError, match="already spent by the recorded events"):
        noise_for_epsilon(2.0, DELTA, 0.01, 100, base_event=base)
    with pytest.raises(PrivacyError, match="already spent by the recorded events"):
        steps_for_epsilon(2.0, DELTA, 0.01, 1.0, base_event=base)


# --------------------------------------------------------------------------- report


def test_privacy_report_pinned_and_summary() -> None:
    report = privacy_report(dpsgd_event(**MNIST), DELTA)
    assert isinstance(report, PrivacyReport)
    assert report.epsilon_pld == pytest.approx(8.17, abs=0.01)
    assert report.epsilon_rdp == pytest.approx(8.80, abs=0.01)
    assert report.epsilon == report.epsilon_pld and report.accountant == "pld"
    assert report.is_private
    assert report.summary() == "ε = 8.17 (PLD; RDP 8.81) at δ = 1e-05"
    assert json.loads(json.dumps(report.to_dict()))["epsilon_pld"] == report.epsilon_pld


def test_privacy_report_extra_delta() -> None:
    event = dpsgd_event(**THYROID)
    report = privacy_report(event, 2e-5, extra_delta=1e-5)
    assert report.delta == 2e-5 and report.extra_delta == 1e-5
    assert report.epsilon_pld == epsilon(event, 1e-5)  # accountant asked at δ - extra
    assert report.epsilon_pld > epsilon(event, 2e-5)
    with pytest.raises(PrivacyError, match="must exceed the delta already paid"):
        privacy_report(event, 1e-5, extra_delta=1e-5)


def test_privacy_report_of_non_private_event() -> None:
    report = privacy_report(dp_accounting.NonPrivateDpEvent(), DELTA)
    assert report.epsilon == math.inf and not report.is_private
    assert report.to_dict()["epsilon"] == "inf"
    assert json.dumps(report.to_dict(), allow_nan=False)
    assert report.summary().startswith("ε = ∞")


@pytest.mark.parametrize(
    ("value", "text"), [(8.17, "8.17"), (8.1701, "8.18"), (8.8019, "8.81"), (0.0, "0.00")]
)
def test_format_epsilon_rounds_up(value: float, text: str) -> None:
    assert format_epsilon(value) == text
    assert format_epsilon(math.inf) == "∞"
