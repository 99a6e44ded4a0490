"""A small class's row of a label x numeric marginal pooled to what its records carry
(``AnchorConfig.class_rows``; free post-processing of round 1)."""

from __future__ import annotations

import numpy as np
import pytest

import dpforge
from dpforge.statistics.anchor import AnchorConfig
from dpforge.statistics.class_rows import pooled_class_rows, pooled_row
from dpforge.statistics.marginals import MeasuredMarginal


def _marginal(columns, rows) -> MeasuredMarginal:
    counts = np.asarray(rows, dtype=np.float64)
    return MeasuredMarginal(columns, counts.shape, counts.ravel(), float(counts.sum()))


def test_pooling_keeps_each_row_total_and_leaves_rows_with_enough_records():
    rng = np.random.default_rng(0)
    small = 40.0 + rng.normal(0, 10.0, 8)  # 320 records on 8 cells: under 2 sd a cell
    large = 400.0 + rng.normal(0, 10.0, 8)
    missing = [7.0, 90.0]
    rows = [np.append(small, missing[0]), np.append(large, missing[1])]
    income = _marginal(("y", "income"), rows)
    code = _marginal(("y", "code"), rows)
    one_way = _marginal(("income",), [np.arange(1.0, 10.0) * 50])
    out = pooled_class_rows([income, code, one_way], "y", {"income": True}, 30.0, 2.0)
    pooled = out[0].noisy_counts.reshape(2, 9)
    assert pooled[0].sum() == pytest.approx(rows[0].sum())  # each row keeps its total
    assert not np.allclose(pooled[0], rows[0])  # the small class's row was pooled
    assert pooled[0, -1] == missing[0]  # the "missing" cell is never pooled
    assert np.array_equal(pooled[1], rows[1])  # 400 a cell stands 2 sd above 30: as released
    assert out[1] is code and out[2] is one_way  # not label x numeric: untouched
    assert pooled_class_rows([income], "y", {"income": True}, 30.0, 0.0)[0] is income  # off


def test_a_pool_is_spread_by_the_columns_distribution_and_a_full_row_stays():
    shape = np.array([0.4, 0.1, 0.1, 0.4])
    row = np.array([10.0, 30.0, -5.0, 25.0])
    out = pooled_row(row, n=60.0, shape=shape, std=20.0, z=2.0)  # (60/40)^2/4: one pool
    assert out == pytest.approx(60.0 * shape)
    assert np.array_equal(pooled_row(row, 200.0, shape, 20.0, 2.0), row)  # 200 >= 2 * 20 * 4


def test_a_cell_that_stands_out_on_its_own_keeps_its_count():
    shape = np.array([0.1] + [0.18] * 5)
    row = np.array([200.0, 10.0, -20.0, 30.0, 5.0, -5.0])  # 200 records heaped on one value
    out = pooled_row(row, n=220.0, shape=shape, std=20.0, z=2.0)  # 220 < 2 * 20 * 6
    assert out[0] == 200.0  # stands 10 sd above 0: kept
    assert out[1:] == pytest.approx([4.0] * 5)  # the rest (20) pooled, spread by the shape
    assert out.sum() == pytest.approx(row.sum())


def _small_class_error(pooled: bool, truths: tuple, seed: int) -> float:
    """L1 error of the smaller class's released distribution (after the projection), with
    the rows pooled or as measured, over 200 releases;
    ``truths``: the two classes' distributions."""
    rng, sd, (truth, big) = np.random.default_rng(seed), 34.0, truths
    errors = []
    for _ in range(200):
        counts = np.stack([rng.multinomial(640, truth), rng.multinomial(2300, big)]) * 1.0
        noisy = counts + rng.normal(0.0, sd, counts.shape)
        column = counts.sum(axis=0) + rng.normal(0.0, sd, truth.size)
        measured = [_marginal(("x",), column), _marginal(("y", "x"), noisy)]
        measured = [MeasuredMarginal(m.columns, m.shape, m.noisy_counts, 2940.0)
                    for m in measured]  # fmt: skip
        if pooled:
            measured = pooled_class_rows(measured, "y", {"x": False}, sd, 2.0)
        given = measured[1].distribution()[0]
        errors.append(np.abs(given / given.sum() - counts[0] / counts[0].sum()).sum())
    return float(np.mean(errors))


def test_pooling_brings_a_small_class_row_closer_to_its_records():
    """nmes-like: 640 records of the smaller class on 21 cells, noise sd 34 a cell."""
    cells = np.arange(21)
    counts = [0.6**cells / (0.6**cells).sum(), 0.75**cells / (0.75**cells).sum()]  # visits
    flat = [np.full(21, 1.0 / 21)] * 2  # no relation to the label
    for truths in (counts, flat):
        measured, pooled = (_small_class_error(p, truths, 1) for p in (False, True))
        assert pooled < 0.8 * measured


def test_the_option_changes_no_release_and_keeps_each_class_total(cancer):
    frame, schema = cancer

    def fit(class_rows: float):
        anchor = AnchorConfig(steps=0, scout_steps=0, batch_size=64, class_rows=class_rows)
        synth = dpforge.Synthesizer(
            schema, epsilon=1.0, delta=1e-5, seed=0, progress=False, anchor=anchor
        )
        return synth.fit(frame)

    plain, pooled = fit(0.0), fit(2.0)
    assert plain.ledger_.to_dict() == pooled.ledger_.to_dict()  # post-processing: free
    label = schema.label
    numeric = {c.name for c in schema.generated_columns if c.is_numeric}
    changed = 0
    for a, b in zip(plain.sample_release_.marginals, pooled.sample_release_.marginals,
                    strict=True):  # fmt: skip
        rows_a, rows_b = (m.noisy_counts.reshape(m.shape) for m in (a, b))
        if a.columns[0] == label and a.columns[-1] in numeric and len(a.columns) == 2:
            assert rows_b.sum(axis=1) == pytest.approx(rows_a.sum(axis=1))
            changed += not np.allclose(rows_a, rows_b)
        elif len(a.columns) == 1:
            assert np.array_equal(rows_a, rows_b)
    assert changed  # 569 records at epsilon 1: the smaller class's rows are pooled
    with pytest.raises(ValueError, match="class_rows must be >= 0"):
        AnchorConfig(class_rows=-1.0).validate()
