"""Missing values (issue 21.1): nullable columns in the schema, the draft, validation, the
encoder's "missing" cell, its sensitivity, and evaluation with empty cells."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from dpforge.data.encoder import TableEncoder
from dpforge.data.tables import draft_schema, validate_table
from dpforge.errors import DataError, SchemaError
from dpforge.evaluation.fidelity import marginal_fidelity
from dpforge.evaluation.utility import tstr_auroc
from dpforge.schema.table import Column, Schema
from dpforge.statistics.cells import measure_fine_histograms
from dpforge.statistics.marginals import default_marginals, encoded_cells, true_counts

palmerpenguins = pytest.importorskip("palmerpenguins")


def penguins_text() -> pd.DataFrame:
    """The penguins as a CSV file holds them: text, empty cells ''."""
    frame = palmerpenguins.load_penguins()
    return frame.astype(object).where(frame.notna(), "").astype(str)


def penguin_schema(**numeric: object) -> Schema:
    """A public schema of the penguins (bounds from field guides, not from the data)."""
    grams = {"lower": 2500.0, "upper": 6500.0, **numeric}
    return Schema(
        columns=(
            Column("species", "categorical", categories=("Adelie", "Chinstrap", "Gentoo")),
            Column("island", "categorical", categories=("Biscoe", "Dream", "Torgersen")),
            Column("bill_length_mm", "continuous", 30.0, 60.0, nullable=True, resolution=0.1),
            Column("bill_depth_mm", "continuous", 13.0, 22.0, nullable=True, resolution=0.1),
            Column("flipper_length_mm", "integer", 170.0, 235.0, nullable=True),
            Column("body_mass_g", "integer", nullable=True, **grams),
            Column("sex", "categorical", categories=("female", "male"), nullable=True),
            Column("year", "integer", 2007.0, 2009.0),
        ),
        label="species",
    )


def test_nullable_round_trips_through_json_and_is_written_only_when_set():
    schema = penguin_schema()
    again = Schema.from_dict(json.loads(schema.to_json()))
    assert again == schema
    assert "nullable" not in again.column("year").to_dict()
    assert again.column("sex").to_dict()["nullable"] is True


def test_a_label_cannot_be_nullable():
    columns = (Column("y", "categorical", categories=("a", "b"), nullable=True),)
    with pytest.raises(SchemaError, match="cannot be nullable"):
        Schema(columns=columns, label="y")


def test_the_draft_proposes_nullable_where_cells_are_empty_without_a_count():
    draft = draft_schema(penguins_text(), label="species")
    nullable = {c.name for c in draft.columns if c.nullable}
    assert nullable == {
        "bill_length_mm",
        "bill_depth_mm",
        "flipper_length_mm",
        "body_mass_g",
        "sex",
    }
    text = draft.to_json()
    assert "missing" not in text.lower() and "empty" not in text.lower()


def test_a_column_that_is_not_nullable_keeps_the_clear_error():
    schema = penguin_schema()
    strict = schema.with_columns(
        tuple(Column(c.name, c.type, c.lower, c.upper, c.categories) for c in schema.columns)
    )
    with pytest.raises(DataError, match='not declare this column nullable.*"nullable": true'):
        validate_table(penguins_text(), strict)


def test_empty_cells_are_read_as_missing_and_encoded_in_their_own_cell():
    raw = penguins_text()
    table = validate_table(raw, penguin_schema())
    assert table["sex"].isna().sum() == (raw["sex"] == "").sum()
    assert table["body_mass_g"].isna().sum() == (raw["body_mass_g"] == "").sum()
    encoder = TableEncoder(penguin_schema(), n_bins=16)
    features, _ = encoder.transform(table)
    for span in encoder.spans:
        block = features[:, span.start : span.stop]
        assert np.allclose(block.sum(axis=1), 1.0)  # one cell per record, missing included
        if penguin_schema().column(span.column).nullable:
            assert np.array_equal(block[:, -1] == 1.0, table[span.column].isna().to_numpy())


def test_decoding_leaves_empty_cells_and_integers_stay_whole():
    schema = penguin_schema()
    encoder = TableEncoder(schema, n_bins=16)
    features, labels = encoder.transform(validate_table(penguins_text(), schema))
    decoded = encoder.inverse_transform(features, labels, np.random.default_rng(0))
    mass = decoded["body_mass_g"]
    assert str(mass.dtype) == "Int64" and mass.isna().sum() == 2
    assert decoded["sex"].isna().sum() == 11
    present = decoded["bill_length_mm"].dropna().to_numpy()
    assert np.allclose(present * 10, np.rint(present * 10))  # resolution 0.1


def _counts(encoder, table) -> list[np.ndarray]:
    cells = encoded_cells(encoder, table, "species")
    return [true_counts(cells, m) for m in default_marginals(encoder.spans, "species")]


@pytest.mark.parametrize("row", [3, 0])  # a record with empty cells, and a complete one
def test_one_record_moves_every_marginal_by_exactly_one(row):
    """Add/remove one record: one cell of each marginal changes by 1, so the L2 sensitivity of
    k marginals stays sqrt(k) with the missing cell."""
    schema = penguin_schema()
    table = validate_table(penguins_text(), schema)
    encoder = TableEncoder(schema, n_bins=16)
    full, less = _counts(encoder, table), _counts(encoder, table.drop(index=row))
    for a, b in zip(full, less, strict=True):
        assert np.abs(a - b).sum() == 1.0
    assert np.sqrt(sum(np.square(a - b).sum() for a, b in zip(full, less, strict=True))) == (
        pytest.approx(np.sqrt(len(full)))
    )


def test_an_empty_cell_adds_nothing_to_the_fine_histograms():
    schema = penguin_schema()
    table = validate_table(penguins_text(), schema)
    columns = [schema.column("bill_length_mm"), schema.column("body_mass_g")]
    rng = np.random.default_rng(0)
    full = measure_fine_histograms(table, columns, 0.0, rng)
    assert all(full[c.name].sum() == table[c.name].notna().sum() for c in columns)
    less = measure_fine_histograms(table.drop(index=3), columns, 0.0, rng)  # row 3: empty
    assert all(np.array_equal(full[c.name], less[c.name]) for c in columns)


def test_tvd_counts_the_missing_cell_and_tstr_imputes():
    schema = penguin_schema()
    real = validate_table(penguins_text(), schema)
    filled = real.copy()
    filled["sex"] = filled["sex"].fillna("male")
    fidelity = marginal_fidelity(real, filled, schema, 10)
    assert fidelity.one_way["sex"] == pytest.approx(real["sex"].isna().mean())
    assert fidelity.one_way["island"] == 0.0
    score = tstr_auroc(real, real, schema=schema, classifier="lr")
    assert score.value > 0.9
