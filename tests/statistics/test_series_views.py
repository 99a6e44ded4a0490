"""Views of the public random feature map (``FeatureAnchorConfig.views``,
:mod:`dpforge.statistics.feature_views`): every view's features have norm exactly 1, so the
release's sensitivity stays sqrt(1 + c^2) (checked by changing one record and measuring the
change of the release vector); the series default looks at values, differences and local
windows; the legacy map is drawn unchanged; a model folder stores the views and reads them
back, and a folder that names none keeps the legacy map; views that do not apply are refused
before any release."""

from __future__ import annotations

import json
import math
from dataclasses import replace

import numpy as np
import pytest
import torch
from tests.statistics.test_series_moved import FAST, SCHEMA, _curves

import dpforge
from dpforge.errors import PrivacyError
from dpforge.kinds.feature_defaults import feature_anchor_defaults, kind_views
from dpforge.schema.array import ArraySchema, Channel
from dpforge.statistics.array_anchor import feature_map
from dpforge.statistics.feature_views import SERIES_VIEWS, view_blocks
from dpforge.statistics.features import (
    FeatureAnchorConfig,
    embedding_sensitivity,
    exact_embedding,
)
from dpforge.statistics.particles import SampleRelease, release_shapes
from dpforge.synthesizer import Synthesizer

SERIES = kind_views("timeseries")  # the views a series map takes

RICH = replace(FAST, views=("values", "differences", "windows"))
LEGACY = replace(FAST, views=())  # what maps were before views were a setting


@pytest.mark.parametrize(
    ("view", "shape"),
    [(v, s) for v in SERIES_VIEWS for s in [(1, 24), (3, 7), (2, 2)]],
)  # fmt: skip
def test_every_view_gives_features_of_norm_exactly_one(view, shape):
    config = replace(FAST, views=(view, "differences" if view == "values" else "values"))
    features = feature_map(SERIES, shape, config, 3)
    x = torch.rand(50, *shape, generator=torch.Generator().manual_seed(1)) * 2 - 1
    norms = features(x).double().norm(dim=1)
    assert torch.allclose(norms, torch.ones_like(norms), atol=1e-5)
    assert features.dim == 2 * config.n_features * 2


@pytest.mark.parametrize("views", [RICH.views, ("windows",)])
def test_changing_one_record_moves_the_release_by_exactly_the_sensitivity(views):
    config = replace(FAST, views=views)
    features = feature_map(SERIES, (1, 24), config, 5)
    rng = np.random.default_rng(0)
    x, labels = np.tanh(rng.normal(0, 1, (41, 1, 24))), rng.integers(0, 2, 41)
    c = config.count_weight

    def release(xs, ys):  # the vector the Gaussian mechanism perturbs: (S_1, S_2, c n_1, c n_2)
        sums, counts = exact_embedding(features, xs, ys, 2)
        return np.concatenate([sums.ravel(), c * counts])

    full = release(x, labels)
    changes = [np.linalg.norm(full - release(np.delete(x, i, 0), np.delete(labels, i)))
               for i in range(len(x))]  # fmt: skip
    # every record moves it by exactly sqrt(1 + c^2): its feature vector has norm 1
    assert np.allclose(changes, embedding_sensitivity(c), atol=1e-5)
    assert embedding_sensitivity(c) == pytest.approx(math.sqrt(1 + c**2))


def test_the_series_default_looks_at_values_differences_and_local_windows():
    assert feature_anchor_defaults("timeseries").views == ("values", "differences", "windows")
    assert feature_anchor_defaults("image").views == ()  # the pixels


def test_the_legacy_map_is_drawn_unchanged_and_new_views_come_after_it():
    x = torch.linspace(-1, 1, 240).reshape(10, 1, 24)
    legacy = feature_map(SERIES, (1, 24), LEGACY, 11)
    named = feature_map(SERIES, (1, 24), replace(FAST, views=("values", "differences")), 11)
    richer = feature_map(SERIES, (1, 24), RICH, 11)
    assert legacy.views == ("values", "differences")
    assert torch.equal(legacy(x), named(x))
    for old, new in zip(legacy.frequencies, richer.frequencies[:2], strict=True):
        assert torch.equal(old, new)  # the same draws; only the 1/sqrt(V) scale differs
    assert torch.allclose(richer(x)[:, : legacy.dim] * math.sqrt(3 / 2), legacy(x), atol=1e-6)


