"""Marginal measurement (noise, events) and the anchor loss (zero on a perfect fit)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from dpforge.data.encoder import TableEncoder
from dpforge.statistics.anchor import AnchorLoss
from dpforge.statistics.marginals import (
    cell_columns,
    default_marginals,
    encoded_cells,
    measure_marginals,
    true_counts,
)


@pytest.fixture(scope="module")
def encoded(cancer):
    frame, schema = cancer
    encoder = TableEncoder(schema, n_bins=8)
    features, labels = encoder.transform(frame)
    blocks = cell_columns(features, encoder.spans, labels, "diagnosis", encoder.n_classes)
    return frame, encoder, features, labels, blocks


def test_counts_match_a_crosstab_of_the_cells(encoded):
    frame, encoder, _, labels, blocks = encoded
    cells = encoder.bins["mean_radius"].assign(frame["mean_radius"].to_numpy())
    table = pd.crosstab(labels, cells).reindex(columns=range(8), fill_value=0).to_numpy()
    np.testing.assert_array_equal(true_counts(blocks, ("diagnosis", "mean_radius")), table)
    assert true_counts(blocks, ("mean_radius",)).sum() == len(frame)


def test_default_marginals_are_every_column_and_label_by_column(encoded):
    _, encoder, _, _, _ = encoded
    marginals = default_marginals(encoder.spans, "diagnosis")
    assert len(marginals) == 12 and ("diagnosis", "mean_area") in marginals


def test_noise_std_per_cell_is_sigma_times_sqrt_k(encoded):
    """Statistical check: with k marginals each cell gets N(0, (sigma sqrt k)^2) noise."""
    _, encoder, _, _, blocks = encoded
    marginals = default_marginals(encoder.spans, "diagnosis")
    rng = np.random.default_rng(0)
    exact = np.concatenate([true_counts(blocks, m).ravel() for m in marginals])

    def residual() -> np.ndarray:
        measured = measure_marginals(blocks, marginals, 2.0, rng, 569)
        return np.concatenate([m.noisy_counts for m in measured]) - exact

    residuals = np.concatenate([residual() for _ in range(40)])
    expected = 2.0 * np.sqrt(len(marginals))
    assert abs(residuals.mean()) < 4 * expected / np.sqrt(residuals.size)
    assert residuals.std() == pytest.approx(expected, rel=0.03)


def _loss(encoded, noise):
    frame, encoder, features, labels, blocks = encoded
    marginals = default_marginals(encoder.spans, "diagnosis") + [("mean_radius", "mean_area")]
    measured = measure_marginals(blocks, marginals, noise, np.random.default_rng(1), 569)
    prior = torch.as_tensor(np.bincount(labels) / len(labels), dtype=torch.float32)
    return AnchorLoss(measured, encoder.spans, "diagnosis", prior), features, labels


def test_the_loss_is_zero_when_the_rows_reproduce_the_measured_marginals(encoded):
    loss, features, labels = _loss(encoded, noise=0.0)
    rows = torch.as_tensor(features, dtype=torch.float32)
    value = loss(rows, torch.as_tensor(labels))
    assert float(value) == pytest.approx(0.0, abs=1e-4)  # float32 sums over 569 rows


def test_the_loss_grows_when_the_rows_differ_and_has_a_gradient(encoded):
    loss, features, labels = _loss(encoded, noise=0.0)
    rows = torch.as_tensor(features, dtype=torch.float32)
    shuffled = rows[torch.randperm(rows.shape[0], generator=torch.Generator().manual_seed(0))]
    soft = shuffled.clone().requires_grad_(True)
    value = loss(soft, torch.as_tensor(labels))
    value.backward()
    assert float(value) > 0.1 and soft.grad.abs().sum() > 0


def test_cells_encoded_a_chunk_at_a_time_give_the_same_counts(encoded):
    """encoded_cells never builds the whole dense encoding; its counts are the same."""
    frame, encoder, _, _, blocks = encoded
    chunked = encoded_cells(encoder, frame, "diagnosis", chunk_rows=100)
    assert set(chunked) == set(blocks)
    for columns in default_marginals(encoder.spans, "diagnosis") + [("mean_radius", "mean_area")]:
        np.testing.assert_array_equal(true_counts(chunked, columns), true_counts(blocks, columns))


def test_the_one_column_targets_evaluated_together_give_the_per_target_loss(encoded):
    """The grouped L1 of the 1-way and label x column targets (``anchor_l1``) is the sum of
    the per-target L1 distances, on any rows; the pairs keep their own loss."""
    _, encoder, features, labels, blocks = encoded
    marginals = default_marginals(encoder.spans, "diagnosis") + [("mean_radius", "mean_area")]
    measured = measure_marginals(blocks, marginals, 5.0, np.random.default_rng(4), 569)
    prior = torch.as_tensor(np.bincount(labels) / len(labels), dtype=torch.float64)
    loss = AnchorLoss(measured, encoder.spans, "diagnosis", prior)
    rows = torch.as_tensor(features, dtype=torch.float64)[:64]
    y = torch.as_tensor(labels)[:64]
    models = loss.model_marginals(rows, y)
    one = [(t, m) for t, m in zip(loss.targets, models, strict=True) if len(t.spans) == 1]
    expected = sum(float(loss._l1(t, m)) for t, m in one)
    expected += float(loss._l1(loss.targets[-1], models[-1]))
    assert float(loss(rows, y)) == pytest.approx(expected, rel=1e-9)


def test_pair_targets_of_unequal_widths_give_the_one_by_one_loss_and_gradient():
    """``PairGroups`` (heads split once, one batched matmul per pair of widths, each pair
    narrow block first) against the obvious oracle: each pair's weighted joint distribution
    and weighted L1 gap, one pair at a time, sliced from the output."""
    from dpforge.data.encoder import Span
    from dpforge.statistics.anchor import _Target, joint_distribution
    from dpforge.statistics.anchor_l1 import PairGroups, split_heads

    widths = (3, 7, 2, 5, 7)
    spans, start = [], 0
    for i, dim in enumerate(widths):
        spans.append(Span(f"c{i}", start, dim, "softmax"))
        start += dim
    rng = torch.Generator().manual_seed(0)
    pairs = ((0, 1, 1.0), (1, 3, 0.5), (2, 0, 2.0), (3, 2, 1.0), (4, 0, 1.5), (0, 4, 1.0))
    targets = [
        _Target((spans[a], spans[b]), False, torch.rand(widths[a] * widths[b], generator=rng)
                .reshape(widths[a], widths[b]).double(), weight)
        for a, b, weight in pairs
    ]  # fmt: skip
    logits = torch.randn(50, start, generator=rng, dtype=torch.float64)
    weights = torch.rand(50, generator=rng, dtype=torch.float64)
    weights = weights / weights.sum()

    def probs() -> torch.Tensor:
        x = logits.clone().requires_grad_(True)
        parts = [torch.softmax(x[:, s.start : s.stop], dim=1) for s in spans]
        return x, torch.cat(parts, dim=1)

    x_fast, p_fast = probs()
    grouped = PairGroups.build(targets, spans)
    assert len(grouped.groups) == 4  # (3, 7) three times, (5, 7), (2, 3), (2, 5)
    fast = grouped.l1(split_heads(p_fast, spans), weights)
    fast.backward()
    x_slow, p_slow = probs()
    slow = sum(
        t.weight * (joint_distribution(p_slow, t.spans, weights) - t.distribution).abs().sum()
        for t in targets
    )
    slow.backward()
    assert float(fast) == pytest.approx(float(slow), rel=1e-12)
    torch.testing.assert_close(x_fast.grad, x_slow.grad, rtol=1e-10, atol=1e-12)
    assert PairGroups.build([], spans) is None
    with pytest.raises(ValueError, match="tile"):
        split_heads(p_fast[:, 1:], spans)
