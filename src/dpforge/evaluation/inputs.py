"""Tables to evaluate, checked against the schema: numbers as floats, categories as text."""

from __future__ import annotations

import numpy as np
import pandas as pd

from dpforge.data.tables import MISSING_TOKENS, canonical_text, read_time_column
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


def time_column(series: pd.Series, column: Column, role: str) -> np.ndarray:
    """A date column on its time axis: numbers as they are (a table already checked), text
    read in the column's format (``validate_table``'s rules); empty cells as NaN."""
    if not pd.api.types.is_numeric_dtype(series):
        return read_time_column(series, column, "clip")
    values = series.to_numpy(np.float64)
    if np.isnan(values).any() and not column.nullable:
        raise DataError(f"column '{column.name}' of the {role} table holds empty cells")
    return values


def typed_table(frame: pd.DataFrame, schema: Schema, role: str) -> pd.DataFrame:
    """The schema's columns of ``frame``: numbers as floats, categories as canonical text; the
    empty cells of a nullable column as NaN (numbers) or None (categories)."""
    if not isinstance(frame, pd.DataFrame):
        raise DataError(f"the {role} rows must be a table (DataFrame), got {type(frame).__name__}")
    if len(frame) == 0:
        raise DataError(f"the {role} table has no rows")
    out = {}
    for column in schema.columns:
        if column.is_time and column.name in frame.columns:
            out[column.name] = time_column(frame[column.name], column, role)
        elif column.is_numeric:
            out[column.name] = numeric_values(frame, column.name, role, column.nullable)
        elif column.name not in frame.columns:
            raise DataError(f"the {role} table lacks the column '{column.name}'")
        else:
            out[column.name] = [_category(v, column) for v in frame[column.name].tolist()]
    return pd.DataFrame(out, columns=schema.names)
