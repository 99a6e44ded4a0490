"""Related tables in: the schema's checks, the tables' checks (one-line errors naming table,
row, value and fix), bounding to k rows per parent, the join, and reading CSVs by file stem."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dpforge.data.relational import (
    bound_children,
    check_tables,
    child_counts,
    joined_child,
    read_tables,
)
from dpforge.errors import DataError, SchemaError, redacted_errors
from dpforge.schema.relational import RelationalSchema
from tests.relational.support import K_DRUGS, K_VISITS, hospital, hospital_schema


def test_schema_round_trips_through_json():
    _, schema = hospital()
    again = RelationalSchema.from_dict(schema.to_dict())
    assert again == schema
    assert schema.parent.name == "patients"
    assert [c.name for c in schema.children] == ["visits", "drugs"]
    assert schema.table("visits").max_rows == K_VISITS


@pytest.mark.parametrize("k", [0, -2, 2.5, "3", True])
def test_k_must_be_a_positive_whole_number(k):
    with pytest.raises(SchemaError, match=r"table 'visits': max_rows_per_parent must be a whole"):
        RelationalSchema.from_dict(hospital_schema(k_visits=k))


def test_an_unknown_version_or_key_is_refused():
    document = hospital_schema()
    with pytest.raises(SchemaError, match=r"\$\.version is 7; .* version 1"):
        RelationalSchema.from_dict({**document, "version": 7})
    with pytest.raises(SchemaError, match=r"\$\.tabels is not a key of a relational schema"):
        RelationalSchema.from_dict({**document, "tabels": {}})


def test_k_null_is_refused_outside_a_draft():
    with pytest.raises(SchemaError, match=r"'visits' is null: set it to a PUBLIC bound"):
        RelationalSchema.from_dict(hospital_schema(k_visits=None))


@pytest.mark.parametrize(
    ("table", "key", "value", "message"),
    [
        ("visits", "parent", "patient", r"table 'visits': its parent 'patient' is not a table"),
        ("drugs", "parent", "visits", r"'visits' is itself a child table; only one level"),
        ("patients", "key", "sex", r"table 'patients': its key 'sex' is declared categ"),
        ("visits", "foreign_key", "pid", r"table 'visits': its foreign_key 'pid' is not a col"),
    ],
)
def test_a_bad_link_is_refused_naming_the_table_and_the_fix(table, key, value, message):
    """A foreign key to an unknown table, a grandchild, a modelled key, an unknown column."""
    document = hospital_schema()
    document["tables"][table][key] = value
    with pytest.raises(SchemaError, match=message):
        RelationalSchema.from_dict(document)


def test_missing_table():
    tables, schema = hospital()
    del tables["drugs"]
    with pytest.raises(DataError, match=r"table 'drugs' of the schema is not given .*drugs\.csv"):
        check_tables(tables, schema)


BAD_KEYS = [
    (
        "patients", 5, "p002",
        "table 'patients', row 6: key 'patient_id' value 'p002' appears twice",
        "merge or renumber the duplicate rows",
    ),
    (
        "visits", 3, "p999",
        "table 'visits', row 4: foreign key 'patient_id' value 'p999' names no row of 'patients'",
        "add that parent, or remove the row",
    ),
]  # fmt: skip


@pytest.mark.parametrize(("table", "row", "value", "what", "fix"), BAD_KEYS)
def test_a_bad_key_names_table_row_value_and_fix(table, row, value, what, fix):
    """A duplicate parent key, a child row whose parent is missing: one line each, and the
    redacted mode hides the row and the value."""
    tables, schema = hospital()
    tables[table].loc[row, "patient_id"] = value
    with pytest.raises(DataError) as caught:
        check_tables(tables, schema)
    message = str(caught.value)
    assert what in message and fix in message and "\n" not in message
    with redacted_errors(), pytest.raises(DataError) as hidden:
        check_tables(tables, schema)
    assert value not in str(hidden.value) and f"row {row + 1}" not in str(hidden.value)


def test_bounding_keeps_at_most_k_per_parent_at_random_and_reproducibly():
    tables, schema = hospital(n=60)
    first = bound_children(tables, schema, np.random.default_rng(1))
    again = bound_children(tables, schema, np.random.default_rng(1))
    other = bound_children(tables, schema, np.random.default_rng(2))
    for name, k in (("visits", K_VISITS), ("drugs", K_DRUGS)):
        counts = first[name]["patient_id"].value_counts()
        assert counts.max() == k
        raw = tables[name]["patient_id"].value_counts()
        assert (counts.reindex(raw.index, fill_value=0) == raw.clip(upper=k)).all()
        pd.testing.assert_frame_equal(first[name], again[name])
    assert not first["visits"].equals(other["visits"])  # which rows are kept is random


def test_child_counts_and_join_follow_the_parent():
    tables, schema = hospital(n=30)
    bounded = bound_children(tables, schema, np.random.default_rng(0))
    visits = schema.table("visits")
    counts = child_counts(bounded["patients"], bounded["visits"], visits.link, "patient_id")
    assert counts.sum() == len(bounded["visits"]) and counts.max() <= K_VISITS
    joined = joined_child(bounded, schema, visits)
    assert list(joined.columns) == ["patient_id", "ward", "cost", "sex", "age"]
    ages = bounded["patients"].set_index("patient_id")["age"]
    assert (joined["age"].to_numpy() == ages.loc[joined["patient_id"]].to_numpy()).all()


def test_csv_files_are_tables_by_file_stem(tmp_path):
    tables, schema = hospital(n=10)
    paths = []
    for name, frame in tables.items():
        frame.to_csv(tmp_path / f"{name}.csv", index=False)
        paths.append(tmp_path / f"{name}.csv")
    read = read_tables(paths)
    assert sorted(read) == sorted(tables)
    check_tables(read, schema)


def test_a_bad_value_names_its_table_and_its_own_row():
    tables, schema = hospital()
    tables["visits"].loc[6, "ward"] = "z"
    with pytest.raises(DataError, match=r"^table 'visits': .*'ward'.*row 7"):
        check_tables(tables, schema)


def test_keys_read_as_numbers_match_across_tables():
    """A DataFrame's foreign key of floats (1.0, as pandas reads a column with gaps) names
    the parent whose key is the whole number 1."""
    tables, schema = hospital(n=12)
    codes = {key: i for i, key in enumerate(tables["patients"]["patient_id"])}
    tables["patients"]["patient_id"] = list(codes.values())
    for name in ("visits", "drugs"):
        tables[name]["patient_id"] = tables[name]["patient_id"].map(codes).astype(float)
    bounded = bound_children(tables, schema, np.random.default_rng(0))
    visits = schema.table("visits")
    counts = child_counts(bounded["patients"], bounded["visits"], visits.link, "patient_id")
    assert counts.sum() == len(bounded["visits"]) > 0
