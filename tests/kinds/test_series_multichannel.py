"""A multichannel series set end to end: UEA BasicMotions (6 channels x 100 time points, four
activities), the series' default feature anchoring at small scale.

The check is class-conditional and per channel: a smart watch barely moves while its wearer
stands, and swings while they run. The synthetic "standing" recordings must be much calmer, in
every channel, than the synthetic "running" ones, as the real ones are; a generator that mixed
up the channels or ignored the label would not show it.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

import dpforge
from dpforge.datasets.series import MOTION_CHANNELS, load_basic_motions
from dpforge.kinds.feature_defaults import feature_anchor_defaults
from dpforge.schema.array import Channel
from dpforge.synthesizer import Synthesizer

FAST = replace(feature_anchor_defaults("timeseries"), n_features=300, steps=120, batch_size=128)


@pytest.fixture(scope="module")
def motions():
    pytest.importorskip("sktime")
    train, _, schema = load_basic_motions()
    bounds = tuple(Channel(name, -40.0, 40.0) for name in MOTION_CHANNELS)  # declared public
    return train, replace(schema, channels=bounds)


def _spread(values: np.ndarray, labels: np.ndarray, activity: str) -> np.ndarray:
    """Mean over the recordings of one activity of each channel's std over time: (6,)."""
    return values[labels == activity].std(axis=2).mean(axis=0)


def test_six_channel_series_keep_each_channels_activity(motions, tmp_path):
    train, schema = motions
    synth = Synthesizer(schema, epsilon=math.inf, seed=0, progress=False, anchor=FAST).fit(train)
    # 40 series, fewer than a batch: the model folder must still load (its plan's rate <= 1)
    synth.save(tmp_path / "model")
    loaded = dpforge.load(tmp_path / "model")
    samples = loaded.sample(200, seed=1)  # moved to the stored release (the series default)
    assert loaded.sample_release_.shape == (6, 100)
    assert np.array_equal(samples.values, synth.sample(200, seed=1, move=True).values)
    assert samples.values.shape == (200, 6, 100)
    assert np.isfinite(samples.values).all() and np.abs(samples.values).max() <= 40.0
    assert set(samples.labels) <= set(schema.classes)
    real_ratio = _spread(train.values, train.labels, "running") / _spread(
        train.values, train.labels, "standing"
    )
    fake_ratio = _spread(samples.values, samples.labels, "running") / _spread(
        samples.values, samples.labels, "standing"
    )
    assert (real_ratio > 5).all()  # the property the check relies on
    assert (fake_ratio > 2).all(), fake_ratio


def test_six_channel_series_at_epsilon_3_is_one_anchoring_release(motions):
    train, schema = motions
    fast = replace(FAST, steps=20)
    synth = Synthesizer(schema, epsilon=3.0, delta=1e-3, seed=0, progress=False, anchor=fast)
    synth.fit(train)
    names = [entry.name for entry in synth.ledger_.entries]
    assert sum(name.startswith("anchor") for name in names) == 1
    assert not any("bound" in name for name in names)  # the declared ranges cost nothing
    assert synth.privacy_spent().epsilon == pytest.approx(3.0, rel=1e-3)
    assert synth.sample(10, seed=2).values.shape == (10, 6, 100)
