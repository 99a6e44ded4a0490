"""Long code lists (statistics/codes.py): the public prefix groups, the cells placed on a noisy
code histogram, decoding inside a cell, the sensitivity of the release and the cell-count rule."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dpforge.data.encoder import TableEncoder
from dpforge.schema.table import Column, Schema
from dpforge.statistics.codes import (
    LONG_CODES,
    MAX_CODE_CELLS,
    MIN_CODE_CELLS,
    cells_from_dict,
    code_cell_count,
    long_code_columns,
    measure_code_histograms,
    place_codes,
    prefix_groups,
)

ZIPS = tuple(f"{i:05d}" for i in range(100_000))


def test_prefix_groups_follow_the_digits_of_postal_codes():
    groups = prefix_groups(ZIPS, np.arange(len(ZIPS)), 100)
    assert groups.max() + 1 == 100
    prefixes = pd.Series([z[:2] for z in ZIPS]).groupby(groups).nunique()
    assert (prefixes == 1).all()  # each group is one two-digit prefix
    assert np.all(np.diff(groups) >= 0)  # numbered in text order


def test_prefix_groups_stay_within_the_count_and_split_uneven_lists():
    codes = tuple([f"A{i:03d}" for i in range(900)] + ["B1", "B2", "C"])
    for count in (2, 7, 50, 333):
        groups = prefix_groups(codes, np.arange(len(codes)), count)
        assert 1 <= groups.max() + 1 <= count
        assert set(np.unique(groups)) == set(range(groups.max() + 1))
    assert prefix_groups(codes, np.arange(len(codes)), 2000).max() + 1 == len(codes)


def _zip_column() -> Column:
    return Column("zip", "categorical", categories=ZIPS)


def test_codes_that_stand_out_get_cells_and_sampled_codes_stay_in_their_cell():
    rng = np.random.default_rng(0)
    counts = np.zeros(len(ZIPS))
    counts[[10, 500, 70_000]] = [400.0, 200.0, 100.0]
    counts[20_000:20_050] = 2.0  # a tail no single code of which stands out
    cells = place_codes(_zip_column(), counts + rng.normal(0, 5, counts.size), 5.0, 64)
    assert {10, 500, 70_000} <= set(cells.heavy) and cells.size <= 64
    assert len(cells.heavy) <= 6  # about one code of pure noise passes the level
    drawn = cells.decode(np.repeat(np.arange(cells.size), 200), rng)
    assert drawn.min() >= 0 and drawn.max() < len(ZIPS)
    assert np.array_equal(cells.assign(drawn), np.repeat(np.arange(cells.size), 200))
    again = cells_from_dict(_zip_column(), cells.to_dict())  # the model folder's form
    assert np.array_equal(again.cell_of, cells.cell_of)
    assert np.allclose(again.mass, cells.mass, rtol=1e-5)


def test_inside_a_pooled_cell_codes_follow_the_noisy_mass():
    categories = tuple(f"{i:03d}" for i in range(600))
    column = Column("c", "categorical", categories=categories)
    noisy = np.zeros(600)
    noisy[100:300] = 1.0  # 200 codes share the mass; none stands out at std 1
    noisy[500:520] = 50.0  # 20 stand out: 12 get cells (3/4 of 16), 8 weigh 50 in a pool
    cells = place_codes(column, noisy, 1.0, 16)
    assert len(cells.heavy) == 12 and set(cells.heavy) <= set(range(500, 520))
    rng = np.random.default_rng(1)
    pooled_standouts = [c for c in range(500, 520) if c not in cells.heavy]
    cell = cells.assign(np.array(pooled_standouts))
    assert len(set(cell)) == 1  # all in the group of the codes 5xx
    drawn = cells.decode(np.full(4000, cell[0]), rng)
    assert set(drawn) == set(pooled_standouts)  # the group's other codes have no count left
    cell = cells.assign(np.array([150]))[0]
    drawn = cells.decode(np.full(20_000, cell), rng)
    members = np.flatnonzero(cells.cell_of == cell)
    share = np.bincount(drawn, minlength=600)[members] / drawn.size
    assert np.abs(share - 1 / members.size).max() < 3 / members.size  # evenly spread


def test_one_more_record_moves_one_code_by_one():
    column = Column("c", "categorical", categories=tuple(f"{i:04d}" for i in range(1000)))
    table = pd.DataFrame({"c": [f"{i % 37:04d}" for i in range(500)]})
    more = pd.concat([table, pd.DataFrame({"c": ["0999"]})], ignore_index=True)
    rng = np.random.default_rng(0)
    one = measure_code_histograms(table, [column], 0.0, rng)["c"]
    two = measure_code_histograms(more, [column], 0.0, rng)["c"]
    assert np.abs(two - one).sum() == 1.0 and two[999] - one[999] == 1.0


def test_the_cell_count_is_a_rule_of_public_quantities():
    assert code_cell_count(3000, 0.0, 2) == MAX_CODE_CELLS  # no noise: the most cells
    small, large = code_cell_count(3000, 10.0, 2), code_cell_count(300_000, 10.0, 2)
    assert MIN_CODE_CELLS <= small < large <= MAX_CODE_CELLS
    assert code_cell_count(3000, 10.0, 5) <= small  # more classes, fewer cells each


def test_only_lists_longer_than_the_threshold_are_code_lists_and_the_encoder_bounds_them():
    short = Column("s", "categorical", categories=tuple(str(i) for i in range(LONG_CODES)))
    zips = Column("zip", "categorical", categories=ZIPS, nullable=True)
    assert long_code_columns([short, zips]) == [zips]
    noisy = np.zeros(len(ZIPS))
    noisy[[3, 4]] = 50.0
    cells = place_codes(zips, noisy, 1.0, 32)
    schema = Schema((short, zips))
    encoder = TableEncoder(schema, n_bins=64, codes={"zip": cells})
    assert encoder.spans[1].dim == cells.size + 1  # and the nullable "missing" cell
    table = pd.DataFrame({"s": ["1", "2", "3"], "zip": ["00003", None, "54321"]})
    features, _ = encoder.transform(table)
    back = encoder.inverse_transform(features, None, np.random.default_rng(0))
    assert back["zip"].iloc[0] == "00003" and pd.isna(back["zip"].iloc[1])
    assert back["zip"].iloc[2][:1] == "5"  # the pooled group of 54321: codes from 5...


@pytest.mark.parametrize("bad", [{"heavy": [100_000], "groups": 4}, {"heavy": [1, 1], "groups": 4}])
def test_saved_cells_that_do_not_fit_the_list_are_refused(bad):
    with pytest.raises(ValueError, match="heavy"):
        cells_from_dict(_zip_column(), bad)
