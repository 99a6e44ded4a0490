"""Bayesian accountant: agreement with dp-accounting at fixed distances, limits, composition,
confidence handling, determinism and input checks."""

from __future__ import annotations

import math

import dp_accounting
import numpy as np
import pytest
import torch
from dp_accounting.rdp import RdpAccountant
from dp_accounting.rdp.rdp_privacy_accountant import (
    _compute_rdp_poisson_subsampled_gaussian as dp_accounting_rdp,
)

from dpforge.errors import PrivacyError
from dpforge.privacy.bayesian import (
    BayesianAccountant,
    BayesianPrivacyResult,
    pair_distances,
    pair_log_moments,
)

SIGMA, Q, CLIP, STEPS, DELTA = 1.1, 0.01, 0.5, 200, 1e-5


def _accountant(**kwargs: object) -> BayesianAccountant:
    args = dict(
        noise_multiplier=SIGMA, sample_rate=Q, clip_norm=CLIP, total_steps=STEPS, confidence=0.95
    )
    args.update(kwargs)
    return BayesianAccountant(**args)  # type: ignore[arg-type]


def _distances(seed: int, n: int = 64, scale: float = 0.3) -> np.ndarray:
    return np.random.default_rng(seed).uniform(0.0, scale, n) * CLIP


def test_distance_c_is_dp_accounting_rdp_and_2c_is_half_the_noise() -> None:
    acc = _accountant()
    lam = acc.orders - 1
    at_c = acc.step_cost(np.full(16, CLIP))
    np.testing.assert_allclose(at_c, lam * dp_accounting_rdp(Q, SIGMA, acc.orders), rtol=1e-9)
    at_2c = acc.step_cost(np.full(16, 2 * CLIP))
    np.testing.assert_allclose(at_2c, lam * dp_accounting_rdp(Q, SIGMA / 2, acc.orders), rtol=1e-9)


def test_full_batch_is_the_gaussian_mechanism() -> None:
    alphas = np.array([2, 3, 5])
    moments = pair_log_moments(np.array([1.0]), SIGMA, 1.0, alphas)
    np.testing.assert_allclose(moments[0], (alphas - 1) * alphas / (2 * SIGMA**2))


def test_identical_gradients_cost_nothing() -> None:
    acc = _accountant()
    assert np.all(np.abs(acc.step_cost(np.zeros(10))) < 1e-12)
    grads = torch.ones(8, 5)
    assert torch.all(pair_distances(grads, CLIP) == 0)


def test_worst_case_distances_are_not_below_worst_case_dp() -> None:
    """With every distance 2C, ε_μ exceeds the worst-case (add/remove, sensitivity C) RDP ε."""
    acc = _accountant()
    for _ in range(STEPS):
        acc.observe_step(np.full(8, 2 * CLIP))
    rdp = RdpAccountant(orders=[float(a) for a in acc.orders])
    rdp.compose(
        dp_accounting.SelfComposedDpEvent(
            dp_accounting.PoissonSampledDpEvent(Q, dp_accounting.GaussianDpEvent(SIGMA)), STEPS
        )
    )
    assert acc.epsilon(DELTA)[0] >= rdp.get_epsilon(DELTA)


def test_distance_c_matches_rdp_with_the_plain_conversion() -> None:
    acc = _accountant()
    for _ in range(STEPS):
        acc.observe_step(np.full(8, CLIP))
    lam = acc.orders - 1
    rdp = dp_accounting_rdp(Q, SIGMA, acc.orders) * STEPS
    expected = np.min(rdp + math.log(1 / DELTA) / lam)
    assert acc.epsilon(DELTA)[0] == pytest.approx(expected, rel=1e-9)


def test_monotone_in_scaled_and_in_largest_distances() -> None:
    acc = _accountant()
    base = _distances(0)
    cost = acc.step_cost(base)
    assert np.all(acc.step_cost(1.5 * base) > cost)
    larger = base.copy()
    larger[np.argmax(larger)] = 2 * CLIP
    assert np.all(acc.step_cost(larger) >= cost)
    const = [acc.step_cost(np.full(8, d * CLIP))[5] for d in (0.1, 0.5, 1.0, 2.0)]
    assert const == sorted(const)


