"""The release noise (dpforge.privacy.release_noise): the seeded discrete Gaussian against
OpenDP's, OpenDP for release runs' counts and sites, float releases on the grid, reproducible
seeded runs, and the ledger's events."""

from __future__ import annotations

import math

import dp_accounting
import numpy as np
import pytest
from scipy import stats
from tests.anchor_tables import labelled_frame

import dpforge
from dpforge.privacy import release_noise
from dpforge.privacy.discrete_gaussian import DiscreteGaussianDpEvent
from dpforge.privacy.release_noise import (
    GRID_SLACK,
    ReleaseGenerator,
    discrete_gaussian,
    grid_event,
    grid_step,
    noise_generator,
    noisy_counts,
    noisy_shares,
    noisy_values,
    release_event,
)

SIGMA = 2.7


def _pmf(sigma: float, support: np.ndarray) -> np.ndarray:
    """The exact N_Z(0, σ²) probabilities of ``support`` (normalised over a wide range)."""
    wide = np.arange(-60 * math.ceil(sigma), 60 * math.ceil(sigma) + 1)
    norm = np.exp(-(wide**2) / (2 * sigma**2)).sum()
    return np.exp(-(support**2) / (2 * sigma**2)) / norm


def _binned(draws: np.ndarray, cut: int) -> np.ndarray:
    """Counts of -cut..cut, with the two tails pooled into the end cells."""
    return np.bincount(np.clip(draws, -cut, cut).astype(int) + cut, minlength=2 * cut + 1)


def test_the_seeded_sampler_draws_the_discrete_gaussian_that_opendp_draws():
    n = 20_000
    seeded = discrete_gaussian(SIGMA, n, np.random.default_rng(5))
    exact = noisy_counts(np.zeros(n), SIGMA, noise_generator(None))
    support = np.arange(-60, 61)
    variance = float((support**2 * _pmf(SIGMA, support)).sum())  # a little below σ²
    for draws in (seeded, exact):
        assert np.array_equal(draws, np.rint(draws))  # integers
        assert abs(draws.mean()) < 4 * SIGMA / math.sqrt(n)
        assert draws.var() == pytest.approx(variance, rel=0.04)
    cut = 8
    table = np.stack([_binned(seeded, cut), _binned(exact, cut)])
    assert stats.chi2_contingency(table).pvalue > 1e-3  # the two samplers agree
    inner = _pmf(SIGMA, np.arange(-cut + 1, cut))
    expected = np.concatenate([[(1 - inner.sum()) / 2], inner, [(1 - inner.sum()) / 2]]) * n
    assert stats.chisquare(_binned(seeded, cut), expected).pvalue > 1e-3  # and the exact pmf


def test_a_release_run_draws_with_opendp_and_a_seeded_run_repeats(monkeypatch):
    calls = []
    real = release_noise._opendp_gaussian.__wrapped__

    def counting(std, atom):
        calls.append(atom)
        return real(std, atom)

    monkeypatch.setattr(release_noise, "_opendp_gaussian", counting)
    counts, sums = np.array([3.0, 0.0, 12.0]), np.array([0.25, -1.5])
    release = noise_generator(None)
    assert isinstance(release, ReleaseGenerator)
    noisy_counts(counts, 2.0, release)
    noisy_values(sums, 2.0, release)  # on the grid: not OpenDP
    noisy_shares(sums, 2.0, release)
    assert calls == [int, float]
    runs = [
        (noisy_counts(counts, 2.0, noise_generator(7)), noisy_values(sums, 2.0, noise_generator(7)))
        for _ in range(2)
    ]
    assert calls == [int, float]  # seeded runs never call OpenDP
    np.testing.assert_array_equal(runs[0][0], runs[1][0])
    np.testing.assert_array_equal(runs[0][1], runs[1][1])
    with pytest.raises(ValueError, match="whole-number counts"):
        noisy_counts(np.array([0.5]), 2.0, release)


@pytest.mark.parametrize(("std", "sensitivity"), [(3.5, 1), (12.25, 3), (40.0, 2)])
def test_the_event_is_the_zcdp_of_what_opendp_draws(std, sensitivity):
    event = release_event(std / sensitivity)
    assert isinstance(event, dp_accounting.ZCDpEvent)
    assert event.rho == pytest.approx(sensitivity**2 / (2 * std**2), rel=1e-9)
    for atom in (int, float):  # OpenDP's own privacy map never exceeds the recorded ρ
        assert release_noise._opendp_gaussian(std, atom).map(atom(sensitivity)) <= event.rho
    assert release_event(0.0) == dp_accounting.NonPrivateDpEvent()


