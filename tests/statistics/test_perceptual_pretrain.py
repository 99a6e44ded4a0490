"""Generator pre-training on the declared public set (issue 24): it costs nothing, it reads
the public set only (never the private records), and its targets are the public set's own
exact statistics.

Small real data: scikit-learn's 8x8 digits, the training part private and the test part the
declared public set.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import torch

from dpforge.data.arrays import ArrayData
from dpforge.datasets.images import load_digits_images
from dpforge.statistics import perceptual
from dpforge.statistics.features import FeatureAnchorConfig, exact_embedding
from dpforge.statistics.moments import principal_subspace
from dpforge.synthesizer import Synthesizer

FAST = FeatureAnchorConfig(statistic="auto", steps=20, batch_size=100)


@pytest.fixture(scope="module")
def digits():
    train, test, schema = load_digits_images()
    return train, ArrayData(test.values, test.labels), schema


def _fit(schema, data, public, anchor):
    return Synthesizer(
        schema, epsilon=3.0, delta=1e-4, seed=0, progress=False, anchor=anchor,
        public_data=public,
    ).fit(data)  # fmt: skip


def test_pretraining_is_charged_nothing_and_changes_the_generator(digits):
    train, public, schema = digits
    plain = _fit(schema, train, public, FAST)
    pre = _fit(schema, train, public, replace(FAST, pretrain_steps=20))
    names = [e.name for e in plain.ledger_.entries]
    assert [e.name for e in pre.ledger_.entries] == names  # no entry for the public set
    assert pre.privacy_spent().epsilon == pytest.approx(plain.privacy_spent().epsilon)
    a, b = plain.sample(20, seed=1).values, pre.sample(20, seed=1).values
    assert a.shape == b.shape and not np.allclose(a, b)


def test_pretraining_reads_the_public_set_not_the_private_records(digits, monkeypatch):
    train, public, schema = digits
    seen = []
    targets = perceptual.public_targets

    def spy(features, public_images, k, subspace, c):
        seen.append(public_images.values.shape[0])
        return targets(features, public_images, k, subspace, c)

    monkeypatch.setattr(perceptual, "public_targets", spy)
    _fit(schema, train, public, replace(FAST, pretrain_steps=5))
    assert seen == [len(public)]  # the public images, once; never the private ones


def test_public_targets_are_the_public_sets_exact_statistics(digits):
    _, public, schema = digits
    scaled = perceptual.public_images(public, schema)
    features = perceptual.PerceptualFeatures(
        perceptual.train_extractor(scaled, torch.Generator().manual_seed(0)), schema.shape
    )
    subspace = principal_subspace(scaled.values, 10, 5, 0.0, 0.5, np.random.default_rng(0))
    embedding, moments = perceptual.public_targets(features, scaled, 10, subspace, 0.5)
    sums, counts = exact_embedding(features, scaled.values, scaled.labels % 10, 10)
    np.testing.assert_allclose(embedding.noisy_sums, sums)
    np.testing.assert_allclose(moments.counts, counts)
    unlabelled = perceptual.PublicImages(scaled.values, None)
    same, _ = perceptual.public_targets(features, unlabelled, 10, subspace, 0.5)
    means = same.class_means()
    np.testing.assert_allclose(means, np.broadcast_to(means.mean(0), means.shape), atol=0.05)


def test_pretraining_without_a_public_set_is_refused():
    with pytest.raises(ValueError, match="public set"):
        FeatureAnchorConfig(statistic="moments", pretrain_steps=10).validate()
