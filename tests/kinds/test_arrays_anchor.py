"""Feature anchoring end to end on real data at small scale: scikit-learn's 8x8 digits and
sktime's ItalyPowerDemand.

The conditioning check: a classifier trained on the REAL training images must label the
conditional samples with the class they were asked for (label fidelity) far above chance.
Before feature anchoring, ``Synthesizer(schema)`` on images refused ``anchor`` for arrays and
trained the GAN alone, whose conditional samples at this budget are labelled as asked about
as often as chance allows.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
import torch
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import LogisticRegression

from dpforge.datasets.images import load_digits_images
from dpforge.datasets.series import load_italy_power_demand
from dpforge.errors import PrivacyError
from dpforge.kinds.feature_defaults import feature_anchor_defaults
from dpforge.methods.dpcgan import DPCGANConfig
from dpforge.statistics.anchor import AnchorConfig
from dpforge.statistics.features import FeatureAnchorConfig
from dpforge.synthesizer import Synthesizer, load, resolve_anchor

pytestmark = pytest.mark.slow

FAST = FeatureAnchorConfig(
    statistic="embedding", n_features=500, steps=150, batch_size=200, lr=5e-3
)


@pytest.fixture(scope="module")
def digits():
    train, test, schema = load_digits_images()
    flat = train.values.reshape(len(train), -1) / 16.0
    reference = LogisticRegression(max_iter=2000).fit(flat, train.labels.astype(int))
    return train, test, schema, reference


def _fidelity(reference, samples) -> np.ndarray:
    predicted = reference.predict(samples.values.reshape(len(samples), -1) / 16.0)
    requested = samples.labels.astype(int)
    return np.array([(predicted[requested == k] == k).mean() for k in range(10)])


def _fit(schema, data, epsilon, anchor=FAST, **options):
    return Synthesizer(
        schema, epsilon=epsilon, delta=1e-4, seed=0, progress=False, anchor=anchor, **options
    ).fit(data)


def test_non_private_anchored_samples_have_their_label(digits):
    train, _, schema, reference = digits
    synth = _fit(schema, train, math.inf)
    per_class = _fidelity(reference, synth.sample(500, seed=1))
    assert per_class.mean() > 0.8  # chance is 0.1
    assert per_class.min() > 0.5


def test_private_anchoring_is_one_ledger_release_and_keeps_the_labels(digits, tmp_path):
    train, test, schema, reference = digits
    synth = _fit(schema, train, 10.0)
    entries = synth.ledger_.entries
    names = [e.name.split(":")[0] for e in entries]  # the record count is released first
    assert names[0].startswith("record count") and names[1:] == ["anchor"]
    assert synth.plan_.steps == 0
    assert synth.privacy_spent().epsilon == pytest.approx(10.0, rel=1e-3)
    samples = synth.sample(500, seed=1)
    assert _fidelity(reference, samples).mean() > 0.7
    tstr = LogisticRegression(max_iter=2000).fit(
        samples.values.reshape(500, -1) / 16.0, samples.labels.astype(int)
    )
    accuracy = tstr.score(test.values.reshape(len(test), -1) / 16.0, test.labels.astype(int))
    assert accuracy > 0.7
    again = load(synth.save(tmp_path / "model")).sample(20, conditions={"label": "3"}, seed=4)
    np.testing.assert_allclose(
        again.values, synth.sample(20, conditions={"label": "3"}, seed=4).values, atol=1e-5
    )


def test_anchoring_refined_by_the_discriminator_splits_the_budget(digits):
    train, _, schema, _ = digits
    config = DPCGANConfig(
        batch_size=32, generator_net="mlp", generator_hidden=(32,), latent_dim=16,
        discriminator_net="mlp", discriminator_hidden=(32,),
    )  # fmt: skip
    anchor = replace(FAST, share=0.5, n_features=200, steps=30, batch_size=100)
    synth = _fit(schema, train, 20.0, anchor=anchor, method_options=config, epochs=2.5)
    names = [e.name for e in synth.ledger_.entries][1:]  # after the record count
    assert names[0].startswith("anchor") and names[1].startswith("dpcgan")
    assert synth.plan_.steps > 0
    assert synth.privacy_spent().epsilon <= 20.0 * (1 + 1e-9)


def test_images_anchor_on_moments_by_default_two_releases_no_training(digits, tmp_path):
    """The default for images: per-class Gaussians in a DP principal subspace."""
    train, test, schema, reference = digits
    synth = Synthesizer(schema, epsilon=10.0, delta=1e-4, seed=0, progress=False).fit(train)
    names = [e.name for e in synth.ledger_.entries][1:]  # after the record count
    assert [n.split(":")[0] for n in names] == ["anchor", "anchor"]
    assert "principal subspace" in names[0] and "covariance" in names[1]
    assert synth.plan_.steps == 0 and synth.config_.generator_net == "gaussian"
    assert synth.privacy_spent().epsilon == pytest.approx(10.0, rel=1e-3)
    samples = synth.sample(1000, seed=1)
    assert _fidelity(reference, samples).mean() > 0.7  # chance 0.1; 0.77 measured
    tstr = LogisticRegression(max_iter=2000).fit(
        samples.values.reshape(1000, -1) / 16.0, samples.labels.astype(int)
    )
    accuracy = tstr.score(test.values.reshape(len(test), -1) / 16.0, test.labels.astype(int))
    assert accuracy > 0.8  # 0.88 measured; the 1.0 non-private 0.94
    again = load(synth.save(tmp_path / "model")).sample(20, conditions={"label": "3"}, seed=4)
    np.testing.assert_allclose(
        again.values, synth.sample(20, conditions={"label": "3"}, seed=4).values, atol=1e-5
    )


DEVICES = [
    "cpu",
    pytest.param(
        "cuda",
        marks=pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device"),
    ),
]


@pytest.mark.parametrize("device", DEVICES)
def test_moments_refined_by_the_discriminator(digits, device):
    """On CUDA too: the refinement's generated labels are drawn on the run's device (a CUDA
    run once failed drawing them from a prior kept on the CPU)."""
    train, _, schema, _ = digits
    config = DPCGANConfig(batch_size=32, discriminator_net="mlp", discriminator_hidden=(32,))
    anchor = FeatureAnchorConfig(statistic="moments", rank=10, share=0.5)
    synth = _fit(
        schema, train, 20.0, anchor=anchor, method_options=config, epochs=2.5, device=device
    )
    names = [e.name.split(":")[0] for e in synth.ledger_.entries][1:]  # after the count
    assert names == ["anchor", "anchor", "dpcgan"]
    assert synth.config_.latent_dim == 10 and synth.plan_.steps > 0
    assert synth.privacy_spent().epsilon <= 20.0 * (1 + 1e-9)
    assert np.isfinite(synth.sample(10, seed=0).values).all()


def test_moments_refuse_a_generator_of_another_family(digits):
    train, _, schema, _ = digits
    config = DPCGANConfig(generator_net="conv")
    anchor = FeatureAnchorConfig(statistic="moments")
    with pytest.raises(PrivacyError, match="statistic='embedding'"):
        _fit(schema, train, 10.0, anchor=anchor, method_options=config)


def test_series_anchoring_at_eps_3_classifies_real_curves():
    train, test, schema = load_italy_power_demand()
    config = DPCGANConfig(generator_net="mlp", generator_hidden=(64, 64), latent_dim=16)
    anchor = FeatureAnchorConfig(n_features=500, steps=200, batch_size=200, lr=5e-3)
    synth = _fit(schema, train, 3.0, anchor=anchor, method_options=config)
    names = [e.name for e in synth.ledger_.entries]
    assert names[-1].startswith("anchor") and len(names) >= 2  # the DP value range first
    assert synth.privacy_spent().epsilon <= 3.0 * (1 + 1e-9)
    samples = synth.sample(len(train), seed=2)
    forest = RandomForestClassifier(n_estimators=100, random_state=0)
    forest.fit(samples.values.reshape(len(samples), -1), samples.labels)
    accuracy = forest.score(test.values.reshape(len(test), -1), test.labels)
    assert accuracy > 0.85, accuracy


def test_series_defaults_anchor_the_upsampling_generator_on_narrow_kernels():
    """What a user gets for series: the 1-D convolutional generator and the series bandwidths
    (here with fewer features and steps to keep the test fast), and real test curves
    classified from its samples."""
    train, test, schema = load_italy_power_demand()
    defaults = resolve_anchor("auto", schema)
    assert defaults == feature_anchor_defaults("timeseries")
    assert defaults.generator_net == "conv" and max(defaults.bandwidths) < 0.7
    assert resolve_anchor("auto", load_digits_images()[2]) == feature_anchor_defaults("image")
    assert feature_anchor_defaults("image").statistic == "moments"
    anchor = replace(defaults, n_features=500, steps=200, batch_size=200, lr=5e-3)
    synth = _fit(schema, train, 3.0, anchor=anchor)
    assert type(synth.generator_).__name__ == "Conv1dGenerator"
    assert synth.privacy_spent().epsilon <= 3.0 * (1 + 1e-9)
    samples = synth.sample(len(train), seed=2)
    forest = RandomForestClassifier(n_estimators=100, random_state=0)
    forest.fit(samples.values.reshape(len(samples), -1), samples.labels)
    assert forest.score(test.values.reshape(len(test), -1), test.labels) > 0.85


def test_anchor_kinds_are_checked(digits):
    train, _, schema, _ = digits
    with pytest.raises(PrivacyError, match="AnchorConfig.*is for tables"):
        _fit(schema, train, 1.0, anchor=AnchorConfig())
    with pytest.raises(PrivacyError, match="random-feature embeddings alone"):
        _fit(schema, train, 1.0, epochs=3)


def test_share_zero_is_the_discriminator_alone(digits):
    train, _, schema, _ = digits
    config = DPCGANConfig(
        batch_size=32, generator_net="mlp", generator_hidden=(32,), latent_dim=16,
        discriminator_net="mlp", discriminator_hidden=(32,),
    )  # fmt: skip
    synth = _fit(
        schema, train, 20.0, anchor=FeatureAnchorConfig(share=0.0), method_options=config,
        epochs=2.5,
    )  # fmt: skip
    assert synth.anchor_ is None
    assert [e.name.split(":")[0] for e in synth.ledger_.entries][1:] == ["dpcgan"]
