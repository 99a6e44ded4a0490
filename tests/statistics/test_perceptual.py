"""Perceptual-feature anchoring (issue 24): the release's sensitivity measured, the public set
charged nothing and never read as private, every release in the ledger before it runs.

Small real data: scikit-learn's 8x8 digits, the training part private and the test part the
declared public set (unlabelled: the extractor learns rotations).
"""

from __future__ import annotations

import inspect
import math
from collections import Counter

import numpy as np
import pytest
import torch

from dpforge.data.arrays import ArrayData
from dpforge.datasets.images import load_digits_images
from dpforge.errors import DataError, PrivacyError
from dpforge.kinds import perceptual as perceptual_kind
from dpforge.statistics import perceptual
from dpforge.statistics.features import (
    FeatureAnchorConfig,
    embedding_sensitivity,
    exact_embedding,
)
from dpforge.synthesizer import Synthesizer, load

FAST = FeatureAnchorConfig(statistic="auto", steps=20, batch_size=100)


@pytest.fixture(scope="module")
def digits():
    train, test, schema = load_digits_images()
    return train, ArrayData(test.values, None), schema


@pytest.fixture(scope="module")
def features(digits):
    _, public, schema = digits
    scaled = perceptual.public_images(public, schema)
    extractor = perceptual.train_extractor(scaled, torch.Generator().manual_seed(0))
    return perceptual.PerceptualFeatures(extractor, schema.shape)


def test_every_feature_vector_has_norm_at_most_one(features):
    noise = torch.rand(50, 1, 8, 8, generator=torch.Generator().manual_seed(1)) * 2 - 1
    x = torch.cat([noise, -torch.ones(1, 1, 8, 8), torch.ones(1, 1, 8, 8)])
    norms = features(x).norm(dim=1)
    assert (norms <= 1 + 1e-5).all()
    assert norms.max() > 0.99  # layers that are not all zero have norm exactly 1


def test_one_record_moves_the_release_by_at_most_the_sensitivity(digits, features):
    train, _, schema = digits
    x = train.values[:300] / 8.0 - 1.0  # the encoder's scaling of 0..16
    labels = train.labels[:300].astype(int)
    c = 0.5
    sums, counts = exact_embedding(features, x, labels, 10)
    worst = 0.0
    for removed in range(0, 300, 37):  # remove one record, measure the change
        keep = np.arange(300) != removed
        s2, n2 = exact_embedding(features, x[keep], labels[keep], 10)
        change = np.sqrt(((sums - s2) ** 2).sum() + ((c * (counts - n2)) ** 2).sum())
        worst = max(worst, change)
    bound = embedding_sensitivity(c)
    assert worst <= bound + 1e-6
    assert worst > 0.99 * bound  # the bound is attained: it is not loose


class SpyImages:
    """Public images that record which module reads them."""

    def __init__(self, data: ArrayData) -> None:
        self._data, self.readers = data, Counter()

    def _reader(self) -> str:
        return inspect.stack()[2].frame.f_globals.get("__name__", "")

    @property
    def values(self):
        self.readers[self._reader()] += 1
        return self._data.values

    @property
    def labels(self):
        self.readers[self._reader()] += 1
        return self._data.labels


def _fit(schema, data, public, epsilon=3.0):
    return Synthesizer(
        schema, epsilon=epsilon, delta=1e-4, seed=0, progress=False, anchor=FAST,
        public_data=public,
    ).fit(data)  # fmt: skip


def test_public_set_is_charged_nothing_and_read_only_by_its_scaling(digits, tmp_path):
    train, public, schema = digits
    spy = SpyImages(public)
    synth = _fit(schema, train, spy)
    assert set(spy.readers) == {"dpforge.statistics.perceptual"}
    names = [entry.name for entry in synth.ledger_.entries]
    assert len(names) == 4 and names[-1].startswith("anchor: mean embeddings of public")
    assert not any("public set" in name for name in names)
    assert synth.privacy_spent().epsilon == pytest.approx(3.0, rel=1e-3)
    samples = synth.sample(5, seed=1).values
    assert samples.shape == (5, 1, 8, 8)
    synth.save(tmp_path / "model")  # the generator alone: no extractor, no public image
    assert np.array_equal(load(tmp_path / "model").sample(5, seed=1).values, samples)
    assert set(spy.readers) == {"dpforge.statistics.perceptual"}


def test_every_release_is_in_the_ledger_before_it_runs(digits, monkeypatch):
    train, public, schema = digits
    seen: dict[str, int] = {}
    ledgers = []
    plan = perceptual_kind.plan_releases

    def planned(k, target, ledger):
        ledgers.append(ledger)
        return plan(k, target, ledger)

    def watch(name, function):
        def run(*args, **kwargs):
            seen[name] = len(ledgers[0])
            return function(*args, **kwargs)

        monkeypatch.setattr(perceptual_kind, name, run)

    monkeypatch.setattr(perceptual_kind, "plan_releases", planned)
    for name in ("principal_subspace", "class_moments", "measure_embedding"):
        watch(name, getattr(perceptual_kind, name))
    _fit(schema, train, public)
    assert seen == {name: 4 for name in seen} and len(seen) == 3  # count + 3 planned first


def test_public_set_of_another_shape_or_kind_is_refused(digits):
    train, public, schema = digits
    wrong = ArrayData(np.zeros((200, 1, 6, 6)), None)
    with pytest.raises(DataError, match="same shape"):
        _fit(schema, train, wrong)
    with pytest.raises(PrivacyError, match="perceptual anchoring only"):
        Synthesizer(
            schema, epsilon=3.0, public_data=public,
            anchor=FeatureAnchorConfig(statistic="moments"),
        ).fit(train)  # fmt: skip


def test_perceptual_anchoring_without_a_public_set_is_refused(digits):
    train, _, schema = digits
    anchor = FeatureAnchorConfig(statistic="perceptual")
    with pytest.raises(PrivacyError, match="public image set"):
        Synthesizer(schema, epsilon=3.0, anchor=anchor).fit(train)


def test_moment_loss_is_zero_at_the_released_moments():
    rng = np.random.default_rng(0)
    x = torch.as_tensor(rng.uniform(-1, 1, (40, 1, 4, 4)), dtype=torch.float32)
    labels = torch.arange(40) % 2
    basis = np.linalg.qr(rng.normal(size=(16, 3)))[0]
    z = x.flatten(1).double().numpy() / math.sqrt(16) @ basis
    y = labels.numpy()
    from dpforge.statistics.moments import ClassMoments, Subspace

    moments = ClassMoments(
        np.stack([z[y == k].sum(0) for k in (0, 1)]),
        np.stack([z[y == k].T @ z[y == k] for k in (0, 1)]),
        np.array([20.0, 20.0]),
    )
    loss = perceptual.MomentLoss(Subspace(basis, np.zeros(16)), moments)
    assert float(loss(x, labels)) < 1e-8
    assert float(loss(x * 0.5, labels)) > 0.1
