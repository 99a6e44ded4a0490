"""Tests of the DP metadata estimators: events, accuracy at small noise, behaviour under noise."""

from __future__ import annotations

import math
import os
import re
import warnings
from pathlib import Path
from statistics import NormalDist

import dp_accounting
import numpy as np
import pandas as pd
import pytest
from dp_accounting.pld import pld_privacy_accountant

from dpforge.errors import DataError, PrivacyError
from dpforge.privacy.accounting import epsilon as ledger_epsilon
from dpforge.privacy.discrete_gaussian import DiscreteGaussianDpEvent
from dpforge.statistics.dp_stats import (
    DpEstimate,
    DpNoiseWarning,
    _geometric_edges,
    bounds_event,
    dp_bounds,
    dp_categories,
    dp_label_prior,
    gaussian_histogram,
    histogram_event,
    noise_multiplier_for,
)

DATA_DIR = Path(
    os.environ.get(
        "DPFORGE_DATA_DIR", Path(__file__).resolve().parents[2] / ".." / "shared" / "datasets"
    )
)
ADULT = DATA_DIR / "adult" / "adult.data"


@pytest.fixture(scope="module")
def adult() -> pd.DataFrame:
    if not ADULT.exists():
        pytest.skip(f"{ADULT} not found (set DPFORGE_DATA_DIR)")
    return pd.read_csv(ADULT, skipinitialspace=True)


def rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


def coverage(values: np.ndarray, bounds: tuple[float, float]) -> float:
    low, high = bounds
    return float(np.mean((values >= low) & (values <= high)))


def pld_epsilon(event: dp_accounting.DpEvent, delta: float) -> float:
    return pld_privacy_accountant.PLDAccountant().compose(event).get_epsilon(delta)


# --------------------------------------------------------------------------- noise calibration


def test_noise_multiplier_spends_the_share_and_no_more():
    sigma = noise_multiplier_for(1.0, 1e-6, releases=2)
    event = dp_accounting.SelfComposedDpEvent(histogram_event(sigma), 2)
    assert 0.99 <= ledger_epsilon(event, 1e-6) <= 1.0


@pytest.mark.parametrize("rows, at_source", [(3, False), (1, True)])
def test_noise_multiplier_is_calibrated_for_the_zcdp_events(rows, at_source):
    # a person's rows, or noise added at the sites: zCDP events, reported (and calibrated) by RDP
    sigma = noise_multiplier_for(1.0, 1e-6, 2, rows, at_source)
    event = dp_accounting.SelfComposedDpEvent(histogram_event(sigma, rows, at_source), 2)
    assert isinstance(histogram_event(sigma, rows, at_source), dp_accounting.ZCDpEvent)
    assert 0.99 <= ledger_epsilon(event, 1e-6, "rdp") <= 1.0


def test_histogram_events():
    assert histogram_event(2.0) == DiscreteGaussianDpEvent(2.0 * (1 - 1e-12), 1)
    assert histogram_event(2.0, 3) == histogram_event(2.0, 1, True)
    assert histogram_event(2.0, 3).rho == pytest.approx(1 / 8)
    assert histogram_event(0.0) == dp_accounting.NonPrivateDpEvent()
    with pytest.raises(PrivacyError, match="whole number"):
        histogram_event(2.0, 1.5)


def test_noise_multiplier_follows_gaussian_composition():
    # k Gaussian releases with σ are exactly one Gaussian release with σ / sqrt(k).
    one = noise_multiplier_for(0.5, 1e-6, releases=1)
    four = noise_multiplier_for(0.5, 1e-6, releases=4)
    assert four == pytest.approx(2.0 * one, rel=2e-3)


@pytest.mark.parametrize(
    "epsilon, delta, releases",
    [
        (0.0, 1e-6, 1),
        (-1.0, 1e-6, 1),
        (math.inf, 1e-6, 1),
        (1.0, 0.0, 1),
        (1.0, 1.0, 1),
        (1.0, 1e-6, 0),
        (1.0, 1e-6, 1.5),
    ],
)
def test_noise_multiplier_rejects_bad_requests(epsilon, delta, releases):
    with pytest.raises(PrivacyError):
        noise_multiplier_for(epsilon, delta, releases)


# --------------------------------------------------------------------------- gaussian histogram


