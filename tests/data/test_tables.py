"""Bad input gives one clear message naming column, row, value and what to do."""

import pandas as pd
import pytest

from dpforge.data.tables import draft_schema, read_csv, validate_table
from dpforge.errors import DataError, SchemaError
from dpforge.schema.table import Column, Schema, refuse_draft

SCHEMA = Schema(
    columns=(
        Column("age", "integer", lower=0, upper=120),
        Column("weight", "continuous", lower=0.0, upper=300.0),
        Column("smoker", "categorical", categories=("no", "yes")),
        Column("outcome", "categorical", categories=("0", "1")),
    ),
    label="outcome",
)


def _frame(**overrides) -> pd.DataFrame:
    data = {
        "age": ["30", "41", "57"],
        "weight": ["70.5", "80", "65.2"],
        "smoker": ["no", "yes", "no"],
        "outcome": ["0", "1", "1"],
    }
    data.update(overrides)
    return pd.DataFrame(data)


def test_valid_table_is_typed():
    table = validate_table(_frame(), SCHEMA)
    assert table["age"].tolist() == [30.0, 41.0, 57.0]
    assert table["outcome"].tolist() == ["0", "1", "1"]


@pytest.mark.parametrize(
    ("overrides", "pattern"),
    [
        ({"age": ["30", "", "57"]}, r"column 'age', row 2: missing value"),
        ({"smoker": ["no", "?", "no"]}, r"column 'smoker', row 2: missing value '\?'"),
        ({"weight": ["70", "nan", "1"]}, r"column 'weight', row 2: missing value 'nan'"),
        ({"weight": ["70", "inf", "1"]}, r"column 'weight', row 2: value 'inf' is not finite"),
        ({"age": ["30", "forty", "57"]}, r"column 'age', row 2: 'forty' is not a number"),
        ({"age": ["30", "41.5", "57"]}, r"column 'age', row 2: '41.5' is not a whole number"),
        ({"weight": ["70", "80", "301"]}, r"column 'weight', row 3: value 301 is outside"),
        ({"smoker": ["no", "maybe", "no"]}, r"column 'smoker', row 2: unknown category 'maybe'"),
        ({"outcome": ["1", "1", "1"]}, r"label column 'outcome' holds a single class"),
    ],
)
def test_bad_values_are_named(overrides, pattern):
    with pytest.raises(DataError, match=pattern):
        validate_table(_frame(**overrides), SCHEMA)


def test_out_of_bounds_can_be_clipped_instead():
    table = validate_table(_frame(weight=["70", "80", "301"]), SCHEMA, out_of_bounds="clip")
    assert table["weight"].max() == 301.0  # clipped later by the encoder, with a warning


def test_schema_mismatch_names_the_columns():
    frame = _frame().rename(columns={"smoker": "smokes"})
    with pytest.raises(
        DataError, match=r"not in the data: \['smoker'\].*not in the schema: \['smokes'\]"
    ):
        validate_table(frame, SCHEMA)


def test_empty_and_header_only_files(tmp_path):
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    with pytest.raises(DataError, match="is empty"):
        read_csv(empty)
    header = tmp_path / "header.csv"
    header.write_text("a,b\n")
    with pytest.raises(DataError, match="no rows"):
        read_csv(header)
    with pytest.raises(DataError, match="does not exist"):
        read_csv(tmp_path / "missing.csv")


def test_draft_schema_flags_private_values_and_fit_refuses_it():
    draft = draft_schema(_frame(), label="outcome")
    assert draft.column("age").type == "integer"
    assert draft.column("smoker").categories == ("no", "yes")
    assert draft.column("outcome").type == "categorical"
    assert draft.notes and "READ FROM THE PRIVATE FILE" in draft.notes[0]
    with pytest.raises(SchemaError, match="draft"):
        Schema.from_dict(draft.to_dict())
    blank = draft_schema(_frame(), label="outcome", with_values=False)
    assert blank.column("weight").lower is None
    assert Schema.from_dict(blank.to_dict(), allow_review=True) == blank


def test_a_draft_without_values_flags_its_inferred_types_and_fit_refuses_it():
    """Issue 20.5: one record flips a type (41.5 makes integer continuous), so the types of a
    --no-values draft are read from the data too: flagged, and refused until reviewed."""
    frame = _frame()
    blank = draft_schema(frame, label="outcome", with_values=False)
    assert blank.notes and "INFERRED FROM THE PRIVATE FILE" in blank.notes[0]
    with pytest.raises(SchemaError, match="type"):
        Schema.from_dict(blank.to_dict())
    with pytest.raises(SchemaError, match="type"):
        refuse_draft(blank)
    reviewed = blank.to_dict()
    del reviewed["review"]
    assert Schema.from_dict(reviewed).notes == ()


@pytest.mark.parametrize(
    ("columns", "label", "pattern"),
    [
        ((Column("a", "continuous", lower=2, upper=1),), None, "must be below"),
        ((Column("a", "text"),), None, "unknown type"),
        ((Column("a", "continuous", 0, 1), Column("a", "continuous", 0, 1)), None, "twice"),
        ((Column("y", "continuous", 0, 1),), "y", "must be categorical"),
        ((Column("y", "categorical", categories=("a",)),), "y", "at least 2"),
    ],
)
def test_bad_schemas(columns, label, pattern):
    with pytest.raises(SchemaError, match=pattern):
        Schema(columns=columns, label=label)
