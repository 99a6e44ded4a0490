"""Tables to evaluate, checked against the schema: numbers as floats, categories as text."""

from __future__ import annotations

import pandas as pd

from dpforge.data.tables import MISSING_TOKENS, canonical_text
from dpforge.errors import DataError
from dpforge.evaluation.distances import numeric_values
from dpforge.schema.table import Column, Schema

__all__ = ["typed_table"]


def _category(value: object, column: Column) -> str | None:
    """A category as canonical text; None for an empty cell of a nullable column (a missing
    marker that the schema declares as a category stays that category)."""
    if value is None or (isinstance(value, float) and pd.isna(value)):
        return None if column.nullable else canonical_text(value)
    text = canonical_text(value)
    marker = text.lower() in MISSING_TOKENS and text not in (column.categories or ())
    return None if column.nullable and marker else text


def typed_table(frame: pd.DataFrame, schema: Schema, role: str) -> pd.DataFrame:
    """The schema's columns of ``frame``: numbers as floats, categories as canonical text; the
    empty cells of a nullable column as NaN (numbers) or None (categories)."""
    if not isinstance(frame, pd.DataFrame):
        raise DataError(f"the {role} rows must be a table (DataFrame), got {type(frame).__name__}")
    if len(frame) == 0:
        raise DataError(f"the {role} table has no rows")
    out = {}
    for column in schema.columns:
        if column.is_numeric:
            out[column.name] = numeric_values(frame, column.name, role, column.nullable)
        elif column.name not in frame.columns:
            raise DataError(f"the {role} table lacks the column '{column.name}'")
        else:
            out[column.name] = [_category(v, column) for v in frame[column.name].tolist()]
    return pd.DataFrame(out, columns=schema.names)
