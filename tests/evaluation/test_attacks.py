"""Membership-inference attacks: they find planted memorisation, and guess on fresh samples."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dpforge.evaluation.attacks import (
    ATTACKS,
    array_matrix,
    membership_attacks,
    membership_targets,
    roc_result,
    table_matrix,
)
from dpforge.schema.array import image_schema
from dpforge.schema.table import Column, Schema


def population(rng: np.random.Generator, n: int) -> np.ndarray:
    """A 5-dimensional mixture of two Gaussian clusters."""
    centre = rng.integers(0, 2, size=(n, 1)) * 1.5
    return centre + rng.normal(size=(n, 5))


def test_roc_result_pins_auc_and_tpr_at_low_fpr():
    perfect = roc_result("x", np.arange(100.0) + 100, np.arange(100.0))
    assert perfect.auc == 1.0 and perfect.tpr_at_1pct_fpr == 1.0
    tied = roc_result("x", np.zeros(50), np.zeros(50))
    assert tied.auc == 0.5 and tied.tpr_at_1pct_fpr == 0.0
    # two members out of four rank above all non-members, the rest below every one
    half = roc_result("x", np.array([10.0, 11.0, -1.0, -2.0]), np.arange(100.0) / 100)
    assert half.auc == pytest.approx(0.5) and half.tpr_at_1pct_fpr == pytest.approx(0.5)
    assert half.fpr[0] == 0.0 and half.fpr[-1] == 1.0 and np.all(np.diff(half.tpr) >= 0)


def test_targets_split_held_out_rows_into_disjoint_groups():
    train, held = np.arange(50.0)[:, None], 100 + np.arange(30.0)[:, None]
    t = membership_targets(train, held, np.random.default_rng(0))
    assert t.counts() == {"members": 15, "non_members": 15, "reference": 15}
    assert set(t.members[:, 0]) <= set(train[:, 0])
    assert not set(t.non_members[:, 0]) & set(t.reference[:, 0])
    assert set(t.non_members[:, 0]) | set(t.reference[:, 0]) == set(held[:, 0])


def test_attacks_find_memorised_records_and_guess_on_fresh_ones():
    rng = np.random.default_rng(1)
    train, held = population(rng, 300), population(rng, 600)
    memorised = train + rng.normal(scale=0.05, size=train.shape)  # a generator that copies
    leaky = membership_attacks(train, held, memorised, seed=0, max_targets=300)
    fresh = membership_attacks(train, held, population(rng, 300), seed=0, max_targets=300)
    # the KDE's Scott bandwidth smooths the planted points: DOMIAS sees them less sharply
    floor = {"dcr": 0.9, "domias": 0.75, "classifier": 0.9}
    for name in ATTACKS:
        assert leaky["attacks"][name]["auc"] > floor[name], name
        assert abs(fresh["attacks"][name]["auc"] - 0.5) < 0.1, name
    assert leaky["attacks"]["dcr"]["tpr_at_1pct_fpr"] > 0.9
    assert leaky["targets"] == {"members": 300, "non_members": 300, "reference": 300}
    assert leaky["max_auc"] == max(r["auc"] for r in leaky["attacks"].values())


def test_the_floor_separates_a_file_difference_from_leakage():
    """Training and held-out rows from two shifted populations: a model that copies nothing
    (fresh rows of the training population) still 'wins', and so does its floor (spare real
    training rows released); on one population the floor stays near 0.5."""
    rng = np.random.default_rng(3)
    train = population(rng, 900)
    shifted = population(rng, 600) + 0.8  # another file, another period
    fresh = population(rng, 300)
    drifted = membership_attacks(train, shifted, fresh, seed=0, max_targets=300)
    for name in ATTACKS:
        attack = drifted["attacks"][name]
        assert attack["auc"] > 0.55 and attack["floor_auc"] > 0.55, name
        assert abs(attack["auc"] - attack["floor_auc"]) < 0.1, name
    assert drifted["max_auc_over_floor"] < 0.6 < drifted["max_auc"]
    assert drifted["floor_rows"] == 300  # as many spare training rows as released rows
    same = membership_attacks(train, population(rng, 600), fresh, seed=0, max_targets=300)
    assert abs(same["max_floor_auc"] - 0.5) < 0.1


def test_attack_selection_and_progress_callback():
    rng = np.random.default_rng(2)
    seen = []
    out = membership_attacks(
        population(rng, 40), population(rng, 40), population(rng, 40), attacks=("dcr",),
        on_done=seen.append,
    )  # fmt: skip
    assert list(out["attacks"]) == ["dcr"] and seen == ["dcr"]
    with pytest.raises(ValueError, match="attacks"):
        membership_attacks(
            population(rng, 40), population(rng, 40), population(rng, 40), attacks=("x",)
        )


def test_encodings_use_public_bounds_and_categories():
    schema = Schema(
        (
            Column("age", "integer", lower=0, upper=100),
            Column("sex", "categorical", categories=("f", "m")),
        ),
    )
    frame = pd.DataFrame({"age": [0, 50, 100], "sex": ["f", "m", "m"]})
    x = table_matrix(frame, schema)
    s = 1 / np.sqrt(2)
    np.testing.assert_allclose(x, [[0, s, 0], [0.5, 0, s], [1, 0, s]])
    # a category mismatch counts 1 in squared distance, like a full-range numeric difference
    assert np.sum((x[0, 1:] - x[1, 1:]) ** 2) == pytest.approx(1.0)
    images = image_schema((1, 2, 2), lower=0.0, upper=16.0)
    np.testing.assert_allclose(array_matrix(np.full((3, 1, 2, 2), 8.0), images), 0.5)
