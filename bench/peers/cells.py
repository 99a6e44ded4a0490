"""The public cells every tool compared sees: our tables <-> integer codes per column.

:func:`to_cells` is ``dpforge.evaluation.fidelity.discretize`` (categories by schema position,
numeric columns on the public cells of ``numeric_bins(column, n_bins)``), :func:`cell_domain`
the number of cells of each column, and :func:`from_cells` decodes synthetic cells back into a
table (categories to their text, a numeric cell to a value drawn inside it).
:func:`declare_bounds` gives Adult's numeric columns the public bounds of
:data:`ADULT_DECLARED_BOUNDS`, so that no tool spends budget on them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

import numpy as np
import pandas as pd

from dpforge.evaluation.fidelity import discretize
from dpforge.evaluation.inputs import typed_table
from dpforge.schema.table import Schema
from dpforge.statistics.bins import numeric_bins

__all__ = ["ADULT_DECLARED_BOUNDS", "cell_domain", "declare_bounds", "from_cells", "to_cells"]

# For the peer benchmark every numeric column of Adult needs public bounds (smartnoise must not
# spend budget on them, and all tools get the same cells): capital-loss is a 5-digit CPS field
# like capital-gain (0..99,999); fnlwgt is a survey weight, > 1 by the extraction rule, and far
# below 10 million (an 8-digit field would hold 99,999,999: 10 M is a generous round cap).
ADULT_DECLARED_BOUNDS: dict[str, tuple[float, float]] = {
    "fnlwgt": (1.0, 10_000_000.0),
    "capital-loss": (0.0, 99_999.0),
}


def declare_bounds(schema: Schema, bounds: Mapping[str, tuple[float, float]]) -> Schema:
    """``schema`` with the given numeric columns' bounds declared (a copy; schema unchanged)."""
    unknown = set(bounds) - set(schema.names)
    if unknown:
        raise ValueError(f"the schema has no columns {sorted(unknown)}")
    columns = tuple(
        replace(c, lower=bounds[c.name][0], upper=bounds[c.name][1]) if c.name in bounds else c
        for c in schema.columns
    )
    return replace(schema, columns=columns)


def cell_domain(schema: Schema, n_bins: int) -> dict[str, int]:
    """Number of cells of each column, in schema order (the public domain of the cells); a
    nullable column has one more, the last, for an empty cell (``fidelity.discretize``)."""
    return {
        c.name: (numeric_bins(c, n_bins).size if c.is_numeric else len(c.categories))
        + int(c.nullable)
        for c in schema.columns
    }


def to_cells(table: pd.DataFrame, schema: Schema, n_bins: int) -> pd.DataFrame:
    """``table`` as integer cells per column (``fidelity.discretize``), in schema order: dates
    as numbers on their time axis (``typed_table``) on the public cells of their declared range,
    an empty cell of a nullable column as the column's last cell."""
    if any(c.is_time or c.nullable for c in schema.columns):
        table = typed_table(table, schema, "training")
    return discretize(table, schema, n_bins)[schema.names]


def from_cells(
    cells: pd.DataFrame, schema: Schema, n_bins: int, rng: np.random.Generator
) -> pd.DataFrame:
    """A table back from cells: categories as their text, numeric cells decoded to a value
    drawn inside the cell (``numeric_bins(column, n_bins).decode``; floats, as the loaders
    give numeric columns; a date as a number on its time axis, which ``typed_table`` reads as
    it is); a nullable column's last cell as an empty cell (NaN, or None for a category)."""
    domain = cell_domain(schema, n_bins)
    out = {}
    for column in schema.columns:
        codes = cells[column.name].to_numpy().astype(np.int64)
        if codes.size and (codes.min() < 0 or codes.max() >= domain[column.name]):
            raise ValueError(
                f"column '{column.name}' holds cells outside 0..{domain[column.name] - 1}"
            )
        empty = codes == domain[column.name] - 1 if column.nullable else np.zeros(codes.size, bool)
        present = np.where(empty, 0, codes)
        if column.is_numeric:
            values = numeric_bins(column, n_bins).decode(present, rng).astype(np.float64)
            out[column.name] = np.where(empty, np.nan, values)
        else:
            values = np.asarray(column.categories, dtype=object)[present]
            out[column.name] = np.where(empty, None, values)
    return pd.DataFrame(out)