def test_gaussian_histogram_noise_has_std_sigma():
    counts = np.array([0.0, 5.0, 100.0, 1e4])
    generator = rng(1)
    draws = np.stack([gaussian_histogram(counts, 3.0, generator) for _ in range(20_000)])
    noise = draws - counts
    assert np.array_equal(noise, np.rint(noise))  # the discrete Gaussian: whole numbers
    assert np.abs(noise.mean(axis=0)).max() < 0.1
    np.testing.assert_allclose(noise.std(axis=0), 3.0, rtol=0.03)


def test_gaussian_histogram_draws_the_discrete_gaussian():
    # P[X = x] ∝ exp(-x² / 2σ²) on the integers: observed frequencies at σ = 0.8 (where the
    # discrete and continuous Gaussians differ) match it within 5 standard errors
    sigma, n = 0.8, 40_000
    noise = gaussian_histogram(np.zeros(n), sigma, rng(2))
    support = np.arange(-6, 7)
    mass = np.exp(-(support**2) / (2 * sigma**2))
    mass /= mass.sum()
    observed = np.array([(noise == x).mean() for x in support])
    assert np.all(np.abs(observed - mass) <= 5 * np.sqrt(mass * (1 - mass) / n) + 1e-4)


def test_gaussian_histogram_in_a_release_run_draws_with_opendp(monkeypatch):
    from dpforge.privacy import release_noise

    calls, real = [], release_noise._opendp_gaussian

    def spy(std: float, atom: type):
        calls.append((std, atom))
        return real(std, atom)

    monkeypatch.setattr(release_noise, "_opendp_gaussian", spy)
    counts, rng = np.array([3.0, 0.0, 7.0]), release_noise.noise_generator(None)
    noisy = gaussian_histogram(counts, 2.0, rng, 2)
    assert calls == [(4.0, int)] and np.array_equal(noisy, np.rint(noisy))


def test_gaussian_histogram_refuses_global_randomness():
    with pytest.raises(TypeError):
        gaussian_histogram(np.ones(3), 1.0, None)  # type: ignore[arg-type]
    with pytest.raises(PrivacyError):
        gaussian_histogram(np.ones(3), -1.0, rng())


# --------------------------------------------------------------------------- bounds


def test_bounds_event_is_two_discrete_gaussian_histograms():
    estimate = dp_bounds(np.arange(1000.0), 2.5, rng())
    assert isinstance(estimate, DpEstimate)
    one = DiscreteGaussianDpEvent(2.5 * (1 - 1e-12), 1)
    assert estimate.event == dp_accounting.ComposedDpEvent([one, one])
    assert estimate.extra_delta == 0.0
    person = dp_bounds(np.arange(1000.0), 2.5, rng(), sensitivity=3).event
    assert (
        person
        == bounds_event(2.5, rows=3)
        == dp_accounting.ComposedDpEvent([dp_accounting.ZCDpEvent((1 + 1e-12) / 12.5)] * 2)
    )


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_bounds_of_adult_age(adult, seed):
    age = adult["age"].to_numpy()
    low, high = dp_bounds(age, 2.0, rng(seed)).value
    assert coverage(age, (low, high)) >= 0.97
    assert 0.0 <= low < high <= 128.0
    assert low <= 17.0 and high >= 70.0


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_bounds_of_adult_capital_gain(adult, seed):
    gain = adult["capital-gain"].to_numpy()
    low, high = dp_bounds(gain, 2.0, rng(seed)).value
    assert coverage(gain, (low, high)) >= 0.97
    assert low == 0.0  # 92% of the column is 0: the lower bound is exactly the grid edge 0
    assert 10_000 <= high <= 2**15


def test_bounds_without_noise_and_without_tails_hold_everything():
    values = rng(3).normal(-1234.5, 100.0, size=5000)
    low, high = dp_bounds(values, 0.0, rng(), quantile=0.0).value
    assert coverage(values, (low, high)) == 1.0
    assert high - low < 1.1 * (values.max() - values.min())


def test_bounds_of_negative_values():
    values = rng(4).normal(-1000.0, 10.0, size=5000)
    low, high = dp_bounds(values, 1.0, rng()).value
    assert coverage(values, (low, high)) >= 0.97
    assert -1100.0 < low < high < -900.0


def test_bounds_of_integers():
    values = rng(5).integers(0, 10, size=2000)
    low, high = dp_bounds(values, 1.0, rng()).value
    assert coverage(values, (low, high)) == 1.0
    assert low >= 0.0 and high <= 16.0