@pytest.mark.slow
def test_a_fit_without_a_seed_draws_its_releases_with_opendp(monkeypatch):
    calls = []
    real = release_noise._opendp_gaussian.__wrapped__
    monkeypatch.setattr(
        release_noise, "_opendp_gaussian", lambda std, atom: calls.append(atom) or real(std, atom)
    )
    frame, schema = labelled_frame(400, seed=3)
    fast = dpforge.AnchorConfig(steps=5, batch_size=64)
    synth = dpforge.Synthesizer(schema, epsilon=2.0, delta=1e-5, progress=False, anchor=fast)
    synth.fit(frame)
    assert calls.count(int) >= 2  # the record count and the marginals, at least
    events = [getattr(entry.event, "event", entry.event) for entry in synth.ledger_.entries]
    assert all(isinstance(e, DiscreteGaussianDpEvent) for e in events)  # counts, tables, scores
    spent = synth.privacy_spent()
    assert spent.accountant == "pld"
    assert 1.99 < spent.epsilon <= 2.0  # calibrated by PLD, as reported


def test_a_float_release_on_the_grid_is_a_discrete_gaussian_of_std_sigma():
    n, std = 200_000, 1.7
    step = grid_step(std)
    assert math.log2(step).is_integer() and 2**40 <= std / step < 2**41
    values = np.linspace(-3.0, 3.0, n)
    noisy = noisy_values(values, std, noise_generator(None))
    units = noisy / step
    assert np.array_equal(units, np.rint(units))  # on the grid: no low-order bits of noise
    noise = noisy - values
    assert abs(noise.mean()) < 4 * std / math.sqrt(n)
    assert noise.std() == pytest.approx(std, rel=4 / math.sqrt(2 * n))
    assert stats.kstest(noise / std, "norm").pvalue > 1e-3


def test_the_grid_event_is_pinned_and_covers_the_rounding():
    assert grid_event(1.0).rho == pytest.approx(0.5 * (1 + 2.0**-20) ** 2, rel=1e-11)
    assert grid_event(2.0).rho == 0.5 * (0.5 + GRID_SLACK) ** 2 * (1.0 + 1e-12)
    assert grid_event(0.0) == dp_accounting.NonPrivateDpEvent()
    # one release of N < 2^40 values: sensitivity Δ/γ + sqrt(N) grid units, at most the event's
    std, sensitivity = 3.0, 2.0
    step, most = grid_step(std), math.sqrt(2.0**40)
    rho = (sensitivity / step + most) ** 2 / (2 * (std / step) ** 2)
    assert rho <= grid_event(std / sensitivity).rho


def test_changing_one_record_moves_the_grid_release_by_at_most_the_event_sensitivity():
    std, rng = 0.75, np.random.default_rng(2)
    step = grid_step(std)
    x = rng.uniform(-50, 50, 5_000)
    neighbour = x.copy()
    neighbour[17] += 1.0  # L2 sensitivity 1
    moved = np.rint(neighbour / step) - np.rint(x / step)  # the integers the noise is added to
    n_values = len(x)
    assert np.linalg.norm(moved) <= 1.0 / step + math.sqrt(n_values)
    zero_one = noisy_values(x, std, np.random.default_rng(3)) - x
    assert np.max(np.abs(zero_one)) < 7 * std  # the grid itself moves no value noticeably


def test_a_row_of_a_64x64x3_second_moment_is_not_drawn_by_opendp(monkeypatch):
    sizes = []
    real = release_noise.discrete_gaussian

    def counting(sigma, shape, rng):
        sizes.append(int(np.prod(shape)))
        return real(sigma, shape, rng)

    def refused(*args):
        raise AssertionError("a float release routed to OpenDP's per-value sampler")

    monkeypatch.setattr(release_noise, "discrete_gaussian", counting)
    monkeypatch.setattr(release_noise, "_opendp_gaussian", refused)
    rows = noisy_values(np.zeros((8, 12_288)), 2.0, noise_generator(None))
    assert rows.shape == (8, 12_288) and sizes == [8 * 12_288]  # one vectorised draw
