"""How many column pairs the selection round measures (AnchorConfig.pairs_per_column)."""

from __future__ import annotations

import re

import pytest

import dpforge
from dpforge.statistics.anchor import AnchorConfig
from dpforge.statistics.selection import pairs_to_measure


def _selected(frame, schema, per_column: float) -> tuple[int, float]:
    anchor = AnchorConfig(steps=0, batch_size=64, pairs_per_column=per_column)
    synth = dpforge.Synthesizer(
        schema, epsilon=1.0, delta=1e-5, seed=0, progress=False, anchor=anchor
    ).fit(frame)
    names = [e.name for e in synth.ledger_.entries]
    (k,) = [int(m.group(1)) for n in names if (m := re.search(r"(\d+) selected column pairs", n))]
    return k, synth.privacy_spent().epsilon


def test_the_rule_counts_pairs_per_column_within_the_candidates():
    assert pairs_to_measure(91, 14) == 14  # the default: one pair per column
    assert pairs_to_measure(91, 14, 2.0) == 28
    assert pairs_to_measure(10, 14, 2.0) == 10  # never more than the candidates
    assert pairs_to_measure(91, 14, 0.01) == 1  # at least one


def test_twice_the_pairs_per_column_measures_twice_the_pairs_in_the_same_budget(cancer):
    frame, schema = cancer
    one, spent_one = _selected(frame, schema, 1.0)
    two, spent_two = _selected(frame, schema, 2.0)
    assert two == 2 * one
    assert spent_one <= 1.0 and spent_two <= 1.0  # the same target: the pairs share it


def test_a_negative_count_is_refused():
    with pytest.raises(ValueError, match="pairs_per_column"):
        AnchorConfig(pairs_per_column=-1.0).validate()


def test_zero_pairs_per_column_measures_round_one_alone(cancer):
    frame, schema = cancer
    anchor = AnchorConfig(steps=0, batch_size=64, pairs_per_column=0)
    synth = dpforge.Synthesizer(
        schema, epsilon=1.0, delta=1e-5, seed=0, progress=False, anchor=anchor
    ).fit(frame)
    names = [e.name for e in synth.ledger_.entries]
    assert not any("pairs" in n for n in names) and any("marginals" in n for n in names)
    assert synth.privacy_spent().epsilon <= 1.0
