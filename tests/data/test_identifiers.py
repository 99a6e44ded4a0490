"""Identifiers and free text (issue 21.4): the draft recognises them, the schema types "drop"
and "surrogate" keep their values out of every model, and samples get fresh keys."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dpforge.data.encoder import TableEncoder
from dpforge.data.tables import draft_schema, validate_table
from dpforge.errors import SchemaError
from dpforge.schema.table import Column, Schema


class Unreadable:
    """A cell value that fails the test if anything turns it into text or a number."""

    def __str__(self) -> str:
        raise AssertionError("an identifier's value was read")

    __float__ = __repr__ = __str__


def steward_export(n: int = 40) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    return pd.DataFrame(
        {
            "record": [f"R{100_000 + i}" for i in range(n)],
            "name": [f"Ada Lovelace{i}" for i in range(n)],
            "visits": [str(v) for v in rng.integers(0, 4, n)],
            "ward": rng.choice(["north", "south"], n),
        }
    )


def test_the_draft_marks_keys_surrogate_and_names_drop():
    draft = draft_schema(steward_export(), with_values=True)
    types = {c.name: c.type for c in draft.columns}
    assert types == {
        "record": "surrogate",
        "name": "drop",
        "visits": "categorical",
        "ward": "categorical",
    }
    assert "R100000" not in draft.to_json() and "Lovelace" not in draft.to_json()


def test_a_record_number_is_a_surrogate_and_a_short_table_keeps_its_types():
    numbers = pd.DataFrame({"id": [str(i) for i in range(30)], "x": ["1.5"] * 30})
    assert draft_schema(numbers).column("id").type == "surrogate"
    assert draft_schema(numbers.head(10)).column("id").type != "surrogate"


def test_identifier_values_are_never_read():
    frame = steward_export()
    frame["record"] = [Unreadable() for _ in range(len(frame))]
    frame["name"] = [Unreadable() for _ in range(len(frame))]
    schema = Schema(
        (
            Column("record", "surrogate"),
            Column("name", "drop"),
            Column("visits", "integer", 0.0, 3.0),
            Column("ward", "categorical", categories=("north", "south")),
        )
    )
    table = validate_table(frame, schema)
    assert list(table.columns) == ["visits", "ward"]
    encoder = TableEncoder(schema, n_bins=8)
    assert [s.column for s in encoder.spans] == ["visits", "ward"]
    features, _ = encoder.transform(table)
    rows = encoder.inverse_transform(features, None, np.random.default_rng(0))
    assert list(rows.columns) == ["record", "visits", "ward"]  # "drop" is left out
    assert rows["record"].is_unique and rows["record"].str.fullmatch("[0-9a-f]{16}").all()


def test_an_identifier_takes_nothing_but_a_name_and_a_type():
    with pytest.raises(SchemaError, match="give it only a name and a type"):
        Column("record", "surrogate", nullable=True).validate()
    with pytest.raises(SchemaError, match="unexpected|not allowed|categories"):
        Schema.from_dict({"columns": [{"name": "r", "type": "drop", "categories": ["a"]}]})
