"""Herded selection (:mod:`dpforge.statistics.herding`, ``MoveSettings.pool``): from ``pool``
times as many draws, the records whose mean embedding matches the stored release. It picks
closer to the target than chance, keeps the labels drawn, charges nothing, reads only the
stored release (a loaded folder samples the same), and refuses bad settings with clear errors."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

import dpforge
from dpforge.errors import DataError
from dpforge.generate import sample_mover
from dpforge.statistics.herding import herd, margin_pick, select_samples
from dpforge.statistics.particles import MoveSettings, embedding_gap
from tests.test_series_moved import fitted  # noqa: F401  (the fitted model fixture)


def test_herding_picks_a_set_closer_to_the_target_than_chance():
    g = torch.Generator().manual_seed(0)
    phi = torch.nn.functional.normalize(torch.randn(400, 50, generator=g), dim=1)
    target = phi[:200].mean(dim=0) + 0.01 * torch.randn(50, generator=g)
    picked = herd(phi, target, 100)
    assert len(set(picked.tolist())) == 100 and torch.equal(picked, picked.sort().values)
    gap = float(((phi[picked].mean(0) - target) ** 2).sum())
    chance = [
        float(((phi[torch.randperm(400, generator=g)[:100]].mean(0) - target) ** 2).sum())
        for _ in range(20)
    ]
    assert gap < 0.2 * min(chance)
    assert len(herd(phi, target, 400)) == 400  # all of them: each once
    with pytest.raises(ValueError, match="cannot pick 401 of 400"):
        herd(phi, target, 401)


def test_pooled_samples_match_the_release_closer_and_keep_their_labels(fitted):  # noqa: F811
    synth, _ = fitted
    ledger = json.dumps(synth.ledger_.to_dict(), sort_keys=True)
    loss = synth.sample_release_.loss()

    def gap(samples) -> float:
        x, labels = synth.encoder_.transform(samples)
        return embedding_gap(torch.as_tensor(x), torch.as_tensor(labels), loss)

    plain = synth.sample(200, seed=6, move=False)
    herded = synth.sample(200, seed=6, move=MoveSettings(steps=0, pool=4))
    assert np.array_equal(plain.labels, herded.labels)  # the labels are drawn first
    assert gap(herded) < 0.7 * gap(plain)
    assert json.dumps(synth.ledger_.to_dict(), sort_keys=True) == ledger  # nothing charged
    default = synth.sample(200, seed=6)
    assert np.array_equal(default.values, synth.sample(200, seed=6, move=True).values)


def test_pooled_sampling_reads_only_the_stored_release(fitted, tmp_path):  # noqa: F811
    synth, _ = fitted
    settings = MoveSettings(steps=20, pool=3, chunk=64)  # several chunks
    ours = synth.sample(150, seed=8, move=settings)
    synth.save(tmp_path / "model")
    loaded = dpforge.load(tmp_path / "model")  # the generator, the release, public parameters
    again = loaded.sample(150, seed=8, move=settings)
    assert np.array_equal(ours.values, again.values)
    assert np.array_equal(ours.labels, again.labels)


def test_margin_keeps_the_draws_furthest_on_their_own_side():
    targets = torch.eye(3, 4, dtype=torch.float64)  # class k's mean is the k-th axis
    phi = torch.tensor([[0.9, 0.1, 0, 0], [0.5, 0.6, 0, 0], [0.7, 0, 0.2, 0], [0.2, 0, 0, 1]])
    # margins for class 0: 0.8, -0.1, 0.5, 0.2
    assert margin_pick(phi, targets, 0, 2).tolist() == [0, 2]
    assert margin_pick(phi, targets, 0, 3).tolist() == [0, 2, 3]
    with pytest.raises(ValueError, match="two classes or more"):
        margin_pick(phi, targets[:1], 0, 1)


def test_margin_selection_needs_labels(fitted):  # noqa: F811
    synth, _ = fitted
    loss = synth.sample_release_.loss()

    def draw(labels, count):
        return torch.zeros(count, 1, 24)

    with pytest.raises(ValueError, match="two classes or more"):
        select_samples(draw, None, 10, loss, 2, 64, "margin")
    with pytest.raises(ValueError, match="select must be one of"):
        select_samples(draw, None, 10, loss, 2, 64, "best")
    labels = torch.tensor([0, 1] * 5)
    herded = synth.sample(100, seed=9, move=MoveSettings(steps=0, pool=3, select="margin"))
    assert np.array_equal(herded.labels, synth.sample(100, seed=9, move=False).labels)
    assert select_samples(draw, labels, 10, loss, 2, 64, "margin").shape == (10, 1, 24)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"pool": 0}, "pool must be a whole number >= 1, got 0"),
        ({"pool": 2.5}, "pool must be a whole number >= 1, got 2.5"),
        ({"steps": -1}, "steps must be a whole number >= 0, got -1"),
        ({"chunk": True}, "chunk must be a whole number >= 1, got True"),
        ({"lr": 0.0}, "lr must be a number > 0, got 0.0"),
        ({"stop_at_noise": "yes"}, "stop_at_noise must be True or False"),
        ({"select": "best"}, "select must be one of"),
    ],
)
def test_bad_settings_are_refused(fields, message):
    with pytest.raises(ValueError, match=message):
        MoveSettings(**fields)


def test_settings_need_the_release_and_a_known_type():
    with pytest.raises(DataError, match="move=False"):
        sample_mover(None, MoveSettings(pool=2), "timeseries")
    with pytest.raises(DataError, match="got 'yes'"):
        sample_mover(None, "yes", "timeseries")
