"""The weight of the class counts in the series release (``FeatureAnchorConfig.count_weight``,
:func:`dpforge.statistics.features.noise_optimal_count_weight`): the series default is the
weight that minimises the released class mean's squared error for its map, measured over many
releases (it beats weights on either side of it); changing one record still moves the release
by exactly sqrt(1 + c^2), the sensitivity the noise is calibrated to; a fitted model's ledger
holds the one Gaussian release and its folder records the weight."""

from __future__ import annotations

import json
import math
from dataclasses import replace

import numpy as np
import pytest
from tests.statistics.test_series_moved import FAST, fitted  # noqa: F401  (the fitted model fixture)

import dpforge
from dpforge.kinds.feature_defaults import feature_anchor_defaults, kind_views
from dpforge.privacy.release_noise import grid_event
from dpforge.statistics.array_anchor import feature_map
from dpforge.statistics.features import (
    embedding_sensitivity,
    exact_embedding,
    measure_embedding,
    noise_optimal_count_weight,
)


def _curves(per_class: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    labels = np.repeat([0, 1], per_class)
    centre = np.where(labels == 0, -0.5, 0.5)[:, None, None]
    return np.tanh(rng.normal(centre, 0.4, (len(labels), 1, 24))), labels


def test_the_series_default_weight_is_the_noise_optimal_one_for_its_map():
    config = feature_anchor_defaults("timeseries")
    dim = 2 * config.n_features * len(config.views)  # 12,000
    assert config.count_weight == pytest.approx(noise_optimal_count_weight(dim), abs=0.01)
    assert feature_anchor_defaults("image").count_weight == 0.5  # images keep theirs
    assert noise_optimal_count_weight(10_000, 0.01) == pytest.approx(0.1 / math.sqrt(10))
    with pytest.raises(ValueError):
        noise_optimal_count_weight(0)


def test_the_optimal_weight_gives_the_smallest_measured_error_of_the_class_means():
    config = replace(FAST, n_features=200)  # D = 200 x 2 x 3 views = 1,200
    features = feature_map(kind_views("timeseries"), (1, 24), config, 3)
    x, labels = _curves(80)
    sums, counts = exact_embedding(features, x, labels, 2)
    exact = sums / counts[:, None]
    mean_sq = float(np.min((exact**2).sum(axis=1)))
    best = noise_optimal_count_weight(features.dim, mean_sq)
    errors = {}
    for c in (best / 4, best, 0.5, 1.0):
        rng = np.random.default_rng(1)
        draws = [measure_embedding(features, x, labels, 2, 1.0, c, rng) for _ in range(100)]
        errors[c] = np.mean([((e.class_means() - exact) ** 2).sum() for e in draws])
    # the predicted ratios are 1.12 (best / 4), 1.21 (0.5) and 1.90 (1.0) with one draw's
    # relative std about sqrt(2 / 2,400) = 0.03, over 100 draws 0.003
    assert errors[best] < 0.95 * min(errors[best / 4], errors[0.5])
    assert errors[0.5] < errors[1.0]


def test_changing_one_record_moves_the_default_release_by_exactly_the_sensitivity():
    c = feature_anchor_defaults("timeseries").count_weight
    features = feature_map(kind_views("timeseries"), (1, 24), replace(FAST, count_weight=c), 5)
    x, labels = _curves(20, seed=2)

    def release(xs, ys):  # the vector the Gaussian mechanism perturbs: (S_1, S_2, c n_1, c n_2)
        s, n = exact_embedding(features, xs, ys, 2)
        return np.concatenate([s.ravel(), c * n])

    full = release(x, labels)
    changes = [np.linalg.norm(full - release(np.delete(x, i, 0), np.delete(labels, i)))
               for i in range(len(x))]  # fmt: skip
    assert np.allclose(changes, math.sqrt(1 + c**2), atol=1e-5)
    assert embedding_sensitivity(c) == pytest.approx(math.sqrt(1.01))


def test_a_fitted_series_model_records_the_weight_and_one_gaussian_release(fitted, tmp_path):  # noqa: F811
    synth, data = fitted
    release = synth.sample_release_
    assert release.count_weight == FAST.count_weight == 0.1
    anchors = [e for e in synth.ledger_.entries if e.name.startswith("anchor")]
    assert len(anchors) == 1
    assert anchors[0].event == grid_event(release.embedding.noise_multiplier)
    assert release.embedding.noise_multiplier > 0
    # the counts carry noise of std sigma * sqrt(1 + c^2) / c (released / c: estimates of n)
    x, labels = synth.encoder_.transform(data)
    _, counts = exact_embedding(
        feature_map(kind_views("timeseries"), (1, 24), FAST, 0), x, labels, 2
    )
    error = np.abs(release.embedding.noisy_counts - counts)
    bound = 5 * release.embedding.noise_multiplier * embedding_sensitivity(0.1) / 0.1
    assert np.all(error < bound)
    synth.save(tmp_path / "model")
    info = json.loads((tmp_path / "model" / "model.json").read_text())
    assert info["release"]["count_weight"] == 0.1
    assert dpforge.load(tmp_path / "model").sample_release_.count_weight == 0.1
