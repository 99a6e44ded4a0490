"""The random feature map, the embedding release's sensitivity and noise, and its ledger entry."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from dpforge.kinds.feature_defaults import kind_views
from dpforge.privacy.ledger import PrivacyLedger
from dpforge.privacy.release_noise import grid_event
from dpforge.statistics.array_anchor import (
    EmbeddingLoss,
    anchor_target,
    feature_map,
    plan_embedding,
)
from dpforge.statistics.features import (
    FeatureAnchorConfig,
    RandomFeatures,
    embedding_sensitivity,
    exact_embedding,
    measure_embedding,
)

CONFIG = FeatureAnchorConfig(n_features=300)


@pytest.mark.parametrize(("shape", "kind"), [((1, 8, 8), "image"), ((2, 24), "timeseries")])
def test_every_feature_vector_has_norm_one(shape, kind):
    features = feature_map(kind_views(kind), shape, CONFIG, seed=5)
    x = torch.rand(50, *shape) * 2 - 1
    x[0] = 1.0  # extremes too
    norms = torch.linalg.vector_norm(features(x), dim=1)
    torch.testing.assert_close(norms, torch.ones(50), atol=1e-5, rtol=0)
    assert features.dim == 2 * 300 * (2 if kind == "timeseries" else 1)


def test_feature_map_depends_on_the_seed_only():
    x = torch.rand(4, 1, 8, 8)
    a = feature_map(kind_views("image"), (1, 8, 8), CONFIG, seed=1)(x)
    b = feature_map(kind_views("image"), (1, 8, 8), CONFIG, seed=1)(x)
    c = feature_map(kind_views("image"), (1, 8, 8), CONFIG, seed=2)(x)
    torch.testing.assert_close(a, b)
    assert not torch.allclose(a, c)


def test_series_features_see_the_shape_not_only_the_level():
    """Two curves with the same values in another order differ only in their differences."""
    features = RandomFeatures((1, 6), ("differences",), CONFIG, torch.Generator().manual_seed(0))
    up = torch.tensor([[[0.0, 0.2, 0.4, 0.6, 0.8, 1.0]]])
    zigzag = torch.tensor([[[0.0, 0.6, 0.2, 0.8, 0.4, 1.0]]])
    assert torch.linalg.vector_norm(features(up) - features(zigzag)) > 0.3


def test_one_record_moves_the_statistic_by_exactly_the_sensitivity():
    """Removing one record changes (sums, c * counts) by sqrt(1 + c^2) in L2: the bound is tight."""
    features = feature_map(kind_views("image"), (1, 8, 8), CONFIG, seed=0)
    rng = np.random.default_rng(0)
    x = rng.uniform(-1, 1, (30, 1, 8, 8))
    y = rng.integers(0, 3, 30)
    c = CONFIG.count_weight
    sums, counts = exact_embedding(features, x, y, 3)
    sums2, counts2 = exact_embedding(features, x[1:], y[1:], 3)
    change = np.concatenate([(sums - sums2).ravel(), c * (counts - counts2)])
    assert np.linalg.norm(change) == pytest.approx(embedding_sensitivity(c), rel=1e-5)
    assert embedding_sensitivity(c) == pytest.approx(math.sqrt(1 + c * c))


def test_noise_std_is_sigma_times_sensitivity():
    """Statistical check: the residuals of one release have std sigma * sqrt(1 + c^2).

    8,400 coordinates: the sample std is within 3.5 % of the truth with probability > 0.999.
    """
    features = feature_map(
        kind_views("image"), (1, 8, 8), FeatureAnchorConfig(n_features=1400), seed=0
    )
    rng = np.random.default_rng(1)
    x = rng.uniform(-1, 1, (40, 1, 8, 8))
    y = rng.integers(0, 3, 40)
    sums, counts = exact_embedding(features, x, y, 3)
    sigma = 2.5
    released = measure_embedding(features, x, y, 3, sigma, 0.5, np.random.default_rng(7))
    residual = np.concatenate(
        [(released.noisy_sums - sums).ravel(), 0.5 * (released.noisy_counts - counts)]
    )
    expected = sigma * math.sqrt(1 + 0.25)
    assert residual.std() == pytest.approx(expected, rel=0.035)
    assert abs(residual.mean()) < 4 * expected / math.sqrt(residual.size)


def test_release_is_planned_in_the_ledger_and_reaches_the_target():
    ledger = PrivacyLedger()
    sigma = plan_embedding(CONFIG, 10, (2.0, 1e-5), ledger)
    assert len(ledger) == 1
    assert ledger.entries[0].event == grid_event(sigma)
    assert ledger.report(1e-5).epsilon == pytest.approx(2.0, rel=1e-3)
    assert ledger.report(1e-5).epsilon <= 2.0 + 1e-9


def test_non_private_release_is_recorded_as_such():
    ledger = PrivacyLedger()
    assert plan_embedding(CONFIG, 2, None, ledger) == 0.0
    assert math.isinf(ledger.report(1e-5).epsilon)


def test_anchor_target_uses_what_the_metadata_really_spent():
    ledger = PrivacyLedger()
    assert anchor_target(4.0, 1e-5, 1.0, ledger) == (4.0, 1e-5)
    assert anchor_target(4.0, 1e-5, 0.5, ledger) == (2.0, 1e-5)
    assert anchor_target(math.inf, 1e-5, 1.0, ledger) is None


def test_embedding_loss_is_zero_at_the_target_and_weighs_classes_equally():
    features = feature_map(kind_views("image"), (1, 4, 4), CONFIG, seed=0)
    rng = np.random.default_rng(0)
    x = rng.uniform(-1, 1, (20, 1, 4, 4))
    y = np.array([0] * 18 + [1] * 2)
    released = measure_embedding(features, x, y, 2, 0.0, 0.5, rng)
    loss = EmbeddingLoss(released, features)
    xt, yt = torch.as_tensor(x, dtype=torch.float32), torch.as_tensor(y)
    assert float(loss(xt, yt)) == pytest.approx(0.0, abs=1e-6)
    moved = xt.clone()
    moved[18:] = -moved[18:]  # the rare class only
    assert float(loss(moved, yt)) > 0.05
