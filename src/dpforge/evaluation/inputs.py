"""Tables to evaluate, checked against the schema: numbers as floats, categories as text."""

from __future__ import annotations

import pandas as pd

from dpforge.data.tables import canonical_text
from dpforge.errors import DataError
from dpforge.evaluation.distances import numeric_values
from dpforge.schema.table import Schema

__all__ = ["typed_table"]


def typed_table(frame: pd.DataFrame, schema: Schema, role: str) -> pd.DataFrame:
    """The schema's columns of ``frame``: numbers as floats, categories as canonical text."""
    if not isinstance(frame, pd.DataFrame):
        raise DataError(f"the {role} rows must be a table (DataFrame), got {type(frame).__name__}")
    if len(frame) == 0:
        raise DataError(f"the {role} table has no rows")
    out = {}
    for column in schema.columns:
        if column.is_numeric:
            out[column.name] = numeric_values(frame, column.name, role)
        elif column.name not in frame.columns:
            raise DataError(f"the {role} table lacks the column '{column.name}'")
        else:
            out[column.name] = [canonical_text(v) for v in frame[column.name].tolist()]
    return pd.DataFrame(out, columns=schema.names)
