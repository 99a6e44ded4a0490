"""Moved samples (:mod:`dpforge.statistics.particles`): series moved at sample time to match the
released embedding. What it reads is the stored DP release and public parameters only (the
ledger does not change, the folder round trip samples the same, what the folder stores is the
noisy release and not the exact sums); it brings the samples' embedding closer to the
release; a folder without the release is refused when moving is asked for."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest
import torch
from tests.cli_support import save_without_release

import dpforge
from cli_support import run
from dpforge.data.arrays import ArrayData
from dpforge.errors import DataError, ModelFileError
from dpforge.kinds.feature_defaults import feature_anchor_defaults, kind_views
from dpforge.schema.array import ArraySchema, Channel
from dpforge.statistics.array_anchor import feature_map
from dpforge.statistics.features import (
    embedding_sensitivity,
    exact_embedding,
)
from dpforge.synthesizer import Synthesizer

FAST = replace(
    feature_anchor_defaults("timeseries"), n_features=200, steps=40, batch_size=128,
    generator_hidden=(32, 64),
)  # fmt: skip
SCHEMA = ArraySchema(
    "timeseries", (1, 24), (Channel("load", -3.0, 3.0),), label="season", classes=("a", "b")
)


def _curves(n: int, seed: int) -> ArrayData:
    """Two classes of daily curves: one peak in the morning, one in the evening."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 2, n)
    hours = np.arange(24)
    peak = np.where(labels == 0, 8.0, 19.0)[:, None] + rng.normal(0, 1.5, (n, 1))
    x = 2.0 * np.exp(-((hours - peak) ** 2) / 8.0) - 0.5 + rng.normal(0, 0.1, (n, 24))
    return ArrayData(x[:, None, :], np.array(["a", "b"], dtype=object)[labels])


@pytest.fixture(scope="module")
def fitted():
    synth = Synthesizer(SCHEMA, epsilon=3.0, delta=1e-4, seed=0, progress=False, anchor=FAST)
    data = _curves(300, 0)
    return synth.fit(data), data


def test_moving_reads_only_the_release_and_round_trips(fitted, tmp_path):
    synth, _ = fitted
    ledger = json.dumps(synth.ledger_.to_dict(), sort_keys=True)
    moved = synth.sample(100, seed=3)  # series move by default
    assert json.dumps(synth.ledger_.to_dict(), sort_keys=True) == ledger  # nothing charged
    assert np.array_equal(moved.values, synth.sample(100, seed=3, move=True).values)
    synth.save(tmp_path / "model")
    assert (tmp_path / "model" / "release.safetensors").is_file()
    loaded = dpforge.load(tmp_path / "model")
    again = loaded.sample(100, seed=3)
    assert np.array_equal(moved.values, again.values)
    assert np.array_equal(moved.labels, again.labels)
    assert not np.array_equal(moved.values, loaded.sample(100, seed=3, move=False).values)


def test_the_folder_stores_the_noisy_release_not_the_exact_sums(fitted, tmp_path):
    synth, data = fitted
    release = synth.sample_release_
    x, labels = synth.encoder_.transform(data)
    features = feature_map(kind_views("timeseries"), (1, 24), FAST, release.feature_seed)
    sums, counts = exact_embedding(features, x, labels, 2)
    noise = release.embedding.noisy_sums - sums
    expected = release.embedding.noise_multiplier * embedding_sensitivity(FAST.count_weight)
    assert release.embedding.noise_multiplier > 0
    assert np.std(noise) == pytest.approx(expected, rel=0.05)  # the release's own noise
    synth.save(tmp_path / "model")
    stored = dpforge.load(tmp_path / "model").sample_release_.embedding
    assert np.array_equal(stored.noisy_sums, release.embedding.noisy_sums)
    assert np.array_equal(stored.noisy_counts, release.embedding.noisy_counts)
    info = json.loads((tmp_path / "model" / "model.json").read_text())
    assert set(info["release"]) == {
        "feature_seed", "kind", "shape", "n_features", "bandwidths", "noise_multiplier",
        "count_weight", "views",
    }  # fmt: skip


def test_moving_brings_the_samples_closer_to_the_release(fitted):
    synth, _ = fitted
    loss = synth.sample_release_.loss()

    def gap(samples: ArrayData) -> float:
        x, labels = synth.encoder_.transform(samples)
        with torch.no_grad():
            return float(loss(torch.as_tensor(x), torch.as_tensor(labels)))

    plain, moved = synth.sample(300, seed=4, move=False), synth.sample(300, seed=4)
    assert gap(moved) < 0.5 * gap(plain)
    assert np.abs(moved.values).max() <= 3.0


def test_an_old_folder_is_refused_when_moving_is_asked_for(fitted, tmp_path, monkeypatch, capsys):
    synth, _ = fitted
    save_without_release(synth, tmp_path / "old")  # as saved before it existed
    assert not (tmp_path / "old" / "release.safetensors").exists()
    old = dpforge.load(tmp_path / "old")
    with pytest.raises(DataError, match="move=False"):
        old.sample(10, seed=0, move=True)
    assert np.array_equal(
        old.sample(10, seed=0).values, synth.sample(10, seed=0, move=False).values
    )
    code, out = run(
        ["sample", tmp_path / "old", "-n", "5", "-o", tmp_path / "s.csv", "--move"],
        monkeypatch, capsys,
    )  # fmt: skip
    assert code != 0 and "--no-move" in out
    assert not (tmp_path / "s.csv").exists()
    code, out = run(
        ["sample", tmp_path / "old", "-n", "5", "-o", tmp_path / "s.csv", "--no-move"],
        monkeypatch, capsys,
    )  # fmt: skip
    assert code == 0, out


def test_a_stray_release_file_is_refused(fitted, tmp_path):
    synth, _ = fitted
    synth.save(tmp_path / "model")
    save_without_release(synth, tmp_path / "old")
    (tmp_path / "old" / "release.safetensors").write_bytes(
        (tmp_path / "model" / "release.safetensors").read_bytes()
    )
    with pytest.raises(ModelFileError, match="release"):
        dpforge.load(tmp_path / "old")