@pytest.mark.parametrize("value", [5.0, -5.0, 0.0, 3e9])
def test_bounds_of_equal_values_are_a_tight_nonempty_interval(value):
    low, high = dp_bounds(np.full(1000, value), 1.0, rng()).value
    assert low <= value < high
    assert high - low <= abs(value) / 4 + 1e-3  # a few 1/64ths of a coarse bin


def test_bounds_beyond_the_grid_are_clipped_with_a_warning():
    with pytest.warns(DpNoiseWarning, match="beyond"):
        low, high = dp_bounds(np.full(500, 1e15), 1.0, rng()).value
    assert low < high == 2.0**41


def test_bounds_under_huge_noise_warn_and_return_a_finite_range(adult):
    age = adult["age"].to_numpy()
    with pytest.warns(DpNoiseWarning, match="noise"):
        low, high = dp_bounds(age, 1e6, rng()).value
    assert math.isfinite(low) and math.isfinite(high) and low < high
    assert coverage(age, (low, high)) == 1.0


@pytest.mark.parametrize("values", [[], [42.0], [1.0, 2.0, 3.0], list(range(30))])
def test_bounds_of_tiny_data_do_not_crash(values):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DpNoiseWarning)
        low, high = dp_bounds(np.asarray(values, dtype=float), 1.0, rng()).value
    assert math.isfinite(low) and math.isfinite(high) and low < high


@pytest.mark.parametrize("bad", [[1.0, np.nan], [1.0, np.inf], [[1.0, 2.0]], ["a", "b"]])
def test_bounds_reject_unusable_values(bad):
    with pytest.raises(DataError):
        dp_bounds(np.asarray(bad, dtype=object), 1.0, rng())


def test_bounds_reject_bad_parameters():
    with pytest.raises(ValueError):
        dp_bounds(np.ones(10), 1.0, rng(), quantile=0.5)
    with pytest.raises(PrivacyError):
        dp_bounds(np.ones(10), math.nan, rng())
    with pytest.raises(TypeError):
        dp_bounds(np.ones(10), 1.0, np.random.RandomState(0))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="bins_per_octave"):
        dp_bounds(np.ones(10), 1.0, rng(), bins_per_octave=0)
    with pytest.raises(ValueError, match="widen_octaves"):
        dp_bounds(np.ones(10), 1.0, rng(), widen_octaves=0.0)


def test_bounds_are_deterministic_given_the_generator():
    values = rng(6).lognormal(3.0, 1.0, size=3000)
    assert dp_bounds(values, 3.0, rng(7)).value == dp_bounds(values, 3.0, rng(7)).value


def test_single_histogram_bounds_are_one_histogram_event():
    estimate = dp_bounds(np.arange(1000.0), 2.5, rng(), fine=False, bins_per_octave=4)
    assert estimate.event == histogram_event(2.5) == bounds_event(2.5, fine=False)
    assert bounds_event(2.5) == dp_accounting.ComposedDpEvent([histogram_event(2.5)] * 2)


def test_finer_public_grid_has_the_quarter_octave_edges():
    edges = _geometric_edges(-1, 1, 4)
    quarter = 2.0 ** (np.arange(-4, 5) / 4)
    np.testing.assert_allclose(edges, [-np.inf, *-quarter[::-1], 0.0, *quarter, np.inf])
    np.testing.assert_array_equal(
        _geometric_edges(-1, 1), [-np.inf, -2, -1, -0.5, 0, 0.5, 1, 2, np.inf]
    )


def test_single_histogram_bounds_without_noise_are_the_grid_bins_widened():
    values = np.array([1.1, 1.5, 1.9])  # all in [2^(1/8), 2^(7/8)): quarter-octave bins 0..3
    low, high = dp_bounds(
        values, 0.0, rng(), quantile=0.0, fine=False, bins_per_octave=4, widen_octaves=0.5
    ).value
    # lowest bin [2^0, 2^0.25) and highest [2^0.75, 2^1), each widened by 2 quarter-octaves
    assert low == pytest.approx(2.0**-0.5) and high == pytest.approx(2.0**1.5)


def test_widening_never_crosses_zero():
    values = np.full(500, 2.0**-9.9)  # in the first positive bin of the grid
    low, high = dp_bounds(values, 0.0, rng(), fine=False, bins_per_octave=4, widen_octaves=8).value
    assert low == 0.0 and high > values[0]
    low, high = dp_bounds(-values, 0.0, rng(), fine=False, bins_per_octave=4, widen_octaves=8).value
    assert high == 0.0 and low < -values[0]


