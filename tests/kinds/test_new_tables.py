"""Issue 44's new benchmark tables (bench/lib/new_tables.py): each loads offline with its
declared schema, values inside the declared domain, and the shape it was chosen for (several
rows per person split by person, a datetime column, more than 100,000 rows)."""

from __future__ import annotations

import sys
from functools import cache
from pathlib import Path

import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from dpforge.schema.dates import to_axis  # noqa: E402
from lib.new_tables import NEW_TABLES, PRIVACY_UNITS, load_new_table  # noqa: E402

load = cache(load_new_table)  # each table read once for the module


@pytest.fixture(params=sorted(NEW_TABLES))
def table(request):
    return request.param, *load(request.param)


def test_schema_columns_are_loaded_with_the_unit_only_where_declared(table):
    name, train, test, schema = table
    unit = [PRIVACY_UNITS[name][0]] if name in PRIVACY_UNITS else []
    assert list(train.columns) == [*schema.names, *unit] == list(test.columns)
    assert set(pd.concat([train, test])[schema.label]) == {"no", "yes"}
    assert len(train) == pytest.approx(2 * len(test), rel=0.02)  # two thirds train


def test_values_lie_in_the_declared_domain(table):
    name, train, test, schema = table
    both = pd.concat([train, test], ignore_index=True)
    for column in schema.columns:
        values = both[column.name]
        if column.nullable:
            values = values.dropna()
        if column.is_time:  # text in the column's format: its first and last stamps
            values = pd.Series([to_axis(values.min(), column), to_axis(values.max(), column)])
        if column.is_numeric:
            assert values.between(column.lower, column.upper).all(), (name, column.name)
        else:
            assert set(values) <= set(column.categories), (name, column.name)


def test_each_table_has_the_shape_it_stands_for():
    train, test, _ = load("males")
    column, k = PRIVACY_UNITS["males"]
    assert not set(train[column]) & set(test[column])  # a man's rows stay on one side
    rows = pd.concat([train, test]).groupby(column).size()
    assert rows.min() > 1 and rows.max() <= k  # several rows per man, none dropped by k
    _, _, schema = load("mplsstops")
    assert [c.type for c in schema.columns if c.is_time] == ["datetime"]
    train, test, _ = load("fertility")
    assert len(train) + len(test) > 100_000
