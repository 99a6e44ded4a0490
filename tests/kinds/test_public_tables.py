"""The public tables of bench/lib/public_tables.py: schemas that fit the shipped data and the
documented ranges, and the clipping to the declared bounds every tool sees."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from dpforge.schema.table import Column, Schema  # noqa: E402
from lib.public_tables import (  # noqa: E402
    HOLDOUT_TABLES,
    PUBLIC_TABLES,
    clip_to_bounds,
    load_public_table,
)

# The documented ranges of the holdout tables (AER's help pages; faraway's dvisits for the
# codings of DoctorVisits; Stock and Watson's codebook for HMDA's credit histories): the
# declared bounds must hold them.
DOCUMENTED = {
    "hmda": {"chist": (1, 6), "mhist": (1, 4)},
    "doctorvisits": {
        "age": (0.17, 0.72),  # mid-points of 15-19 .. 65-69 over 100, 70+ coded 0.72
        "income": (0.0, 1.5),  # AUD 10,000, the top range coded 15,000
        "illness": (0, 5),  # 5 or more coded 5
        "reduced": (0, 14),  # days of the past two weeks
        "health": (0, 12),  # Goldberg's score
    },
    "creditcard": {"age": (0.0, 1.0)},  # "suspiciously low values (below one year)"
}


@pytest.fixture(scope="module", params=sorted(PUBLIC_TABLES))
def table(request):
    return request.param, *load_public_table(request.param)


def test_every_schema_column_is_loaded_and_nothing_else(table):
    name, train, test, schema = table
    assert list(train.columns) == list(schema.names) == list(test.columns), name
    assert schema.label in schema.names
    assert len(train) == pytest.approx(2 * len(test), abs=2)  # two thirds train


def test_values_lie_in_the_declared_domain(table):
    name, train, test, schema = table
    both = pd.concat([train, test])
    for column in schema.columns:
        values = both[column.name]
        if column.is_numeric:
            assert values.between(column.lower, column.upper).all(), (name, column.name)
        else:
            assert set(values) <= set(column.categories), (name, column.name)
    assert set(both[schema.label]) == {"no", "yes"}  # binary, "yes" the reported class


@pytest.mark.parametrize("name", sorted(HOLDOUT_TABLES))
def test_holdout_sizes_and_documented_ranges(name):
    train, test, schema = load_public_table(name)
    assert 800 <= len(train) + len(test) <= 6000
    assert 8 <= len(schema.names) <= 15
    kinds = {c.is_numeric for c in schema.columns}
    assert kinds == {True, False}  # mixed numeric and categorical
    columns = {c.name: c for c in schema.columns}
    for col, (low, high) in DOCUMENTED[name].items():
        assert columns[col].lower <= low and columns[col].upper >= high, (name, col)


def test_clip_to_bounds_clips_numbers_keeps_dtypes_and_categories():
    schema = Schema(
        (
            Column("ratio", "continuous", 0.0, 1.5),
            Column("count", "integer", 1, 6),
            Column("label", "categorical", categories=("no", "yes")),
        ),
        label="label",
    )
    data = pd.DataFrame(
        {"ratio": [-0.5, 0.3, 3.0], "count": np.array([0, 3, 9]), "label": ["no", "yes", "no"]}
    )
    out = clip_to_bounds(data, schema)
    assert out["ratio"].tolist() == [0.0, 0.3, 1.5]
    assert out["count"].tolist() == [1, 3, 6]
    assert out["count"].dtype == data["count"].dtype
    assert out["label"].tolist() == ["no", "yes", "no"]
    assert data["ratio"].tolist() == [-0.5, 0.3, 3.0]  # the input is left alone