def curves(n: int, seed: int) -> np.ndarray:
    """z-normalised daily curves with a morning and an evening peak (like UCR's power demand)."""
    t = np.linspace(0, 2 * np.pi, 24)
    g = rng(seed)
    x = g.normal(0, 1, (n, 1)) * np.sin(t) + g.uniform(0.5, 2, (n, 1)) * np.sin(2 * t + 1)
    x = x + g.normal(0, 0.2, (n, 24))
    return (x - x.mean(1, keepdims=True)) / x.std(1, keepdims=True)


def test_channel_bounds_are_tighter_than_the_two_stage_default_and_clip_little():
    """Statistical: at a series data set's metadata budget (767 records, sigma of one release
    within epsilon 0.3), over 40 draws of the noise, the quarter-octave single histogram keeps
    at least 99 % of the values in every draw and its median width is at most 1.5 times the
    data's range; the two-stage octave default, at the sigma of its four releases, is over 2x."""
    from dpforge.statistics.metadata import channel_bound

    x = curves(767, 0)
    mins, maxs = x.min(1), x.max(1)
    data_width = x.max() - x.min()
    widths, old_widths = [], []
    for seed in range(40):
        g = rng(100 + seed)
        low, high = channel_bound(mins, 16.7, g).value[0], channel_bound(maxs, 16.7, g).value[1]
        assert coverage(x.ravel(), (low, high)) >= 0.99
        widths.append(high - low)
        old_low = dp_bounds(mins, 23.6, g).value[0]
        old_widths.append(dp_bounds(maxs, 23.6, g).value[1] - old_low)
    assert np.median(widths) <= 1.5 * data_width
    assert np.median(old_widths) >= 2.0 * data_width


# --------------------------------------------------------------------------- categories


def test_categories_event_and_threshold_delta():
    estimate = dp_categories(["a", "b", "a"], 4.0, 1e-7, rng())
    assert estimate.event == histogram_event(4.0)
    assert estimate.extra_delta == 1e-7
    person = dp_categories(["a", "b", "a"], 4.0, 1e-7, rng(), max_rows=2)
    assert person.event == histogram_event(4.0, 2)


def test_frequent_categories_are_released_sorted(adult):
    estimate = dp_categories(adult["workclass"], 5.0, 1e-6, rng())
    truth = adult["workclass"].value_counts()
    assert estimate.value == sorted(estimate.value)
    assert set(truth[truth >= 100].index) <= set(estimate.value) <= set(truth.index)


def test_a_single_record_category_is_released_with_probability_threshold_delta():
    # the threshold τ = 2 + σ·Φ⁻¹(1 - δ): a singleton passes with probability P[X ≥ τ - 1]
    # for X ~ N_Z(0, σ²), at most δ; 4000 trials match that exact probability
    sigma, delta, trials = 1.5, 0.05, 4000
    values = ["common"] * 50 + ["rare"]
    generator = rng(8)
    released = sum(
        "rare" in dp_categories(values, sigma, delta, generator).value for _ in range(trials)
    )
    first = math.ceil(1 + sigma * NormalDist().inv_cdf(1 - delta))  # X ≥ τ - 1
    support = np.arange(-40, 41)
    mass = np.exp(-(support**2) / (2 * sigma**2))
    p = mass[support >= first].sum() / mass.sum()
    assert p <= delta
    assert abs(released - trials * p) <= 4 * math.sqrt(trials * p * (1 - p))


def test_a_single_record_category_is_not_released_at_small_delta():
    values = ["common"] * 50 + ["rare"]
    generator = rng(9)
    assert not any("rare" in dp_categories(values, 1.0, 1e-6, generator).value for _ in range(500))


def test_categories_are_strings_and_row_order_does_not_matter():
    values = np.array([3, 1, 2, 1, 3, 3] * 20, dtype=object)
    first = dp_categories(values, 1.0, 1e-6, rng(10)).value
    second = dp_categories(values[::-1], 1.0, 1e-6, rng(10)).value
    assert first == second == ["1", "2", "3"]


@pytest.mark.parametrize("missing", [None, np.nan, pd.NA])
def test_categories_reject_missing_values(missing):
    with pytest.raises(ValueError, match="missing"):
        dp_categories(["a", missing, "b"], 1.0, 1e-6, rng())


