"""Round 2 as label x column x column marginals (AnchorConfig.label_pairs, issue 22): the
release's sensitivity, the merged cells from public inputs only, the ledger, the k-way fit."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import torch

import dpforge
import dpforge.statistics.rounds as rounds
from dpforge.data.encoder import Span
from dpforge.schema.table import Column, Schema
from dpforge.statistics.anchor import AnchorConfig, AnchorLoss
from dpforge.statistics.anchor_l1 import conditional_distribution, merge_matrices
from dpforge.statistics.label_pairs import (
    LABEL_PAIRS_FROM,
    LABEL_PAIRS_SIGNAL,
    label_pair_marginals,
    label_pairs_for,
    merge_map,
    merged_sizes,
)
from dpforge.statistics.marginals import (
    CellColumn,
    MeasuredMarginal,
    measure_marginals,
)

SIZES = {"y": 3, "a": 20, "b": 7, "c": 5}


def _cells(rng: np.random.Generator, n: int = 500) -> dict[str, CellColumn]:
    return {k: CellColumn(rng.integers(0, s, n).astype(np.int32), s) for k, s in SIZES.items()}


def _drop(cells: dict[str, CellColumn], row: int) -> dict[str, CellColumn]:
    return {k: CellColumn(np.delete(c.index, row), c.size) for k, c in cells.items()}


def test_merged_sizes_keep_each_class_cell_above_the_noise():
    assert merged_sizes((20, 7), 1e9, 3, 1.0, 2.0) == (20, 7)  # little noise: unmerged
    assert merged_sizes((20, 7), 3000.0, 2, 0.0, 2.0) == (20, 7)  # no noise at all
    ga, gb = merged_sizes((20, 7), 3000.0, 3, 10.0, 2.0)  # a class's table: at most 50 cells
    assert (ga, gb) == (7, 7) and 3000.0 / (3 * ga * gb) >= 2 * 10.0
    assert merged_sizes((20, 30), 3000.0, 3, 10.0, 2.0) == (7, 7)  # both merged
    assert merged_sizes((20, 30), 100.0, 3, 10.0, 2.0) == (2, 2)  # never below 2
    assert merge_map(5, 5) == () and merge_map(5, 2) == (0, 0, 0, 1, 1)


def test_one_record_moves_one_cell_of_each_3way_marginal_by_one():
    cells = _cells(np.random.default_rng(0), 3000)
    marginals, groups = label_pair_marginals(
        [("a", "b"), ("b", "c")], "y", dict(SIZES), 3000.0, 3, 10.0, 2.0
    )
    assert marginals == [("y", "a", "b"), ("y", "b", "c")] and groups[0][1]  # a is merged
    rng = np.random.default_rng(1)
    full = measure_marginals(cells, marginals, 0.0, rng, 3000.0, groups=groups)  # no noise
    for row in (0, 17, 2999):
        less = measure_marginals(_drop(cells, row), marginals, 0.0, rng, 3000.0, groups=groups)
        diffs = [f.noisy_counts - m.noisy_counts for f, m in zip(full, less, strict=True)]
        assert all(np.abs(d).sum() == 1.0 and d.max() == 1.0 for d in diffs)
        assert np.sqrt(sum((d**2).sum() for d in diffs)) == pytest.approx(np.sqrt(2))
    assert full[0].shape == (3, 7, 7) and full[1].shape == (3, 7, 5)
    assert full[0].noisy_counts.sum() == 3000.0


def test_merged_marginal_round_trips_and_the_loss_fits_it_given_each_label():
    groups = ((), merge_map(4, 2), ())
    m = MeasuredMarginal(("y", "a", "b"), (2, 2, 3), np.arange(12.0) + 1, 78.0, groups)
    back = MeasuredMarginal.from_dict(m.to_dict())
    assert back.groups == groups and back.shape == m.shape
    assert np.array_equal(back.noisy_counts, m.noisy_counts)
    spans = [Span("a", 0, 4, "softmax"), Span("b", 4, 7, "softmax")]
    probs = torch.softmax(torch.randn(6, 7, generator=torch.Generator().manual_seed(0)), 1)
    labels = torch.tensor([0, 1, 0, 1, 1, 0])
    loss = AnchorLoss([m], spans, "y", torch.tensor([0.5, 0.5]))
    (model,) = loss.model_marginals(probs, labels)
    merged = probs[:, :4] @ merge_matrices(groups)[1]
    for k in (0, 1):  # brute force: the mean over class-k rows of the outer product
        rows = [torch.outer(merged[i], probs[i, 4:]) for i in range(6) if labels[i] == k]
        assert torch.allclose(model[k], torch.stack(rows).mean(0), atol=1e-6)
    means = torch.nn.functional.one_hot(labels).float().T
    means = means / means.sum(1, keepdim=True)
    assert torch.allclose(
        conditional_distribution(probs, spans, means, merge_matrices(groups)[1:]), model
    )
    target = torch.as_tensor(m.distribution(), dtype=torch.float32)
    target = target / target.flatten(1).sum(1)[:, None, None]
    expected = 0.5 * (model - target).abs().flatten(1).sum(1).sum()
    assert float(loss(probs, labels)) == pytest.approx(float(expected), rel=1e-5)


def _table(n: int = 400) -> tuple[pd.DataFrame, Schema]:
    rng = np.random.default_rng(0)
    y = rng.random(n) < 0.4
    frame = pd.DataFrame({
        "x": rng.normal(3 + 2 * y, 1.0).clip(0, 10),
        "u": rng.integers(0, 30, n),
        "c": np.where(rng.random(n) < 0.5 + 0.3 * y, "p", "q"),
        "d": rng.choice(["r", "s", "t"], n),
        "y": np.where(y, "no", "yes"),
    })  # fmt: skip
    columns = (
        Column("x", "continuous", 0.0, 10.0),
        Column("u", "integer", 0, 29),
        Column("c", "categorical", categories=("p", "q")),
        Column("d", "categorical", categories=("r", "s", "t")),
        Column("y", "categorical", categories=("no", "yes")),
    )
    return frame, Schema(columns, label="y", label_prior="uniform")


def _fit(frame, schema, monkeypatch, label_pairs=True, steps: int = 0, epsilon: float = 1.0):
    seen = []
    real = measure_marginals  # the module's own, not an earlier spy

    def spy(blocks, marginals, noise, rng, total, rows=1, groups=None):
        seen.append((list(marginals), groups, noise))
        return real(blocks, marginals, noise, rng, total, rows, groups)

    monkeypatch.setattr(rounds, "measure_marginals", spy)
    anchor = AnchorConfig(steps=steps, batch_size=64, label_pairs=label_pairs)
    synth = dpforge.Synthesizer(
        schema, epsilon=epsilon, delta=1e-5, seed=0, progress=False, anchor=anchor
    ).fit(frame)
    return synth, seen


def test_the_plan_reads_public_inputs_and_the_ledger_keeps_its_kind(monkeypatch):
    frame, schema = _table()
    on, seen_on = _fit(frame, schema, monkeypatch)
    off, seen_off = _fit(frame, schema, monkeypatch, label_pairs=False)
    round_two = seen_on[-1]
    assert all(m[0] == "y" and len(m) == 3 for m in round_two[0])
    assert any(any(g) for g in round_two[1])  # a 30-value column's cells are merged
    assert round_two[2] == seen_off[-1][2]  # the same noise multiplier as the pairs
    ledger_on, ledger_off = on.ledger_.to_dict(), off.ledger_.to_dict()
    strip = [{k: v for k, v in e.items() if k != "name"} for e in ledger_on["entries"]]
    assert strip == [{k: v for k, v in e.items() if k != "name"} for e in ledger_off["entries"]]
    assert any("label x column x column" in e["name"] for e in ledger_on["entries"])
    assert on.privacy_spent().epsilon == pytest.approx(off.privacy_spent().epsilon)
    changed = frame.copy()
    changed.loc[0, "u"], changed.loc[1, "y"] = 29, "no" if frame.loc[1, "y"] == "yes" else "yes"
    _, seen_changed = _fit(changed, schema, monkeypatch)
    assert seen_changed[-1][1] == round_two[1]  # the merging: unchanged by private values


def test_refused_without_a_label_or_without_the_selection():
    with pytest.raises(ValueError, match="pairs_per_column above 0"):
        AnchorConfig(label_pairs=True, pairs_per_column=0).validate()
    frame, schema = _table(100)
    unlabelled = Schema(schema.columns)
    anchor = AnchorConfig(steps=0, label_pairs=True)
    synth = dpforge.Synthesizer(unlabelled, epsilon=1.0, seed=0, progress=False, anchor=anchor)
    with pytest.raises(ValueError, match="label_pairs needs a label"):
        synth.fit(frame)


def test_the_default_turns_label_pairs_on_from_the_rule_size_on_public_inputs_only():
    big = LABEL_PAIRS_FROM
    eps = LABEL_PAIRS_SIGNAL / big  # epsilon x N at the threshold
    assert label_pairs_for(None, big, eps, True, True, True)
    assert label_pairs_for(None, big, math.inf, True, True, True)  # the non-private run
    assert not label_pairs_for(None, big - 1, math.inf, True, True, True)
    assert not label_pairs_for(None, big, 0.99 * eps, True, True, True)  # too much noise
    assert not label_pairs_for(None, big, eps, False, True, True)  # no label
    assert not label_pairs_for(None, big, eps, True, False, True)  # an engine counts pairs only
    assert not label_pairs_for(None, big, eps, True, True, False)  # no pair selection
    assert label_pairs_for(True, 10, 0.1, True, True, True)  # a setting wins
    assert not label_pairs_for(False, 10 * big, 10.0, True, True, True)


@pytest.mark.parametrize(
    "rows, epsilon, expected",
    [(2000, 3.0, "column pairs"), (21_000, 1.0, "column pairs"), (21_000, 3.0, "label x column x")],
)
def test_the_default_plan_and_ledger_follow_the_released_size(monkeypatch, rows, epsilon, expected):
    frame, schema = _table(rows)
    synth, seen = _fit(frame, schema, monkeypatch, label_pairs=None, epsilon=epsilon)
    names = [e["name"] for e in synth.ledger_.to_dict()["entries"]]
    assert any(expected in name for name in names)
    assert all(len(m) == (3 if "label" in expected else 2) for m in seen[-1][0])


@pytest.mark.slow
def test_a_small_fit_with_label_pairs_samples_rows_with_the_label_signal(monkeypatch):
    frame, schema = _table(1500)
    synth, _ = _fit(frame, schema, monkeypatch, steps=150)
    rows = synth.sample(1500, seed=1)
    assert set(rows.columns) == set(frame.columns) and len(rows) == 1500
    gap = rows.loc[rows.y == "no", "x"].mean() - rows.loc[rows.y == "yes", "x"].mean()
    assert gap > 1.0  # the real gap is 2: the label's relation to x survives
