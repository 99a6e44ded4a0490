"""Encoder round trips and spans, on real records (Thyroid-like and Adult-like columns)."""

import warnings

import numpy as np
import pandas as pd
import pytest

from dpforge.data.encoder import SOFTMAX, TANH, TableEncoder
from dpforge.data.tables import validate_table
from dpforge.errors import SchemaError
from dpforge.schema.table import Column, Schema


def _schema() -> Schema:
    return Schema(
        columns=(
            Column("age", "integer", lower=17, upper=90),
            Column("fnlwgt", "continuous", lower=0.0, upper=1.5e6),
            Column("sex", "categorical", categories=("Female", "Male")),
            Column("race", "categorical", categories=("A", "B", "C")),
            Column("income", "categorical", categories=("<=50K", ">50K")),
        ),
        label="income",
    )


def _table(n: int = 200, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "age": rng.integers(17, 91, n).astype(float),
            "fnlwgt": rng.uniform(0, 1.5e6, n),
            "sex": rng.choice(["Female", "Male"], n),
            "race": rng.choice(["A", "B", "C"], n),
            "income": rng.choice(["<=50K", ">50K"], n),
        }
    )


def test_spans_describe_heads_in_order():
    encoder = TableEncoder(_schema())
    assert [(s.column, s.start, s.dim, s.activation) for s in encoder.spans] == [
        ("age", 0, 1, TANH),
        ("fnlwgt", 1, 1, TANH),
        ("sex", 2, 2, SOFTMAX),
        ("race", 4, 3, SOFTMAX),
    ]
    assert encoder.output_dim == 7
    assert encoder.label_classes == ("<=50K", ">50K")


def test_round_trip_is_exact():
    schema = _schema()
    table = validate_table(_table(), schema)
    encoder = TableEncoder(schema)
    features, labels = encoder.transform(table)
    assert features.min() >= -1.0 and features.max() <= 1.0
    back = encoder.inverse_transform(features, labels)
    assert list(back.columns) == schema.names
    np.testing.assert_array_equal(back["age"].to_numpy(), table["age"].to_numpy().astype(int))
    np.testing.assert_allclose(back["fnlwgt"], table["fnlwgt"], rtol=1e-12, atol=1e-6)
    for name in ("sex", "race", "income"):
        assert back[name].tolist() == table[name].tolist()


def test_out_of_bounds_values_are_clipped_without_a_count_or_a_column():
    """Issue 13.4: the count of clipped values (and which column had them) is private."""
    schema = _schema()
    table = validate_table(_table(20), schema)
    table.loc[0, "age"] = 120.0
    table.loc[1, "age"] = 3.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing at all is said about this table's values
        features, _ = TableEncoder(schema).transform(table)
    assert features[0, 0] == 1.0 and features[1, 0] == -1.0


def test_generator_outputs_decode_to_valid_values():
    encoder = TableEncoder(_schema())
    raw = np.random.default_rng(1).normal(0, 3, size=(50, encoder.output_dim))
    back = encoder.inverse_transform(raw, np.zeros(50, dtype=int))
    assert back["age"].between(17, 90).all()
    assert set(back["race"]) <= {"A", "B", "C"}
    assert back["age"].dtype.kind == "i"


def test_incomplete_schema_is_refused():
    schema = Schema(columns=(Column("x", "continuous"),))
    with pytest.raises(SchemaError, match="estimate them"):
        TableEncoder(schema)
