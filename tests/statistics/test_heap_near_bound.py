"""Numeric columns heaped next to a bound (issue 22, session 37; creditcard's ``share``): a
heaped fine cell is decoded inside the cell it was drawn for, never onto the bound's point
cell, and a cell's continuous part is sized from DP releases of the cell itself, not from a
histogram pooled wider than the cell. Both are free post-processing: the ledger and the
cells' placement do not change."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import dpforge
from dpforge.schema.table import Column, Schema
from dpforge.statistics.anchor import AnchorConfig
from dpforge.statistics.bins import NumericBins, numeric_bins
from dpforge.statistics.cells import FINE_CELLS, cell_counts, within_cell_mass

FINE = np.linspace(0.0, 1.0, FINE_CELLS + 1)  # the fine grid of a [0, 1] continuous column


def _bins(edges, mass) -> NumericBins:
    return NumericBins("x", 0.0, 1.0, False, np.asarray(edges), np.zeros(0), FINE, mass)


def test_a_heap_in_the_fine_cell_next_to_a_bound_stays_in_its_cell():
    mass = np.zeros(FINE_CELLS)
    mass[0] = 200.0  # records crowded just above 0 (none exactly 0): an isolated peak
    mass[FINE_CELLS - 1] = 50.0  # and just below the upper bound
    bins = _bins([0.0, 0.07, 0.93, 1.0], mass)
    cells = np.array([1] * 300 + [3] * 300)
    values = bins.decode(cells, np.random.default_rng(0))
    assert np.all(values > 0.0) and np.all(values < 1.0)  # not on a bound's point cell
    assert np.array_equal(bins.assign(values), cells)  # back in the cell drawn
    assert set(values[:300]) == {1e-4}  # the roundest number inside (0, 1/1024)


def test_a_heap_just_below_a_round_edge_is_not_moved_over_it():
    mass = np.zeros(FINE_CELLS)
    mass[511] = 100.0  # the fine cell [0.499, 0.5): 0.5 is its upper edge and a cell's edge
    bins = _bins([0.0, 0.25, 0.5, 1.0], mass)
    values = bins.decode(np.full(200, 2), np.random.default_rng(0))
    assert np.all(values < 0.5) and np.all(bins.assign(values) == 2)


def test_every_decoded_value_is_assigned_back_to_its_cell():
    rng = np.random.default_rng(1)
    for _ in range(20):
        mass = np.where(rng.random(FINE_CELLS) < 0.05, rng.exponential(50, FINE_CELLS), 0.0)
        inner = np.unique(rng.choice(FINE[1:-1], size=12, replace=False))
        bins = _bins(np.concatenate([[0.0], inner, [1.0]]), mass)
        cells = rng.integers(0, bins.size, 2000)
        assert np.array_equal(bins.assign(bins.decode(cells, rng)), cells)


def test_a_cells_count_mixes_its_fine_sum_and_round_one_by_their_noise():
    column = Column("x", "continuous", 0.0, 1.0)
    noisy = np.zeros(FINE_CELLS + 2)
    noisy[1:65] = 5.0  # 320 in the first 64 fine cells
    noisy[65:129] = 1.0  # 64 in the next 64
    edges = np.array([0.0, FINE[64], FINE[128], 1.0])
    alone = cell_counts(column, noisy, edges, 2.0)
    assert np.allclose(alone, [320.0, 64.0, 0.0])  # no round 1: the fine sums
    released = (np.array([300.0, 100.0, 10.0]), 16.0)  # round 1: sd 16 a cell
    mixed = cell_counts(column, noisy, edges, 2.0, released)
    # fine sum of 64 cells: variance 4 * 64 = 256, as round 1's 16^2: an even mix
    assert np.allclose(mixed[:2], [310.0, 82.0])
    assert np.allclose(cell_counts(column, noisy, edges, 2.0, (released[0], 0.0)), released[0])


def test_a_heaps_cell_keeps_its_continuous_part():
    column = Column("x", "continuous", 0.0, 1.0)
    noisy = np.zeros(FINE_CELLS + 2)
    noisy[1] = 200.0  # the heap in the first fine cell
    noisy[2:74] = 5.0  # 360 records spread over the rest of the first cell [0, 73/1024)
    edges = np.array([0.0, FINE[73], 1.0])
    counts = cell_counts(column, noisy, edges, 5.0)
    kept = within_cell_mass(column, noisy, edges, 40.0, counts)
    assert np.isclose(kept[:73].sum(), 560.0)  # the heap and all 360 spread over the cell
    assert np.isclose(kept[0], 200.0 + 360.0 / 73) and np.allclose(kept[1:73], 360.0 / 73)


def _heaped_table(n: int = 1000, seed: int = 0) -> tuple[pd.DataFrame, Schema]:
    """60 % exact zeros (one class), the rest crowded just above 0 (the other class)."""
    rng = np.random.default_rng(seed)
    label = rng.random(n) < 0.4
    share = np.where(label, rng.uniform(1e-4, 9e-4, n), 0.0)
    frame = pd.DataFrame(
        {
            "share": share,
            "age": rng.normal(40, 10, n).clip(18, 90),
            "y": np.where(label, "yes", "no"),
        }
    )
    schema = Schema(
        (
            Column("share", "continuous", 0.0, 1.0),
            Column("age", "continuous", 18.0, 90.0),
            Column("y", "categorical", categories=("no", "yes")),
        ),
        label="y",
    )
    return frame, schema


def _fit(frame, schema, steps: int = 300):
    anchor = AnchorConfig(steps=steps)
    return dpforge.Synthesizer(
        schema, epsilon=1.0, delta=1e-5, seed=0, progress=False, anchor=anchor
    ).fit(frame)


@pytest.fixture(scope="module")
def heaped():
    frame, schema = _heaped_table()
    return frame, schema, _fit(frame, schema)


def test_exact_zeros_and_the_mass_just_above_them_come_back_apart(heaped):
    frame, schema, synth = heaped
    rows = synth.sample(4000, seed=1)
    share = rows["share"].to_numpy()
    zeros = float(np.mean(share == 0.0))
    assert abs(zeros - 0.6) < 0.1  # the exact zeros' share, within noise (not all of it)
    near = float(np.mean((share > 0.0) & (share < 1.0 / 32)))
    assert abs(near - 0.4) < 0.1  # the rest next to 0, in the scorer's first interior cell
    scored = numeric_bins(schema.column("share"), 32)
    real = np.bincount(scored.assign(frame["share"].to_numpy()), minlength=32) / len(frame)
    synthetic = np.bincount(scored.assign(share), minlength=32) / len(share)
    assert 0.5 * np.abs(real - synthetic).sum() < 0.15


def test_the_number_of_cells_does_not_follow_a_private_value(heaped):
    frame, schema, synth = heaped
    cell = _fit(frame, schema, steps=0)
    changed = frame.copy()
    changed.loc[0, "share"] = 0.9  # a private value moves: the number of cells does not
    other = _fit(changed, schema, steps=0)
    assert other.encoder_.bins["share"].size == cell.encoder_.bins["share"].size


def test_a_nullable_column_reads_its_own_cells_of_round_one():
    frame, schema = _heaped_table(600)
    frame.loc[frame.index[:60], "share"] = np.nan  # 10 % empty: a "missing" cell after the bound
    columns = tuple(
        Column("share", "continuous", 0.0, 1.0, nullable=True) if c.name == "share" else c
        for c in schema.columns
    )
    synth = _fit(frame, Schema(columns, label="y"), steps=0)
    bins = synth.encoder_.bins["share"]
    assert bins.fine_mass is not None and np.all(np.isfinite(bins.fine_mass))
    span = next(s for s in synth.encoder_.spans if s.column == "share")
    assert span.dim == bins.size + 1  # the "missing" cell, last: not read as an interior cell
    mass = np.asarray(bins.fine_mass)
    assert mass[:2].sum() > 0.5 * mass.sum()  # the records just above 0 keep their place
