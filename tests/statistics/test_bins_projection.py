"""Public cells of numeric columns and the simplex projection (against a slow oracle)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpforge.schema.table import Column
from dpforge.statistics.bins import numeric_bins
from dpforge.statistics.projection import project_to_simplex


def test_small_integer_domains_get_one_cell_per_value():
    bins = numeric_bins(Column("hours", "integer", lower=1, upper=99), 64)
    assert bins.size == 99
    values = np.arange(1, 100)
    assert (bins.decode(bins.assign(values), np.random.default_rng(0)) == values).all()


def test_bounds_are_point_cells_and_wide_amounts_are_log_spaced():
    bins = numeric_bins(Column("gain", "integer", lower=0, upper=99999), 64)
    cells = bins.assign(np.array([0, 99999, 1, 5000]))
    assert cells[0] == 0 and cells[1] == bins.size - 1
    assert 0 < cells[2] < cells[3] < bins.size - 1
    decoded = bins.decode(np.array([0, bins.size - 1]), np.random.default_rng(0))
    assert decoded.tolist() == [0, 99999]  # zero-inflation and the top code stay exact
    widths = np.diff(bins.edges)
    assert widths[-1] > 100 * widths[1]  # log-spaced: fine near 0, coarse near the top


@settings(max_examples=60, deadline=None)
@given(
    lower=st.integers(-1000, 1000),
    span=st.integers(130, 10**6),
    integer=st.booleans(),
    n_bins=st.integers(3, 80),
    seed=st.integers(0, 2**32 - 1),
)
def test_decoded_values_fall_in_the_cell_they_came_from(lower, span, integer, n_bins, seed):
    kind = "integer" if integer else "continuous"
    bins = numeric_bins(Column("x", kind, lower=lower, upper=lower + span), n_bins)
    rng = np.random.default_rng(seed)
    cells = rng.integers(0, bins.size, 500)
    values = bins.decode(cells, rng)
    assert ((values >= lower) & (values <= lower + span)).all()
    assert (bins.assign(values) == cells).all()


def test_bins_come_from_the_bounds_alone():
    column = Column("x", "continuous", lower=0.0, upper=1.0)
    assert np.array_equal(numeric_bins(column, 32).edges, numeric_bins(column, 32).edges)
    with pytest.raises(ValueError, match="no bounds"):
        numeric_bins(Column("x", "continuous"), 32)


def _projection_oracle(v: np.ndarray, total: float) -> np.ndarray:
    """max(v - t, 0) with sum = total, t found by bisection (slow and obvious)."""
    low, high = v.min() - total, v.max()
    for _ in range(200):
        mid = (low + high) / 2
        if np.maximum(v - mid, 0).sum() > total:
            low = mid
        else:
            high = mid
    return np.maximum(v - high, 0)


@settings(max_examples=80, deadline=None)
@given(
    values=st.lists(st.floats(-1e4, 1e4, allow_nan=False), min_size=1, max_size=40),
    total=st.floats(0.1, 1e5),
)
def test_projection_matches_the_bisection_oracle(values, total):
    v = np.asarray(values)
    projected = project_to_simplex(v, total)
    assert (projected >= 0).all()
    assert projected.sum() == pytest.approx(total, rel=1e-9)
    np.testing.assert_allclose(projected, _projection_oracle(v, total), atol=1e-6 * total + 1e-9)


def test_projection_removes_the_mass_that_clipping_negatives_would_add():
    noisy = np.array([1000.0, 3.0, -4.0, 2.0, 989.0])  # sums to the public total 1990
    projected = project_to_simplex(noisy, 1990.0)
    assert projected.tolist() == [999.0, 2.0, 0.0, 1.0, 988.0]  # clipping alone sums to 1994
