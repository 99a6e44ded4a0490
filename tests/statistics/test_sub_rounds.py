"""Round 2 in sub-rounds (issue 44, AIM's rounds): planned ahead, each scored against the
estimate refreshed after the previous one, the pairs not yet measured only."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import dpforge
from dpforge.data.encoder import TableEncoder
from dpforge.kinds import table as table_kind
from dpforge.privacy.accounting import epsilon
from dpforge.privacy.ledger import PrivacyLedger
from dpforge.schema.table import Column, Schema
from dpforge.statistics import rounds
from dpforge.statistics.anchor import AnchorConfig


def _wide(n: int = 1_500, seed: int = 0) -> tuple[pd.DataFrame, Schema]:
    """Six three-valued columns and a label (15 candidate pairs, 6 measured); x1 follows x0."""
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({f"x{i}": rng.choice(["p", "q", "r"], n) for i in range(6)})
    frame["x1"] = np.where(rng.random(n) < 0.8, frame["x0"], frame["x1"])
    frame["y"] = rng.choice(["no", "yes"], n)
    columns = [Column(c, "categorical", categories=("p", "q", "r")) for c in frame.columns[:-1]]
    return frame, Schema((*columns, Column("y", "categorical", categories=("no", "yes"))), "y")


def test_the_public_rule_splits_the_pairs_into_at_most_three_sub_rounds():
    assert rounds.sub_round_sizes(0) == ()
    assert rounds.sub_round_sizes(1) == (1,)
    assert rounds.sub_round_sizes(2) == (1, 1)
    assert rounds.sub_round_sizes(6) == (2, 2, 2)
    assert rounds.sub_round_sizes(14) == (5, 5, 4)


def test_the_plan_records_every_sub_round_at_the_pinned_noise_within_the_target():
    _, schema = _wide()
    spans = TableEncoder(schema).spans
    ledger = PrivacyLedger()
    plan = rounds.plan_anchoring(AnchorConfig(), spans, "y", (1.0, 1e-5), ledger)
    assert plan.pairs == 6 and plan.sub_rounds == (2, 2, 2)
    names = [e.name for e in ledger.entries]
    assert names[0] == "anchor: 12 marginals (1-way, label x column)"
    assert names[1::2] == [f"anchor: scores of {n} column pairs (sub-round {i} of 3)"
                           for i, n in ((1, 15), (2, 13), (3, 11))]  # fmt: skip
    assert names[2::2] == [f"anchor: 2 selected column pairs (sub-round {i} of 3)" for i in (1, 2, 3)]
    # each sub-round's share is a third of the scores' (0.1) and the pairs' (0.4)
    assert plan.score_noise / plan.round_one_noise == pytest.approx((0.5 * 3 / 0.1) ** 0.5)
    assert plan.pair_noise / plan.round_one_noise == pytest.approx((0.5 * 3 / 0.4) ** 0.5)
    assert plan.round_one_noise == pytest.approx(5.2801, rel=1e-4)  # pinned
    assert 0.99 < epsilon(ledger.event(), 1e-5) <= 1.0


def test_each_sub_round_runs_after_the_whole_plan_is_in_the_ledger(monkeypatch):
    frame, schema = _wide()
    ledgers, seen = [], []
    plan = table_kind.plan_anchoring

    def planned(*args, **kwargs):
        ledgers.append(args[4])
        return plan(*args, **kwargs)

    def watch(name):
        function = getattr(rounds, name)

        def run(*args, **kwargs):
            seen.append((name, len(ledgers[0]), list(args[1])))
            return function(*args, **kwargs)

        monkeypatch.setattr(rounds, name, run)

    monkeypatch.setattr(table_kind, "plan_anchoring", planned)
    watch("select_pairs")
    watch("measure_marginals")
    anchor = AnchorConfig(steps=0, batch_size=64, label_pairs=False)
    synth = dpforge.Synthesizer(
        schema, epsilon=1.0, delta=1e-5, seed=0, progress=False, anchor=anchor
    ).fit(frame)
    assert {n for _, n, _ in seen} == {len(synth.ledger_.entries)}  # the whole plan, each time
    assert [name for name, _, _ in seen] == ["measure_marginals"] + [
        "select_pairs", "measure_marginals"] * 3  # fmt: skip
    scored = [set(pairs) for name, _, pairs in seen if name == "select_pairs"]
    measured = [set(pairs) for name, _, pairs in seen[2::2]]
    assert [len(s) for s in scored] == [15, 13, 11]  # the pairs not yet measured
    assert all(not (scored[i] & measured[j]) for i in range(3) for j in range(i))
    assert ("x0", "x1") in set().union(*measured)  # the one dependence is found
