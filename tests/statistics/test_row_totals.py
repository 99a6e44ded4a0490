"""Each class's row of a label x column marginal projected onto the classes' pooled totals
(``AnchorConfig.class_totals``, off by default; free post-processing of round 1)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from tests.anchor_support import NO_TRAINING, released_fit

import dpforge
from dpforge.statistics.marginals import MeasuredMarginal, row_onto
from dpforge.statistics.projection import project_to_simplex
from dpforge.statistics.row_totals import class_totals, with_class_totals


def _marginal(columns, rows, total=None) -> MeasuredMarginal:
    counts = np.asarray(rows, dtype=np.float64)
    total = float(counts.sum()) if total is None else total
    return MeasuredMarginal(columns, counts.shape, counts.ravel(), total)


def test_class_totals_weight_each_marginal_by_its_cells():
    a = _marginal(("y", "a"), [[10.0, 10.0], [30.0, 30.0]])  # totals 20, 60 on 2 cells
    b = _marginal(("y", "b"), [[10.0] * 4, [5.0] * 4])  # totals 40, 20 on 4 cells
    assert class_totals([a, b], "y") == pytest.approx([(20 / 2 + 40 / 4) / 0.75,
                                                      (60 / 2 + 20 / 4) / 0.75])  # fmt: skip
    with pytest.raises(ValueError, match="no label x column marginal"):
        class_totals([_marginal(("a",), [1.0, 2.0])], "y")


def test_every_row_is_projected_onto_its_class_total_scaled_to_n():
    a = _marginal(("y", "a"), [[60.0, 20.0, -5.0], [10.0, 5.0, 10.0]], total=100.0)
    b = _marginal(("y", "b"), [[40.0, 40.0], [30.0, 10.0]], total=100.0)
    one_way = _marginal(("a",), [50.0, 30.0, 20.0])
    out = with_class_totals([a, one_way, b], "y")
    totals = class_totals([a, b], "y")
    expected = totals * 100.0 / totals.sum()
    for m in (out[0], out[2]):
        assert m.row_totals == pytest.approx(tuple(expected))
        assert (m.distribution() * 100.0).sum(axis=1) == pytest.approx(expected)  # each row
        assert np.array_equal(m.noisy_counts, (a if m.columns[1] == "a" else b).noisy_counts)
    assert out[1] is one_way  # not label x column: as it was
    three = _marginal(("y", "a", "b"), np.ones((2, 3, 2)), total=100.0)  # round 2's label x a x b
    led = with_class_totals([a, b, three], "y")[2]
    assert led.row_totals == pytest.approx(tuple(expected))
    assert (led.distribution() * 100.0).sum(axis=(1, 2)) == pytest.approx(expected)
    assert with_class_totals([a, b], None) == [a, b]  # no label: nothing to pool


def test_a_row_whose_noise_summed_high_loses_it_where_the_class_has_no_records():
    # 200 records of the small class all on cell 0 (a value its members share, as psid's
    # non-participants' 0 hours), 300 of the large spread; noise sd about 10 a cell, and the
    # small row's sums to +60 over its empty cells
    small = [200.0 - 4.0, 25.0, 20.0, 15.0, -3.0, 7.0]
    large = [3.0, 50.0, 70.0, 80.0, 50.0, 40.0]
    m = _marginal(("y", "hours"), [small, large], total=500.0)
    whole = m.distribution() * 500.0
    own = replace(m, row_totals=(200.0, 300.0)).distribution() * 500.0
    assert own.sum(axis=1) == pytest.approx([200.0, 300.0])  # each row its class's total
    assert whole[0].sum() > 220.0  # the whole table's projection leaves the surplus in
    assert own[0, 1:].sum() < 0.5 * whole[0, 1:].sum()  # off the shared value: halved
    share = own[0, 0] / own[0].sum(), whole[0, 0] / whole[0].sum()
    assert share[0] > share[1] + 0.05  # the class sits more on its shared value (0.91, 0.81)


def test_a_row_short_of_its_total_is_scaled_up_and_its_empty_cells_stay_empty():
    row = np.array([30.0, -6.0, 10.0, -2.0])  # positive cells hold 40 of 60 records
    out = row_onto(row, 60.0)
    assert out == pytest.approx([45.0, 0.0, 15.0, 0.0])  # the shape kept, no cell invented
    assert project_to_simplex(row, 60.0)[1] > 0  # the plain projection spreads the deficit
    assert row_onto(np.array([50.0, 10.0, 2.0]), 40.0) == pytest.approx(
        project_to_simplex(np.array([50.0, 10.0, 2.0]), 40.0)
    )  # a surplus: the projection, smallest cells to zero first
    assert row_onto(np.array([-1.0, -3.0]), 4.0) == pytest.approx([2.0, 2.0])  # nothing: even
    assert row_onto(row, 0.0) == pytest.approx([0.0] * 4)  # a class of none


def test_pooled_totals_err_less_than_one_rows_sum_and_the_rows_less_than_before():
    """Over many noise draws: the classes' pooled totals are closer to the true ones than any
    one row's sum, and the small class's rows closer to the truth than the whole-table
    projection leaves them (L1 over cells, mean over draws)."""
    rng = np.random.default_rng(0)
    true = np.zeros((2, 8))
    true[0, 0], true[1] = 40.0, [20.0, 50.0, 80.0, 60.0, 40.0, 30.0, 20.0, 60.0]  # 40 / 360
    sd, n = 8.0, float(true.sum())
    pooled_err, row_err, new_err, old_err = [], [], [], []
    for _ in range(200):
        ms = [_marginal(("y", f"c{i}"), true + rng.normal(0, sd, true.shape), n) for i in range(6)]
        totals = class_totals(ms, "y")
        pooled_err.append(abs(totals[0] - 40.0))
        row_err.append(abs(ms[0].noisy_counts.reshape(2, 8)[0].sum() - 40.0))
        moved = with_class_totals(ms, "y")
        new_err.append(np.abs(moved[0].distribution()[0] * n - true[0]).sum())
        old_err.append(np.abs(ms[0].distribution()[0] * n - true[0]).sum())
    assert np.mean(pooled_err) < 0.6 * np.mean(row_err)  # about 1 / sqrt(6) of it
    assert np.mean(new_err) < 0.7 * np.mean(old_err)


def test_round_trip_keeps_the_row_totals():
    m = MeasuredMarginal(("y", "a"), (2, 2), np.array([1.0, 2.0, 3.0, 4.0]), 10.0, (), (4.0, 6.0))
    back = MeasuredMarginal.from_dict(m.to_dict())
    assert back.row_totals == (4.0, 6.0)
    assert np.array_equal(back.distribution(), m.distribution())
    plain = MeasuredMarginal(("y", "a"), (2, 2), np.array([1.0, 2.0, 3.0, 4.0]), 10.0)
    assert "row_totals" not in plain.to_dict()  # folders saved before read as before


def _fit(cancer, class_totals: bool):
    return released_fit(cancer, replace(NO_TRAINING, class_totals=class_totals))


def test_the_ledger_and_counts_are_unchanged_and_the_rows_follow_the_totals(cancer):
    on, off = _fit(cancer, True), _fit(cancer, False)
    assert on.ledger_.to_dict() == off.ledger_.to_dict()  # post-processing: same ledger
    pairs = list(zip(on.sample_release_.marginals, off.sample_release_.marginals, strict=True))
    for a, b in pairs:
        assert np.array_equal(a.noisy_counts, b.noisy_counts)  # the release is the same
    label = cancer[1].label
    by_label = [(a, b) for a, b in pairs if a.is_label_by(label)]
    assert by_label and all(a.row_totals and not b.row_totals for a, b in by_label)
    sums = {tuple(np.round(a.distribution().sum(axis=1), 9)) for a, _ in by_label}
    assert len(sums) == 1  # every label x column table agrees on the class shares now


def test_a_saved_model_keeps_its_row_totals(cancer, tmp_path):
    fitted = _fit(cancer, True)
    fitted.save(tmp_path / "model")
    loaded = dpforge.load(tmp_path / "model")
    for a, b in zip(
        fitted.sample_release_.marginals, loaded.sample_release_.marginals, strict=True
    ):
        assert a.row_totals == b.row_totals
    assert loaded.sample(200, seed=1).equals(fitted.sample(200, seed=1))