def test_a_window_frequency_acts_on_its_own_window_only():
    features = feature_map(SERIES, (2, 24), replace(FAST, views=("windows",)), 0)
    w = features.frequencies[0]
    blocks = view_blocks("windows", (2, 24))
    assert sum(blocks) == w.shape[1] and len(blocks) == 7  # 6 steps every 3 over 24 steps
    support = [tuple(np.flatnonzero(row.numpy()) // 12) for row in w]  # 12 = 2 channels x 6
    assert all(len(set(s)) == 1 for s in support)  # one window per frequency
    assert {s[0] for s in support} == set(range(7))  # every window has frequencies


@pytest.fixture(scope="module")
def rich_fit():
    synth = Synthesizer(SCHEMA, epsilon=3.0, delta=1e-4, seed=0, progress=False, anchor=RICH)
    return synth.fit(_curves(200, 1))


def test_a_folder_stores_its_views_and_reads_them_back(rich_fit, tmp_path):
    release = rich_fit.sample_release_
    assert release.map_views == RICH.views
    assert release.embedding.noisy_sums.shape[1] == 2 * RICH.n_features * 3
    rich_fit.save(tmp_path / "model")
    info = json.loads((tmp_path / "model" / "model.json").read_text())
    assert info["release"]["views"] == list(RICH.views)
    loaded = dpforge.load(tmp_path / "model")
    assert loaded.sample_release_.map_views == RICH.views
    x = torch.linspace(-1, 1, 48).reshape(2, 1, 24)
    labels = torch.tensor([0, 1])
    assert float(loaded.sample_release_.loss()(x, labels)) == float(release.loss()(x, labels))
    assert np.array_equal(loaded.sample(50, seed=2).values, rich_fit.sample(50, seed=2).values)


def test_a_release_that_names_no_views_keeps_the_legacy_map(rich_fit):
    info = rich_fit.sample_release_.to_json()
    del info["views"]  # what a folder saved before views were a setting holds
    e = FAST.n_features * 2 * 2
    tensors = {"noisy_sums": torch.zeros(2, e, dtype=torch.float64),
               "noisy_counts": torch.ones(2, dtype=torch.float64)}  # fmt: skip
    old = SampleRelease.from_parts(info, tensors, SERIES)
    assert old.map_views == ("values", "differences") and "views" not in old.to_json()
    assert release_shapes(info, SCHEMA, SERIES)["noisy_sums"] == (2, e)
    legacy = feature_map(SERIES, (1, 24), LEGACY, old.feature_seed)
    x = torch.linspace(-1, 1, 24).reshape(1, 1, 24)
    assert torch.equal(old.loss().features(x), legacy(x))


def test_a_map_of_images_refuses_the_series_views():
    """The kind's views are checked wherever its map is drawn or rebuilt (a stored release
    naming series views for an image model is refused when its loss is rebuilt)."""
    with pytest.raises(ValueError, match="images take the view 'values' only"):
        feature_map(kind_views("image"), (1, 8, 8), RICH, 0)
    assert feature_map(SERIES, (1, 24), RICH, 0).views == RICH.views


@pytest.mark.parametrize(
    ("anchor", "schema", "match"),
    [
        (replace(FAST, views=("values", "bends")), SCHEMA, "views must be distinct"),
        (replace(FAST, views=("values", "values")), SCHEMA, "views must be distinct"),
        (replace(FAST, views=("values", "differences")),
         replace(SCHEMA, shape=(1, 1)), "length >= 2"),
        (FeatureAnchorConfig(statistic="embedding", views=("values", "windows")),
         ArraySchema("image", (1, 8, 8), (Channel("px", 0.0, 1.0),)), "images take"),
        (FeatureAnchorConfig(statistic="moments", views=("values",)),
         ArraySchema("image", (1, 8, 8), (Channel("px", 0.0, 1.0),)), "apply to the random"),
    ],
)  # fmt: skip
def test_views_that_do_not_apply_are_refused_before_any_release(anchor, schema, match):
    with pytest.raises(PrivacyError, match=match):
        Synthesizer(schema, epsilon=3.0, delta=1e-4, progress=False, anchor=anchor).fit(
            _curves(20, 0) if schema.kind == "timeseries" else None
        )


def test_a_folder_saved_with_the_legacy_map_names_no_views_and_loads_it(tmp_path):
    synth = Synthesizer(SCHEMA, epsilon=3.0, delta=1e-4, seed=1, progress=False, anchor=LEGACY)
    synth.fit(_curves(120, 2)).save(tmp_path / "old")
    info = json.loads((tmp_path / "old" / "model.json").read_text())
    assert "views" not in info["release"]  # what every folder saved before views holds
    loaded = dpforge.load(tmp_path / "old")
    assert loaded.sample_release_.map_views == ("values", "differences")
    assert np.array_equal(loaded.sample(40, seed=3).values, synth.sample(40, seed=3).values)
