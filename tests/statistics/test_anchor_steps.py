"""Anchoring steps that follow the released N (issue 22): public inputs only, ledger unchanged."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

import dpforge
from anchor_tables import labelled_frame
from dpforge.kinds import table as table_kind
from dpforge.schema.table import Column, Schema
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
    """The steps the anchoring phase was asked for; the phase itself runs one step."""
    taken: list[int] = []
    real = table_kind.train_anchor

    def record(generator, loss, n_classes, config, rng, **options):
        taken.append(config.steps)
        return real(generator, loss, n_classes, config._replace(steps=1), rng, **options)

    monkeypatch.setattr(table_kind, "train_anchor", record)
    return taken


_frame = labelled_frame


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
    assert len(first) == 1  # one phase: the selection scores against the estimate
    assert 640 <= first[0] <= 690  # about 20,000 / 30, from the noisy N
    assert one.ledger_.to_dict() == two.ledger_.to_dict()


def test_the_ledger_is_the_same_as_with_fixed_steps(steps_taken):
    frame, schema = _frame(3_000, 1)
    following = _fit(frame, schema)
    fixed = _fit(frame, schema, AnchorConfig(batch_size=64, steps=300))
    assert steps_taken == [300, 300]  # a small table: the fewest steps
    assert following.ledger_.to_dict() == fixed.ledger_.to_dict()


# -- pairs per column follow the released N too ------------------------------------------------
def test_the_pairs_rule_adds_pairs_to_large_tables_only():
    from dpforge.statistics.phase_steps import PAIRS_RULE, anchor_pairs_per_column

    default = AnchorConfig()
    assert anchor_pairs_per_column(default, PAIRS_RULE[0] - 1) == 1.0
    assert anchor_pairs_per_column(default, PAIRS_RULE[0]) == PAIRS_RULE[1]
    assert anchor_pairs_per_column(replace(default, pairs_per_column=3.0), 10.0) == 3.0


def _wide(n: int, seed: int) -> tuple[pd.DataFrame, Schema]:
    """Six two-valued columns and a label: 15 candidate pairs, one per column is 6."""
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({f"x{i}": rng.choice(["p", "q"], n) for i in range(6)})
    frame["y"] = rng.choice(["no", "yes"], n)
    columns = [Column(c, "categorical", categories=("p", "q")) for c in frame.columns[:-1]]
    return frame, Schema((*columns, Column("y", "categorical", categories=("no", "yes"))), "y")


def _pairs_entry(synth) -> str:
    (name,) = [e.name for e in synth.ledger_.entries if " selected " in e.name]
    return name


def test_pairs_follow_the_released_count_not_the_records(steps_taken):
    small, schema = _wide(2_000, 0)
    large, _ = _wide(24_000, 1)
    assert "anchor: 6 selected column pairs" in _pairs_entry(_fit(small, schema))
    one = _fit(large, schema)
    changed = large.copy()
    changed.loc[:99, "x0"] = "q"  # private values change, the number of records does not
    two = _fit(changed, schema)
    from dpforge.statistics.phase_steps import PAIRS_RULE
    from dpforge.statistics.selection import pairs_to_measure

    k = pairs_to_measure(15, 6, PAIRS_RULE[1])  # the rule's pairs per column, from the noisy N
    # from 20,000 released records with a label, at epsilon 1 (epsilon x N under 50,000), the
    # pairs stay a x b
    assert k > 6 and f"anchor: {k} selected column pairs" in _pairs_entry(one)
    assert one.ledger_.to_dict() == two.ledger_.to_dict()
