"""Records of categories or classes that the DP threshold did not release (issues 13.5, 13.6).

The threshold exists to hide a value held by very few records. Such records are dropped before
training by a per-record rule given the released lists: the fit neither fails nor quotes the
value or a count, and the sampling rate stays the one of the declared number of records.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import dpforge
import dpforge.pipeline.refine as synth_module
from dpforge.data.arrays import ArrayData
from dpforge.datasets.images import load_digits_images
from dpforge.methods.dpcgan import DPCGANConfig
from dpforge.schema.array import image_schema
from dpforge.schema.table import Column, Schema

RARE = "zanzibar"
FAST = DPCGANConfig(batch_size=64, latent_dim=8, generator_hidden=(16,), discriminator_hidden=(16,))


def _with_rare_value(frame, column):
    """A 'site' column with two common values; one record gets a value (of 'site', or a class
    of the label) that no other record holds."""
    site = np.where(np.arange(len(frame)) % 3 == 0, "north", "south").astype(object)
    frame = frame.assign(site=site)
    values = frame[column].to_numpy().copy()
    values[5] = RARE
    return frame.assign(**{column: values})


@pytest.mark.parametrize(
    ("column", "anchor"),
    [("site", None), ("site", "auto"), ("diagnosis", None)],
    ids=["category-discriminator", "category-marginals", "class-discriminator"],
)
def test_a_value_the_threshold_dropped_neither_fails_the_fit_nor_is_quoted(cancer, column, anchor):
    frame, schema = cancer
    frame = _with_rare_value(frame, column)
    public = Schema(
        tuple(
            c if c.name != "diagnosis" else Column("diagnosis", "categorical")
            for c in schema.columns
        )
        + (Column("site", "categorical"),),
        label="diagnosis",
        label_prior="dp",
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        steps = {"epochs": 15} if anchor is None else {}  # anchoring: marginals alone
        synth = dpforge.Synthesizer(
            public, epsilon=8.0, delta=1e-5, seed=0, progress=False, anchor=anchor, **steps,
            method_options=FAST if anchor is None else None,  # anchored alone: no discriminator
        ).fit(frame)  # fmt: skip
    assert synth.schema_.column("site").categories == ("north", "south")
    assert set(synth.schema_.column("diagnosis").categories) == {"benign", "malignant"}
    if anchor is None:  # q = B / N: N the DP count of all records read, not N - 1
        released_n = 64 / synth.plan_.sample_rate
        assert released_n == pytest.approx(round(released_n)) and abs(released_n - len(frame)) < 50
    else:  # marginals alone: no discriminator step, no sampling rate
        assert synth.plan_.sample_rate == 0.0
    rows = synth.sample(300, seed=1)
    assert RARE not in set(rows["site"]) | set(rows["diagnosis"])
    said = " ".join(str(w.message) for w in caught) + " ".join(
        e.name for e in synth.ledger_.entries
    )
    assert RARE not in said


def test_a_class_the_threshold_dropped_is_not_trained_on(tmp_path, monkeypatch):
    train, _, _ = load_digits_images()
    labels = train.labels.copy()
    labels[7] = RARE  # one image of a class no other image has
    data = ArrayData(train.values, labels)
    schema = image_schema((1, 8, 8), lower=0.0, upper=16.0, classes=None, label_prior="dp")
    seen = {}

    def record(method, features, labels, *args, **kwargs):
        seen["n"], seen["classes"] = len(features), method.n_classes
        seen["q"] = args[0].sample_rate

    monkeypatch.setattr(synth_module, "train", record)
    config = DPCGANConfig(batch_size=32, generator_net="mlp", discriminator_net="mlp", latent_dim=8)
    synth = dpforge.Synthesizer(
        schema, epsilon=20.0, delta=1e-5, noise_multiplier=1.0, method_options=config, seed=0,
        progress=False, checkpoint_dir=tmp_path / "ckpt", anchor=None,
    ).fit(data)  # fmt: skip
    assert RARE not in synth.schema_.classes and len(synth.schema_.classes) == 10
    assert seen["classes"] == 10 and seen["n"] == len(data) - 1  # the rare record is dropped
    # q = B / N, N the record count released under DP (of all records read, not N - 1)
    released_n = 32 / seen["q"]
    assert released_n == pytest.approx(round(released_n)) and abs(released_n - len(data)) < 20
