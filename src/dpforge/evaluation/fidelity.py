"""Fidelity of synthetic tables: total-variation distance of 1-way and 2-way marginals.

Every column is read as cells: categories as they are, numeric columns on the public cells of
:mod:`dpforge.statistics.bins` (a rule of the schema's bounds, the same for every tool compared).
The TVD of a marginal is half the L1 distance between the two normalised histograms: 0 when
they agree, 1 when they share no mass. This is an evaluation on private data: its figures are
for the steward, not for release.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations

import numpy as np
import pandas as pd

from dpforge.errors import DataError
from dpforge.schema.table import Schema
from dpforge.statistics.bins import numeric_bins

__all__ = ["MarginalFidelity", "discretize", "marginal_fidelity", "marginal_tvd"]

EVAL_BINS = 32


def discretize(table: pd.DataFrame, schema: Schema, n_bins: int = EVAL_BINS) -> pd.DataFrame:
    """Each column as integer cell indices (categories by their schema position); an empty cell
    of a nullable column is a cell of its own, the last, so that TVD counts it."""
    out = {}
    for column in schema.columns:
        if column.name not in table.columns:
            raise DataError(f"column '{column.name}' is missing from the table to evaluate")
        values = table[column.name].to_numpy()
        missing = pd.isna(values) if column.nullable else np.zeros(len(values), dtype=bool)
        if column.is_numeric:
            bins = numeric_bins(column, n_bins)
            cells = bins.assign(np.where(missing, column.lower, values.astype(np.float64)))
            out[column.name] = np.where(missing, bins.size, cells)
        else:
            lookup = {c: i for i, c in enumerate(column.categories)}
            lookup.update({None: len(column.categories)} if column.nullable else {})
            keys = (None if m else str(v) for v, m in zip(values, missing, strict=True))
            codes = np.fromiter((lookup.get(k, -1) for k in keys), np.int64, len(values))
            if (codes < 0).any():
                raise DataError(
                    f"column '{column.name}' holds values that are not categories of the schema"
                )
            out[column.name] = codes
    return pd.DataFrame(out)


def _sizes(schema: Schema, n_bins: int) -> dict[str, int]:
    return {
        c.name: (numeric_bins(c, n_bins).size if c.is_numeric else len(c.categories))
        + int(c.nullable)
        for c in schema.columns
    }


def _histogram(cells: pd.DataFrame, names: tuple[str, ...], sizes: dict[str, int]) -> np.ndarray:
    flat = np.zeros(len(cells), dtype=np.int64)
    for name in names:
        flat = flat * sizes[name] + cells[name].to_numpy()
    total = int(np.prod([sizes[n] for n in names]))
    counts = np.bincount(flat, minlength=total).astype(np.float64)
    return counts / max(1.0, counts.sum())


@dataclass(frozen=True)
class MarginalFidelity:
    """TVD per marginal (keys: column names joined by ' x ') and their means."""

    one_way: dict[str, float]
    two_way: dict[str, float]

    @property
    def mean_one_way(self) -> float:
        return float(np.mean(list(self.one_way.values())))

    @property
    def mean_two_way(self) -> float:
        return float(np.mean(list(self.two_way.values()))) if self.two_way else float("nan")


def marginal_fidelity(
    real: pd.DataFrame, synthetic: pd.DataFrame, schema: Schema, n_bins: int = EVAL_BINS
) -> MarginalFidelity:
    """TVD of every 1-way and every 2-way marginal between ``real`` and ``synthetic``."""
    ones = [(name,) for name in schema.names]
    pairs = list(combinations(schema.names, 2))
    tvd = marginal_tvd(real, synthetic, schema, [*ones, *pairs], n_bins)
    one = {name: tvd[(name,)] for name in schema.names}
    two = {f"{x} x {y}": tvd[(x, y)] for x, y in pairs}
    return MarginalFidelity(one, two)


def marginal_tvd(
    real: pd.DataFrame,
    synthetic: pd.DataFrame,
    schema: Schema,
    marginals: Sequence[tuple[str, ...]],
    n_bins: int = EVAL_BINS,
) -> dict[tuple[str, ...], float]:
    """TVD of each marginal in ``marginals`` (tuples of column names) on the public cells."""
    sizes = _sizes(schema, n_bins)
    a, b = discretize(real, schema, n_bins), discretize(synthetic, schema, n_bins)
    return {
        names: 0.5 * float(np.abs(_histogram(a, names, sizes) - _histogram(b, names, sizes)).sum())
        for names in marginals
    }
