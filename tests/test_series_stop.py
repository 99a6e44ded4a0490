"""Moving that stops at the noise (``MoveSettings.stop_at_noise``): the predicted noise level of
the release (``SampleRelease.noise_levels``, from public quantities only) matches, within
sampling error, the measured distance between the exact and the released per-class mean
embeddings; moving stops once the loss reaches the level; what it needs is refused without it."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import torch

import dpforge
from dpforge.statistics.array_anchor import feature_map
from dpforge.statistics.features import exact_embedding, measure_embedding
from dpforge.statistics.particles import MoveSettings, SampleRelease, embedding_gap, move_samples
from tests.test_series_moved import FAST, fitted  # noqa: F401  (the fitted model fixture)


@pytest.mark.parametrize(("per_class", "sigma"), [(200, 1.0), (40, 3.0)])
def test_the_predicted_noise_level_matches_the_measured_one(per_class, sigma):
    # D = 400; c = 0.5, where the counts' noise is still a small part of a count (at 0.1, the
    # series default, it would be 75 % of a 40-record class at sigma 3)
    config = replace(FAST, n_features=100, views=("values", "differences"), count_weight=0.5)
    features = feature_map("timeseries", (1, 24), config, 7)
    rng = np.random.default_rng(0)
    labels = np.repeat([0, 1], per_class)
    centre = np.where(labels == 0, -0.5, 0.5)[:, None, None]
    x = np.tanh(rng.normal(centre, 0.4, (len(labels), 1, 24)))
    sums, counts = exact_embedding(features, x, labels, 2)
    exact = sums / counts[:, None]
    measured, predicted = [], []
    for _ in range(200):
        e = measure_embedding(features, x, labels, 2, sigma, config.count_weight, rng)
        release = SampleRelease(
            e, 7, "timeseries", (1, 24), 100, config.bandwidths, config.count_weight
        )
        measured.append(((e.class_means() - exact) ** 2).sum(axis=1))
        predicted.append(release.noise_levels())
    measured, predicted = np.mean(measured, axis=0), np.mean(predicted, axis=0)
    # one draw's squared norm of D = 400 Gaussians has relative std sqrt(2 / 400) = 0.07;
    # over 200 draws 0.005: 3 % is six standard errors (plus the count term's approximation)
    assert measured == pytest.approx(predicted, rel=0.03)
    # D s^2 / n^2 with the exact counts, where the counts' noise is small (at 40 per class and
    # sigma 3 it is 11 % of a count, and 1 / m^2 averages 10 % above 1 / n^2: the released
    # counts are what the level must use)
    if per_class >= 200:
        s2 = sigma**2 * (1 + config.count_weight**2)
        assert predicted == pytest.approx(400 * s2 / per_class**2, rel=0.02)


def test_moving_stops_once_the_loss_reaches_the_level(fitted):  # noqa: F811
    synth, _ = fitted
    loss = synth.sample_release_.loss()
    draws = synth.sample(300, seed=5, move=False)
    x, labels = (torch.as_tensor(a) for a in synth.encoder_.transform(draws))
    full = move_samples(x, labels, loss, MoveSettings())
    plain_gap, full_gap = embedding_gap(x, labels, loss), embedding_gap(full, labels, loss)
    level = (plain_gap + full_gap) / 2
    stopped = move_samples(x, labels, loss, MoveSettings(stop_at_noise=True), np.full(2, level))
    assert full_gap < embedding_gap(stopped, labels, loss) <= level
    high = move_samples(
        x, labels, loss, MoveSettings(stop_at_noise=True), np.full(2, 2 * plain_gap)
    )
    assert torch.allclose(high, x.float().clamp(-0.999, 0.999), atol=1e-5)  # no step taken


def test_the_level_is_stored_and_refused_where_it_cannot_be_computed(fitted, tmp_path):  # noqa: F811
    synth, _ = fitted
    release = synth.sample_release_
    assert release.count_weight == FAST.count_weight
    synth.save(tmp_path / "model")
    loaded = dpforge.load(tmp_path / "model").sample_release_
    assert np.array_equal(loaded.noise_levels(), release.noise_levels())
    with pytest.raises(ValueError, match="count weight"):
        replace(release, count_weight=None).noise_levels()
    x = torch.zeros(4, 1, 24)
    with pytest.raises(ValueError, match="needs noise_levels"):
        move_samples(x, None, release.loss(), MoveSettings(stop_at_noise=True))
    with pytest.raises(ValueError, match="stop_at_noise is False"):
        move_samples(x, None, release.loss(), MoveSettings(), np.ones(2))
