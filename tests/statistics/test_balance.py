"""The balanced draw (:mod:`dpforge.statistics.balance`): exchanges keep n rows, never make a
row negative or (from a distinct draw) repeated, and bring every column's and pair's counts
close to n x the weighted pool, checked against a plain loop over the pairs."""

from __future__ import annotations

from itertools import combinations

import numpy as np
import pytest

from dpforge.statistics import balance
from dpforge.statistics.balance import MAX_IDS, balance_cells, balance_marginals, balanced_counts
from dpforge.statistics.marginals import CellColumn


def _pool(size: int, rng: np.random.Generator) -> dict[str, CellColumn]:
    a = rng.integers(0, 3, size)
    b = (a + rng.integers(0, 2, size)) % 4  # dependent on a
    y = rng.integers(0, 2, size)
    return {"a": CellColumn(a, 3), "b": CellColumn(b, 4), "y": CellColumn(y, 2)}


def _distance_by_loop(cells, counts, expected) -> float:
    """sum |drawn - expected| over every column's and pair's cells, one marginal at a time."""
    total = 0.0
    names = list(cells)
    for group in [(n,) for n in names] + list(combinations(names, 2)):
        drawn, want = {}, {}
        for i in range(len(counts)):
            key = tuple(int(cells[n].index[i]) for n in group)
            drawn[key] = drawn.get(key, 0.0) + counts[i]
            want[key] = want.get(key, 0.0) + expected[i]
        total += sum(abs(drawn[k] - want[k]) for k in want)
    return total


@pytest.mark.parametrize("distinct", [False, True])
def test_exchanges_keep_n_rows_and_lower_the_distance(distinct):
    rng = np.random.default_rng(0)
    cells = _pool(2000, rng)
    weights = rng.dirichlet(np.full(2000, 5.0))
    n = 250
    expected = n * weights
    if distinct:
        counts = np.zeros(2000, dtype=np.int64)
        counts[rng.choice(2000, n, replace=False, p=weights)] = 1
    else:
        counts = np.bincount(rng.choice(2000, n, p=weights), minlength=2000)
    index, size = balance_cells(cells, balance_marginals(list(cells), [], 2000))
    after, _ = balanced_counts(index, size, expected, counts, rounds=40)
    assert after.sum() == n and after.min() >= 0
    if distinct:
        assert after.max() == 1
    before_d, after_d = (_distance_by_loop(cells, c, expected) for c in (counts, after))
    assert after_d < 0.5 * before_d


def test_no_rounds_leave_the_draw_as_it_is():
    rng = np.random.default_rng(1)
    cells = _pool(300, rng)
    counts = np.bincount(rng.integers(0, 300, 40), minlength=300)
    index, size = balance_cells(cells, balance_marginals(list(cells), [], 300))
    same, _ = balanced_counts(index, size, np.full(300, 40 / 300), counts, rounds=0)
    assert np.array_equal(same, counts)


def test_cell_ids_are_one_range_per_marginal():
    rng = np.random.default_rng(2)
    cells = _pool(500, rng)
    index, size = balance_cells(cells, balance_marginals(["a", "b", "y"], [], 500))
    assert index.shape == (6, 500)  # 3 columns and 3 pairs
    assert size == 3 + 4 + 2 + 12 + 6 + 8
    assert np.array_equal(index[3], cells["a"].index * 4 + cells["b"].index + 9)
    ranges = [(row.min(), row.max()) for row in index]
    assert all(hi < lo2 for (_, hi), (lo2, _) in zip(ranges, ranges[1:], strict=False))


def test_wide_tables_balance_on_the_measured_marginals_then_the_columns():
    names = [f"c{i}" for i in range(40)]
    pool = MAX_IDS // 200  # 40 columns and their 780 pairs would pass the limit
    measured = [("c0", "c1"), ("c2", "c3"), ("c0", "c1")]
    chosen = balance_marginals(names, measured, pool)
    assert chosen == [(n,) for n in names] + [("c0", "c1"), ("c2", "c3")]
    assert balance_marginals(names, measured, MAX_IDS // 40) == [(n,) for n in names]
    assert len(balance_marginals(names[:5], measured, pool)) == 5 + 10


def test_a_three_column_marginal_gets_its_own_cells():
    rng = np.random.default_rng(3)
    cells = _pool(200, rng)
    index, size = balance_cells(cells, [("y", "a", "b")])
    assert size == 24
    flat = (cells["y"].index * 3 + cells["a"].index) * 4 + cells["b"].index
    assert np.array_equal(index[0], flat)


def _candidates_by_formula(index, excess, counts):
    """The gains recomputed for every (marginal, row) from the excess, the obvious way."""
    e = excess[index]
    gain_remove = (np.abs(e - 1) - np.abs(e)).sum(axis=0)
    gain_add = (np.abs(e + 1) - np.abs(e)).sum(axis=0)
    gain_remove[counts == 0] = np.inf
    gain_add[counts > 0] = np.inf
    return balance._best(gain_remove), balance._best(gain_add)


@pytest.mark.parametrize("rows", [700, 40_000])  # one block, and several (BLOCK = 16,384)
def test_candidates_are_those_of_the_per_row_formula(rows):
    rng = np.random.default_rng(3)
    cells = _pool(rows, rng)
    index, size = balance_cells(cells, balance_marginals(list(cells), [], rows))
    counts = np.bincount(rng.integers(0, rows, rows // 8), minlength=rows)
    excess = rng.normal(0.0, 3.0, size).round(2)  # fractional excess, as n x weights gives
    got = balance._candidates(index, excess, counts)
    want = _candidates_by_formula(index, excess, counts)
    for g, w in zip(got, want, strict=True):
        assert np.array_equal(g, w)