def test_small_distances_give_a_smaller_bound_than_worst_case() -> None:
    acc = _accountant()
    for step in range(STEPS):
        acc.observe_step(_distances(step), extra_seconds=0.01)
    result = acc.result(DELTA)
    assert isinstance(result, BayesianPrivacyResult)
    assert 0 < result.epsilon < result.worst_case_epsilon
    assert result.steps == STEPS and result.pairs_per_step == 64
    assert result.extra_seconds == pytest.approx(2.0)
    assert result.confidence == 0.95 and result.delta == DELTA


def test_composition_adds() -> None:
    one, two = _accountant(), _accountant()
    d = _distances(1)
    one.observe_step(d)
    two.observe_step(d)
    two.observe_step(d)
    np.testing.assert_allclose(two.cost, 2 * one.cost, rtol=1e-12)
    assert two.epsilon(DELTA)[0] > one.epsilon(DELTA)[0]


def test_higher_confidence_gives_a_larger_bound() -> None:
    d = _distances(2)
    loose = _accountant(confidence=0.5).step_cost(d)
    strict = _accountant(confidence=1 - 1e-9).step_cost(d)
    assert np.all(strict > loose)
    # no spread in the samples: no confidence penalty
    same = np.full(8, 0.3 * CLIP)
    np.testing.assert_allclose(
        _accountant(confidence=0.5).step_cost(same),
        _accountant(confidence=1 - 1e-9).step_cost(same),
    )


def test_more_total_steps_is_more_conservative_per_step() -> None:
    d = _distances(3)
    assert np.all(_accountant(total_steps=10_000).step_cost(d) > _accountant().step_cost(d))


def test_deterministic_and_accepts_tensors() -> None:
    d = _distances(4)
    first, second, single = _accountant(), _accountant(), _accountant()
    first.observe_step(d)
    second.observe_step(torch.tensor(d, dtype=torch.float64))
    single.observe_step(torch.tensor(d, dtype=torch.float32))
    np.testing.assert_array_equal(first.cost, second.cost)
    np.testing.assert_allclose(first.cost, single.cost, rtol=1e-3)
    again = _accountant()
    again.observe_step(d)
    assert again.result(DELTA) == first.result(DELTA)


def test_pair_distances_clip_and_pair_disjointly() -> None:
    grads = torch.tensor([[3.0, 0.0], [0.0, 4.0], [1.0, 0.0], [1.0, 0.0], [0.0, 0.0], [0.2, 0.0]])
    dist = pair_distances(grads, 1.0)
    np.testing.assert_allclose(dist.numpy(), [math.sqrt(2.0), 0.0, 0.2], atol=1e-9)


def test_statement_is_labelled_and_rounded_up() -> None:
    result = BayesianPrivacyResult(
        epsilon=0.1234,
        delta=1e-10,
        confidence=0.95,
        steps=10,
        pairs_per_step=64,
        extra_seconds=1.5,
        worst_case_epsilon=8.171,
    )
    text = result.statement()
    assert text.startswith("(ε_μ = 0.13, δ_μ = 1e-10)-Bayesian DP")
    assert "same distribution as the training data" in text
    assert "1-γ = 0.95" in text
    assert "NOT a worst-case guarantee (that is ε = 8.18 above)" in text


def test_no_steps_is_zero() -> None:
    result = _accountant().result(DELTA, worst_case_epsilon=0.0)
    assert result.epsilon == 0.0 and result.steps == 0


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(noise_multiplier=0.0),
        dict(sample_rate=0.0),
        dict(sample_rate=1.5),
        dict(clip_norm=-1.0),
        dict(total_steps=0),
        dict(confidence=1.0),
        dict(orders=[1, 2]),
        dict(orders=[2.5]),
    ],
)
def test_bad_settings_are_privacy_errors(kwargs: dict) -> None:
    with pytest.raises(PrivacyError):
        _accountant(**kwargs)


@pytest.mark.parametrize(
    "distances",
    [
        np.array([0.1, 0.2]),  # too few pairs
        np.array([[0.1, 0.2, 0.3]]),  # not 1-D
        np.array([0.1, -0.2, 0.3]),
        np.array([0.1, np.nan, 0.3]),
        np.array([0.1, 0.2, 2.5 * CLIP]),  # unclipped
    ],
)
def test_bad_distances_are_privacy_errors(distances: np.ndarray) -> None:
    with pytest.raises(PrivacyError):
        _accountant().observe_step(distances)


def test_more_steps_than_declared_is_refused() -> None:
    acc = _accountant(total_steps=2)
    acc.observe_step(_distances(5))
    acc.observe_step(_distances(6))
    with pytest.raises(PrivacyError, match="total_steps"):
        acc.observe_step(_distances(7))
