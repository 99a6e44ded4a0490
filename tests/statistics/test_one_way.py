"""``AnchorConfig.one_way=False``: with a label, round 1 measures label x column alone (each
column's 1-way marginal is the sum of its label x column table), so each cell's noise is
smaller for the same budget; the ledger says what was measured before it ran."""

from __future__ import annotations

import math

import pytest

import dpforge
from dpforge.statistics.anchor import AnchorConfig
from dpforge.statistics.marginals import default_marginals


def _fit(cancer, one_way: bool):
    frame, schema = cancer
    anchor = AnchorConfig(steps=0, scout_steps=0, batch_size=64, one_way=one_way)
    synth = dpforge.Synthesizer(
        schema, epsilon=1.0, delta=1e-5, seed=0, progress=False, anchor=anchor
    )
    return synth.fit(frame), schema.label


def test_round_one_measures_label_by_column_alone_with_less_noise_per_cell(cancer):
    (joint, label), (both, _) = _fit(cancer, False), _fit(cancer, True)
    measured = [m.columns for m in joint.sample_release_.marginals]
    assert not [c for c in measured if len(c) == 1]  # no 1-way marginal measured
    labelled = {c for c in measured if c[0] == label}
    kept = [m.columns for m in both.sample_release_.marginals]
    assert labelled == {c for c in kept if c[0] == label}  # label x every column, as before
    assert not joint.anchor_plan_.one_way and both.anchor_plan_.one_way
    names = [e["name"] for e in joint.ledger_.to_dict()["entries"]]
    assert any("(label x column)" in n for n in names)  # recorded as planned, before the run
    fits = (joint, both)
    first = [default_marginals(s.encoder_.spans, label, s.anchor_plan_.one_way) for s in fits]
    assert len(first[1]) == 2 * len(first[0])  # each column's 1-way and label x column
    noise = [s.anchor_plan_.round_one_noise for s in fits]
    std = [n * math.sqrt(len(f)) for n, f in zip(noise, first, strict=True)]
    assert std[0] == pytest.approx(std[1] / math.sqrt(2), rel=0.05)  # half the marginals
    spent = [s.privacy_spent().epsilon for s in (joint, both)]
    assert spent[0] == pytest.approx(spent[1], abs=1e-6) and spent[0] <= 1.0


def test_without_a_label_the_one_way_marginals_stay():
    class Span:
        def __init__(self, column):
            self.column, self.activation = column, "softmax"

    spans = [Span("a"), Span("b")]
    assert default_marginals(spans, None, one_way=False) == [("a",), ("b",)]
    assert default_marginals(spans, "y", one_way=False) == [("y", "a"), ("y", "b")]
    assert len(default_marginals(spans, "y")) == 4
