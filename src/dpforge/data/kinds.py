"""One adapter per data type, so that the synthesizer runs the same pipeline on all of them.

Each adapter says, for its data type: how records are checked against the schema, how missing
metadata are estimated under DP, which encoder maps records to the generator's space, and what
the label is. The synthesizer calls these and nothing type-specific.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from dpforge.data.array_encoder import ArrayEncoder
from dpforge.data.arrays import ArrayData, keep_released_records, validate_arrays
from dpforge.data.encoder import TableEncoder
from dpforge.data.metadata import MetadataBudget, complete_array_schema, complete_schema
from dpforge.data.tables import keep_released_rows, validate_table
from dpforge.errors import DataError
from dpforge.privacy.ledger import PrivacyLedger
from dpforge.schema.array import ArraySchema
from dpforge.schema.table import Schema

CLIP_NOTE = (
    "values outside the bounds (declared, or estimated under DP) are clipped to them; how many "
    "values, and in which columns, is not reported: it depends on the private records"
)


class TableKind:
    """Tables: a pandas DataFrame checked against a column :class:`Schema`."""

    name = "table"

    @staticmethod
    def validate(data: Any, schema: Schema, out_of_bounds: str) -> pd.DataFrame:
        if not isinstance(data, pd.DataFrame):
            raise DataError(
                f"a table schema needs a pandas DataFrame, got {type(data).__name__}; for images "
                "or time series use an image/timeseries schema"
            )
        return validate_table(data, schema, out_of_bounds=out_of_bounds)

    @staticmethod
    def complete(data, schema, budget: MetadataBudget, ledger: PrivacyLedger, rng):
        return complete_schema(data, schema, budget, ledger, rng)

    @staticmethod
    def released(data: pd.DataFrame, schema: Schema) -> pd.DataFrame:
        """The rows whose categories were all released (see ``keep_released_rows``)."""
        return keep_released_rows(data, schema)

    @staticmethod
    def may_clip(schema: Schema, out_of_bounds: str) -> bool:
        """Whether the encoder may clip values, decided from public settings only: some numeric
        column has DP-estimated bounds, or values outside declared bounds are to be clipped."""
        numeric = [c for c in schema.feature_columns if c.is_numeric]
        return bool(numeric) and (
            out_of_bounds == "clip" or any(not c.is_complete for c in numeric)
        )

    @staticmethod
    def encoder(schema: Schema) -> TableEncoder:
        return TableEncoder(schema)

    @staticmethod
    def label(schema: Schema) -> tuple[str | None, tuple[str, ...]]:
        column = schema.label_column
        return (None, ()) if column is None else (column.name, tuple(column.categories or ()))


class ArrayKind:
    """Images and time series: :class:`ArrayData` checked against an :class:`ArraySchema`."""

    name = "array"

    @staticmethod
    def validate(data: Any, schema: ArraySchema, out_of_bounds: str) -> ArrayData:
        if isinstance(data, np.ndarray):
            data = ArrayData(data)
        if not isinstance(data, ArrayData):
            raise DataError(
                f"a {schema.kind} schema needs ArrayData (see dpforge.data.images / "
                f"dpforge.data.series), got {type(data).__name__}"
            )
        return validate_arrays(data, schema, out_of_bounds)

    @staticmethod
    def complete(data, schema, budget: MetadataBudget, ledger: PrivacyLedger, rng):
        return complete_array_schema(data, schema, budget, ledger, rng)

    @staticmethod
    def released(data: ArrayData, schema: ArraySchema) -> ArrayData:
        """The records whose class was released (see ``keep_released_records``)."""
        return keep_released_records(data, schema)

    @staticmethod
    def may_clip(schema: ArraySchema, out_of_bounds: str) -> bool:
        """Whether the encoder may clip values, decided from public settings only."""
        return out_of_bounds == "clip" or any(not c.is_complete for c in schema.channels)

    @staticmethod
    def encoder(schema: ArraySchema) -> ArrayEncoder:
        return ArrayEncoder(schema)

    @staticmethod
    def label(schema: ArraySchema) -> tuple[str | None, tuple[str, ...]]:
        return schema.label, tuple(schema.classes or ())


def kind_of(schema: Schema | ArraySchema) -> type[TableKind] | type[ArrayKind]:
    """The adapter for ``schema``'s data type."""
    return ArrayKind if isinstance(schema, ArraySchema) else TableKind
