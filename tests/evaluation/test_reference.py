"""Label fidelity and the Fréchet distance of dpforge.evaluation.reference."""

from __future__ import annotations

import numpy as np
import pytest

from dpforge.evaluation.reference import frechet_distance, inception_score, label_fidelity


def test_label_fidelity_overall_and_per_class():
    requested = np.array([0, 0, 0, 0, 1, 1, 2, 2])
    predicted = np.array([0, 0, 0, 1, 1, 0, 2, 2])
    result = label_fidelity(predicted, requested, ("a", "b", "c"))
    assert result.value == pytest.approx(6 / 8)
    assert result.details["per_class"] == {"a": 0.75, "b": 0.5, "c": 1.0}
    assert result.details["chance"] == pytest.approx(1 / 3)


def test_label_fidelity_of_a_class_never_requested_is_none():
    result = label_fidelity(np.array([0, 0]), np.array([0, 0]), ("a", "b"))
    assert result.details["per_class"] == {"a": 1.0, "b": None}


def test_frechet_distance_is_zero_for_one_sample_and_the_mean_gap_for_a_shift():
    rng = np.random.default_rng(0)
    a = rng.normal(size=(5000, 3))
    assert frechet_distance(a, a) == pytest.approx(0.0, abs=1e-6)
    shift = np.array([1.0, -2.0, 0.5])
    assert frechet_distance(a, a + shift) == pytest.approx(float(shift @ shift), rel=1e-6)


def test_frechet_distance_of_two_gaussians_matches_the_closed_form():
    """N(0, I) vs N(0, 4 I) in d dims: trace(I + 4I - 2 * 2I) = d."""
    rng = np.random.default_rng(1)
    a = rng.normal(size=(200_000, 2))
    b = 2.0 * rng.normal(size=(200_000, 2))
    assert frechet_distance(a, b) == pytest.approx(2.0, abs=0.05)


def test_inception_score_bounds_and_pinned_value():
    k = 4
    confident_even = np.eye(k)[np.arange(400) % k]  # sure of a class, classes evenly spread
    assert inception_score(confident_even) == pytest.approx(k, rel=1e-6)
    assert inception_score(np.full((100, k), 1.0 / k)) == pytest.approx(1.0)  # no opinion
    assert inception_score(np.tile(np.eye(k)[0], (50, 1))) == pytest.approx(1.0)  # one class only
    # two images, p = (0.9, 0.1) and (0.1, 0.9): marginal (0.5, 0.5), KL = 0.9 ln 1.8 + 0.1 ln 0.2
    value = inception_score(np.array([[0.9, 0.1], [0.1, 0.9]]))
    assert value == pytest.approx(np.exp(0.9 * np.log(1.8) + 0.1 * np.log(0.2)), rel=1e-9)
