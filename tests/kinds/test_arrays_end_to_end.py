"""Images and time series end to end, at small scale, on real data shipped by installed
packages: scikit-learn's 8x8 digits and sktime's ItalyPowerDemand.

Each data type goes through the same pipeline as tables: check, DP metadata, encode, plan,
train, ledger, save, load, conditional sampling.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpforge.data.arrays import ArrayData
from dpforge.datasets.images import load_digits_images
from dpforge.datasets.series import load_italy_power_demand
from dpforge.errors import DataError, PrivacyError
from dpforge.methods.dpcgan import DPCGANConfig
from dpforge.methods.dpwgan import DPWGANConfig
from dpforge.methods.gswgan import GSWGANConfig
from dpforge.schema.array import Channel
from dpforge.synthesizer import Synthesizer, load

pytestmark = pytest.mark.slow

SMALL_IMAGE = {"generator_channels": (16, 8), "discriminator_channels": (8, 16), "latent_dim": 16}
SMALL_SERIES = {"generator_hidden": (16,), "discriminator_hidden": (32,), "latent_dim": 8}


@pytest.fixture(scope="module")
def digits():
    return load_digits_images()


@pytest.fixture(scope="module")
def italy():
    return load_italy_power_demand()


def _fit(schema, data, method, config, **options):
    # The GAN alone (feature anchoring, the default for arrays, is in test_arrays_anchor.py).
    defaults = {"epsilon": 50.0, "delta": 1e-4, "seed": 0, "anchor": None}
    return Synthesizer(
        schema, method=method, method_options=config, progress=False, **{**defaults, **options}
    ).fit(data)


# About 110 private steps each (the least a run may plan is 100).
@pytest.mark.parametrize(
    ("method", "config", "epochs"),
    [
        ("dpcgan", DPCGANConfig(batch_size=32, **SMALL_IMAGE), 2.5),
        ("dpwgan", DPWGANConfig(batch_size=32, **SMALL_IMAGE), 2.5),
        ("gswgan", GSWGANConfig(batch_size=16, num_discriminators=20, **SMALL_IMAGE), 5.5),
    ],
)
def test_images_fit_sample_save_load(digits, method, config, epochs, tmp_path):
    train, _, schema = digits
    synth = _fit(schema, train, method, config, epochs=epochs)
    report = synth.privacy_spent()
    assert 0 < report.epsilon <= 50.0 + 1e-9
    images = synth.sample(30, conditions={"label": 7}, seed=3)
    assert isinstance(images, ArrayData)
    assert images.values.shape == (30, 1, 8, 8)
    assert images.values.min() >= 0.0 and images.values.max() <= 16.0
    assert set(images.labels) == {"7"}
    folder = synth.save(tmp_path / "model")
    again = load(folder).sample(30, conditions={"label": "7"}, seed=3)
    np.testing.assert_allclose(again.values, images.values, atol=1e-5)


def test_resnet_generator_and_group_norm_critic(digits):
    train, _, schema = digits
    config = DPCGANConfig(
        batch_size=32, generator_net="resnet", discriminator_norm="group", **SMALL_IMAGE
    )
    synth = _fit(schema, train, "dpcgan", config, epochs=2.5)
    assert type(synth.generator_).__name__ == "ResNetGenerator"
    assert synth.sample(4, seed=0).values.shape == (4, 1, 8, 8)


@pytest.mark.parametrize(
    ("method", "config", "epochs"),
    [
        ("dpwgan", DPWGANConfig(batch_size=64, **SMALL_SERIES), 9),
        ("dpwgan", DPWGANConfig(batch_size=64, discriminator_net="conv", **SMALL_SERIES), 9),
        ("dpcgan", DPCGANConfig(batch_size=64, discriminator_net="lstm", **SMALL_SERIES), 9),
        ("dpcgan", DPCGANConfig(batch_size=64, **SMALL_SERIES), 9),
        ("gswgan", GSWGANConfig(batch_size=16, num_discriminators=10, **SMALL_SERIES), 11),
    ],
)
def test_series_fit_sample_save_load(italy, method, config, epochs, tmp_path):
    train, _, schema = italy
    synth = _fit(schema, train, method, config, epochs=epochs)
    assert type(synth.generator_).__name__ == "LSTMGenerator"
    channel = synth.schema_.channels[0]
    assert channel.is_complete  # estimated under DP...
    names = [entry.name for entry in synth.ledger_.entries]
    assert any("lower bound of channel 'demand'" in n for n in names)  # ...and charged
    series = synth.sample(12, conditions={"class": "1"}, seed=0)
    assert series.values.shape == (12, 1, 24)
    assert channel.lower <= series.values.min() and series.values.max() <= channel.upper
    again = load(synth.save(tmp_path / "model")).sample(12, conditions={"class": "1"}, seed=0)
    np.testing.assert_allclose(again.values, series.values, atol=1e-5)


def test_declared_series_range_costs_nothing_for_metadata(italy):
    train, _, schema = italy
    public = schema.with_channels((Channel("demand", -4.0, 4.0),))
    config = DPCGANConfig(batch_size=64, **SMALL_SERIES)
    synth = _fit(public, train, "dpcgan", config, epochs=9)
    # the record count, then the training steps: nothing for metadata
    assert len(synth.ledger_.entries) == 2
    assert synth.ledger_.entries[0].name.startswith("record count")
    assert synth.ledger_.entries[1].name.startswith("dpcgan: ")


def test_dp_label_prior_is_charged_and_non_private_baseline_says_infinite(digits):
    train, _, schema = digits
    flat = {"generator_net": "mlp", "discriminator_net": "mlp"}  # fast; conv is tested above
    config = DPCGANConfig(batch_size=32, **flat, **SMALL_SERIES)
    synth = _fit(schema.with_label_prior("dp"), train, "dpcgan", config, epochs=2.5)
    assert any("label prior" in e.name for e in synth.ledger_.entries)
    assert synth.label_prior_.shape == (10,) and math.isclose(synth.label_prior_.sum(), 1.0)
    baseline = _fit(schema, train, "dpcgan", config, epsilon=math.inf, epochs=0.5)
    assert math.isinf(baseline.privacy_spent().epsilon)


def test_bad_records_are_refused_with_record_and_value(digits):
    train, _, schema = digits
    synth = Synthesizer(schema, progress=False)
    bad = train.values.copy()
    bad[4, 0, 2, 3] = 17.0
    with pytest.raises(DataError, match=r"record 5, channel 'gray', position \[2, 3\]: value 17"):
        synth.fit(ArrayData(bad, train.labels))
    labels = train.labels.copy()
    labels[2] = "eleven"
    with pytest.raises(DataError, match="record 3: label 'eleven' is not one of the classes"):
        synth.fit(ArrayData(train.values, labels))
    with pytest.raises(DataError, match=r"shape \[1, 8, 7\]"):
        synth.fit(ArrayData(train.values[..., :7], train.labels))
    with pytest.raises(DataError, match="not one of"):
        Synthesizer(schema, progress=False).fit(
            ArrayData(train.values, np.full(len(train), "x", dtype=object))
        )


def test_network_that_does_not_fit_the_data_type_is_refused(digits):
    train, _, schema = digits
    config = DPCGANConfig(batch_size=32, generator_net="lstm", **SMALL_IMAGE)
    with pytest.raises(PrivacyError, match="generator network 'lstm' does not apply to image"):
        _fit(schema, train, "dpcgan", config, epochs=2.5)


def test_condition_on_unknown_class_names_the_classes(digits):
    train, _, schema = digits
    synth = _fit(schema, train, "dpcgan", DPCGANConfig(batch_size=32, **SMALL_IMAGE), epochs=2.5)
    with pytest.raises(DataError, match="not a class of 'label'"):
        synth.sample(3, conditions={"label": "12"})
