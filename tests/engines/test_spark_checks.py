"""The record checks on Spark refuse what the in-process checks refuse, with the same error
(issue 23.1): Spark SQL expressions flag the values, and the first offending row (in the
table's order, across partitions) is named with its column, row and value as in memory.
"""

from __future__ import annotations

import sys

import numpy as np
import pandas as pd
import pytest

from dpforge.data.tables import validate_table
from dpforge.engines import spark_checks
from dpforge.engines.spark_table import SparkTable
from dpforge.errors import DataError, redacted_errors
from dpforge.privacy.person import frame_keys
from dpforge.schema.table import Column, Schema

pytestmark = pytest.mark.slow
SCHEMA = Schema(
    (
        Column("age", "integer", lower=0, upper=100),
        Column("income", "continuous"),
        Column("city", "categorical", categories=("a", "b")),
        Column("y", "categorical"),
    ),
    label="y",
)


def _table(n: int = 30) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "age": np.arange(n) % 90,
            "income": np.linspace(1.0, 5.0, n),
            "city": np.where(np.arange(n) % 3 == 0, "a", "b"),
            "y": np.where(np.arange(n) % 2 == 0, "no", "yes"),
        }
    )


def _in_memory(frame: pd.DataFrame, schema: Schema = SCHEMA) -> str:
    with pytest.raises(DataError) as refused:
        validate_table(frame, schema)
    return str(refused.value)


def _on_spark(data, schema: Schema = SCHEMA, unit: str | None = None) -> str:
    with pytest.raises(DataError) as refused:
        SparkTable(data).validated(schema, "error", unit)
    return str(refused.value)


def _partitioned(spark, frame: pd.DataFrame, parts: int = 3):
    """``frame`` on Spark in ``parts`` partitions, in its row order."""
    numbers = {c: frame[c].dtype.kind in "iuf" for c in frame.columns}
    typed = frame.astype({c: float for c, n in numbers.items() if n}).astype(object)
    rows = [tuple(r) for r in typed.itertuples(index=False)]
    types = ", ".join(f"`{c}` {'double' if n else 'string'}" for c, n in numbers.items())
    return spark.createDataFrame(spark.sparkContext.parallelize(rows, parts), types)


def _cases() -> list[pd.DataFrame]:
    bad = []
    frame = _table()
    frame.loc[25, "age"], frame.loc[27, "age"] = 200, -1  # out of bounds, counted
    bad.append(frame)
    frame = _table().astype({"age": float})
    frame.loc[24, "age"] = 2.5  # not whole
    bad.append(frame)
    frame = _table().astype({"age": float})
    frame.loc[22, "age"] = np.nan  # missing number
    bad.append(frame)
    frame = _table()
    frame.loc[26, "city"] = "c"  # unknown category
    bad.append(frame)
    frame = _table()
    frame.loc[21, "city"] = "\u3000N/A "  # a missing marker, Python's strip
    bad.append(frame)
    frame = _table()
    frame["y"] = "no"  # one class
    bad.append(frame)
    return bad


def _text_cases() -> list[pd.DataFrame]:
    bad = []
    for value in ("inf", "12x", " 1e400", "nan", "4.5"):
        frame = _table().astype(str)
        frame.loc[23, "age"] = value
        bad.append(frame)
    return bad


def test_spark_refuses_each_bad_record_as_in_memory_across_partitions(spark):
    for frame in _cases() + _text_cases():
        assert _on_spark(_partitioned(spark, frame)) == _in_memory(frame)
    frame = _cases()[0]
    with redacted_errors():
        assert _on_spark(_partitioned(spark, frame)) == _in_memory(frame)
        assert "200" not in _in_memory(frame)


def test_spark_reads_numbers_as_python_does(spark):
    """Spaces Python strips, plain decimals typed natively, and a number only Python reads
    (``1_000``: the Python path) give the in-memory values."""
    frame = _table(12).astype(str)
    frame.loc[1, "income"], frame.loc[2, "income"] = "\xa0+.5e1 ", "1_000"
    frame.loc[3, "age"], frame.loc[4, "city"] = " 7.0\t", "b\u2003"
    for data in (frame, frame.drop(index=2)):
        table = SparkTable(_partitioned(spark, data)).validated(SCHEMA, "error")
        got = table.frame.toPandas()
        pd.testing.assert_frame_equal(got, validate_table(data, SCHEMA), check_dtype=False)
        assert table.size() == len(data)
        table.unpersist()


def test_spark_refuses_a_missing_person_key_at_its_row(spark):
    schema = Schema((Column("person", "drop"), *SCHEMA.columns), label="y")
    frame = _table().assign(person=[f"p{i}" for i in range(30)])
    frame.loc[28, "person"] = " none"
    with pytest.raises(DataError) as refused:
        frame_keys(frame, "person")
    assert _on_spark(_partitioned(spark, frame), schema, "person") == str(refused.value)


def test_spaces_are_those_python_strips():
    spaces = {chr(i) for i in range(sys.maxunicode + 1) if chr(i).isspace()}
    assert set(spark_checks.SPACES) == spaces and len(spark_checks.SPACES) == len(spaces)