def test_categories_reject_bad_threshold_delta():
    with pytest.raises(PrivacyError):
        dp_categories(["a"], 1.0, 0.0, rng())


# --------------------------------------------------------------------------- label prior


def test_label_prior_event():
    assert dp_label_prior([0, 1, 1], [0, 1], 2.0, rng()).event == histogram_event(2.0)
    person = dp_label_prior([0, 1, 1], [0, 1], 2.0, rng(), sensitivity=2).event
    assert person == histogram_event(2.0, 2)


def test_label_prior_is_close_to_the_truth_at_small_noise(adult):
    labels = adult["classification"]
    classes = ["<=50K", ">50K"]
    prior = dp_label_prior(labels, classes, 5.0, rng()).value
    truth = labels.value_counts(normalize=True)[classes].to_numpy()
    assert prior.sum() == pytest.approx(1.0)
    np.testing.assert_allclose(prior, truth, atol=0.01)


def test_label_prior_is_the_normalised_noisy_histogram():
    labels = ["a"] * 300 + ["b"] * 100 + ["c"] * 600
    prior = dp_label_prior(labels, ["a", "b", "c"], 20.0, rng(11), floor=0.001).value
    noisy = gaussian_histogram(np.array([300.0, 100.0, 600.0]), 20.0, rng(11))
    expected = 0.997 * noisy / noisy.sum() + 0.001
    np.testing.assert_allclose(prior, expected, rtol=1e-12)


def test_label_prior_gives_every_class_at_least_the_floor():
    prior = dp_label_prior(["a"] * 100, ["a", "b", "c", "d"], 0.0, rng()).value
    np.testing.assert_allclose(prior[1:], 0.01 / 4)
    assert prior.sum() == pytest.approx(1.0)


def test_label_prior_under_huge_noise_is_still_a_distribution():
    generator = rng(12)
    for _ in range(20):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DpNoiseWarning)
            prior = dp_label_prior([0, 1, 2], [0, 1, 2], 1e6, generator).value
        assert np.all(prior > 0) and prior.sum() == pytest.approx(1.0)


def test_label_prior_rejects_missing_labels_and_repeated_classes():
    # A label outside the classes (a class the DP threshold dropped) is not counted, and is no
    # longer an error that quotes how many there are (issue 13.6).
    assert dp_label_prior(["a", "z"], ["a", "b"], 1.0, rng()).value.shape == (2,)
    with pytest.raises(DataError):
        dp_label_prior(["a", None], ["a", "b"], 1.0, rng())
    with pytest.raises(ValueError):
        dp_label_prior(["a"], ["a", "a"], 1.0, rng())


def test_label_prior_is_deterministic_given_the_generator():
    labels = [0, 1, 1, 2, 2, 2] * 10
    first = dp_label_prior(labels, [0, 1, 2], 3.0, rng(13)).value
    second = dp_label_prior(labels, [0, 1, 2], 3.0, rng(13)).value
    np.testing.assert_array_equal(first, second)


def test_few_records_spread_over_octaves_merge_bins_instead_of_giving_up():
    """455 values spread over 8 octaves at σ = 32: single coarse bins rarely stand out (15 of 20
    draws gave up before merging was added); merged bins do, mostly covering the data."""
    gave_up, covered = 0, 0
    for seed in range(20):
        values = 2.0 ** rng(seed).uniform(-10, -2, size=455)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            low, high = dp_bounds(values, 32.0, rng(100 + seed)).value
        gave_up += any("coarse histogram" in str(w.message) for w in caught)
        covered += coverage(values, (low, high)) >= 0.85
    assert gave_up <= 3
    assert covered >= 15


def test_label_prior_ignores_labels_of_classes_that_were_not_released():
    """Issue 13.6: a class dropped by the DP threshold was reported with its exact count."""
    labels = ["a"] * 60 + ["b"] * 20 + ["rare"] * 45
    estimate = dp_label_prior(labels, ["a", "b"], 0.0, np.random.default_rng(0))
    floor = 0.01 / 2
    expected = (1 - 2 * floor) * np.array([0.75, 0.25]) + floor
    np.testing.assert_allclose(estimate.value, expected)
    with pytest.raises(DataError, match="missing labels") as caught:
        dp_label_prior(["a", None, "b"], ["a", "b"], 1.0, np.random.default_rng(0))
    assert not re.search(r"\d", str(caught.value))
