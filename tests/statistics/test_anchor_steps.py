"""Anchoring steps that follow the released N (issue 22): public inputs only, ledger unchanged."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

import dpforge
from dpforge.kinds import table as table_kind
from dpforge.schema.table import Column, Schema
from dpforge.statistics import rounds
from dpforge.statistics.anchor import AnchorConfig
from dpforge.statistics.phase_steps import STEPS_RANGE, anchor_steps


def test_the_rule_gives_more_steps_to_more_records_within_its_range():
    default = AnchorConfig()
    assert anchor_steps(default, 500) == STEPS_RANGE[0]  # small tables stay fast
    assert anchor_steps(default, 20_000) == 667  # one step per 30 released records
    assert anchor_steps(default, 30_162) == STEPS_RANGE[1]  # Adult's size: the most
    assert anchor_steps(default, -3.0) == STEPS_RANGE[0]  # a noisy N below 0 is still public
    assert anchor_steps(replace(default, steps=7), 30_000) == 7  # a number given is kept


@pytest.fixture
def steps_taken(monkeypatch) -> list[int]:
    """The steps each anchoring phase was asked for; the phases themselves run one step."""
    taken: list[int] = []
    real = table_kind.train_anchor

    def record(generator, loss, n_classes, config, rng, **options):
        taken.append(config.steps)
        return real(generator, loss, n_classes, replace(config, steps=1), rng, **options)

    monkeypatch.setattr(table_kind, "train_anchor", record)
    monkeypatch.setattr(rounds, "train_anchor", record)
    return taken


def _frame(n: int, seed: int) -> tuple[pd.DataFrame, Schema]:
    rng = np.random.default_rng(seed)
    label = rng.integers(0, 2, n)
    frame = pd.DataFrame(
        {
            "a": np.where(rng.random(n) < 0.3 + 0.4 * label, "p", "q"),
            "b": rng.choice(["x", "y", "z"], n),
            "c": rng.choice(["u", "v"], n),
            "y": np.where(label == 1, "yes", "no"),
        }
    )
    cats = {"a": ("p", "q"), "b": ("x", "y", "z"), "c": ("u", "v"), "y": ("no", "yes")}
    schema = Schema(tuple(Column(k, "categorical", categories=v) for k, v in cats.items()), "y")
    return frame, schema


def _fit(frame, schema, anchor=None):
    anchor = anchor or AnchorConfig(batch_size=64)
    return dpforge.Synthesizer(
        schema, epsilon=1.0, delta=1e-5, seed=0, progress=False, anchor=anchor
    ).fit(frame)


def test_steps_follow_the_released_count_not_the_records(steps_taken):
    frame, schema = _frame(20_000, 0)
    one = _fit(frame, schema)
    first = list(steps_taken)
    changed = frame.copy()
    changed.loc[:99, "a"] = "q"  # private values change, the number of records does not
    two = _fit(changed, schema)
    assert steps_taken[len(first) :] == first  # the same steps: they read no record
    assert len(first) == 2 and first[0] == first[1]  # the scout and the final phase
    assert 640 <= first[0] <= 690  # about 20,000 / 30, from the noisy N
    assert one.ledger_.to_dict() == two.ledger_.to_dict()


def test_the_ledger_is_the_same_as_with_fixed_steps(steps_taken):
    frame, schema = _frame(3_000, 1)
    following = _fit(frame, schema)
    fixed = _fit(frame, schema, AnchorConfig(batch_size=64, steps=300))
    assert steps_taken == [300, 300, 300, 300]  # a small table: the fewest steps
    assert following.ledger_.to_dict() == fixed.ledger_.to_dict()
