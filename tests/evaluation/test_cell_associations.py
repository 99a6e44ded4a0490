"""Cramér's V on the evaluation's cells (issue 44): the mean |ΔV|, the pair of the largest
excess and the rule for an invented dependence."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dpforge.evaluation.association import cell_associations, cramers_v
from dpforge.schema.table import Column, Schema

SCHEMA = Schema(
    (
        Column("a", "categorical", categories=("x", "y")),
        Column("b", "categorical", categories=("u", "v")),
        Column("c", "continuous", 0.0, 10.0),
    )
)


@pytest.fixture
def real():
    rng = np.random.default_rng(0)
    n = 4000
    return pd.DataFrame(
        {"a": rng.choice(["x", "y"], n), "b": rng.choice(["u", "v"], n), "c": rng.uniform(0, 10, n)}
    )


def test_identical_tables_differ_by_nothing_and_invent_nothing(real):
    result = cell_associations(real, real.copy(), SCHEMA)
    assert result.value == 0.0
    assert result.details["invented"] == []
    assert result.details["largest_excess"]["excess"] == 0.0


def test_a_dependence_the_real_rows_lack_is_found_and_named(real):
    synthetic = real.assign(b=np.where(real["a"] == "x", "u", "v"))  # b copies a
    result = cell_associations(real, synthetic, SCHEMA)
    largest = result.details["largest_excess"]
    assert largest["pair"] == "a x b"
    assert largest["real_v"] < 0.05 and largest["synthetic_v"] == pytest.approx(1.0)
    assert [p["pair"] for p in result.details["invented"]] == ["a x b"]
    # one pair of three moved by about 1; a x c and b x c only by noise
    assert result.value == pytest.approx(largest["excess"] / 3, abs=0.02)


def test_a_sparse_pair_is_not_called_invented(real):
    small = real.iloc[:300]  # cells of about 75 rows: below 100, V is not trusted
    synthetic = small.assign(b=np.where(small["a"] == "x", "u", "v"))
    result = cell_associations(small, synthetic, SCHEMA)
    assert result.details["largest_excess"]["pair"] == "a x b"
    assert result.details["invented"] == []


def test_cramers_v_of_a_table_agrees_with_the_text_rule():
    a = np.array(["x", "x", "y", "y", "y"])
    b = np.array(["u", "v", "v", "v", "u"])
    # chi2 = 5/36 on n = 5 and a 2 x 2 table: V = sqrt(chi2 / n) = 1/6
    assert cramers_v(a, b) == pytest.approx(1 / 6)
