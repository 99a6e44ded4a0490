"""Fidelity of dependencies between columns: the difference of the association matrices.

One association per pair of schema columns (label included), by one rule:

* numeric x numeric: Pearson's correlation, in [-1, 1];
* categorical x categorical: Cramér's V (no bias correction) of the contingency table, in [0, 1];
* numeric x categorical: the correlation ratio eta (the square root of the share of the numeric
  column's variance explained by the categories), in [0, 1].

A column that is constant in a table has association 0 with every other column there (nothing
varies together with it); the diagonal is 1. The fidelity figure is the matrix ``synthetic -
real`` and the mean of its absolute values over the pairs above the diagonal: 0 when both tables
show the same dependencies. Categorical columns are read as text (``canonical_text``), so any
value counts as a category of its own. Computed from private rows: for the steward, not for
release.
"""

from __future__ import annotations

from itertools import combinations

import numpy as np
import pandas as pd

from dpforge.evaluation.inputs import typed_table
from dpforge.evaluation.utility import MetricResult
from dpforge.schema.table import Schema

__all__ = [
    "ASSOCIATION_RULE",
    "association_difference",
    "association_matrix",
    "correlation_ratio",
    "cramers_v",
    "pearson",
]

ASSOCIATION_RULE = (
    "numeric x numeric: Pearson correlation; categorical x categorical: Cramér's V (no bias "
    "correction); numeric x categorical: correlation ratio eta; a constant column: 0"
)


def pearson(x: np.ndarray, y: np.ndarray) -> float:
    """Pearson's correlation; 0 when either variable is constant."""
    dx, dy = x - x.mean(), y - y.mean()
    scale = float(np.sqrt((dx * dx).sum() * (dy * dy).sum()))
    return float(np.clip((dx * dy).sum() / scale, -1.0, 1.0)) if scale > 0 else 0.0


def _codes(values: np.ndarray) -> np.ndarray:
    return pd.factorize(values, sort=True)[0]


def cramers_v(a: np.ndarray, b: np.ndarray) -> float:
    """Cramér's V of two categorical variables (codes or text); 0 when either is constant."""
    x, y = _codes(a), _codes(b)
    r, c = x.max() + 1, y.max() + 1
    if min(r, c) < 2:
        return 0.0
    table = np.zeros((r, c))
    np.add.at(table, (x, y), 1.0)
    n = table.sum()
    expected = np.outer(table.sum(axis=1), table.sum(axis=0)) / n
    chi2 = float(((table - expected) ** 2 / expected).sum())
    return float(np.clip(np.sqrt(chi2 / n / (min(r, c) - 1)), 0.0, 1.0))


def correlation_ratio(categories: np.ndarray, values: np.ndarray) -> float:
    """Correlation ratio eta of ``values`` given ``categories``; 0 when ``values`` is constant."""
    codes = _codes(categories)
    total = float(((values - values.mean()) ** 2).sum())
    if total <= 0:
        return 0.0
    counts = np.bincount(codes).astype(np.float64)
    means = np.bincount(codes, weights=values) / np.maximum(counts, 1.0)
    between = float((counts * (means - values.mean()) ** 2).sum())
    return float(np.clip(np.sqrt(between / total), 0.0, 1.0))


def _columns(table: pd.DataFrame, schema: Schema, role: str) -> dict[str, np.ndarray]:
    """Each column's values; an empty category is a category of its own ("(missing)")."""
    typed = typed_table(table, schema, role)
    out = {}
    for column in schema.columns:
        values = typed[column.name].to_numpy()
        if column.nullable and not column.is_numeric:
            values = np.where(pd.isna(values), "(missing)", values)
        out[column.name] = values
    return out


def _pair(x: np.ndarray, y: np.ndarray, x_numeric: bool, y_numeric: bool) -> float:
    """The association of two columns over the rows where neither number is empty."""
    keep = np.ones(len(x), dtype=bool)
    for values, numeric in ((x, x_numeric), (y, y_numeric)):
        if numeric:
            keep &= ~np.isnan(values.astype(np.float64))
    if not keep.all():
        x, y = x[keep], y[keep]
        if x.size < 2:
            return 0.0
    if x_numeric and y_numeric:
        return pearson(x, y)
    if x_numeric:
        return correlation_ratio(y, x)
    if y_numeric:
        return correlation_ratio(x, y)
    return cramers_v(x, y)


def association_matrix(table: pd.DataFrame, schema: Schema, role: str = "") -> pd.DataFrame:
    """The symmetric association matrix of the schema's columns (rule: :data:`ASSOCIATION_RULE`)."""
    values = _columns(table, schema, role or "evaluated")
    numeric = {c.name: c.is_numeric for c in schema.columns}
    names = schema.names
    matrix = pd.DataFrame(np.eye(len(names)), index=names, columns=names)
    for a, b in combinations(names, 2):
        matrix.loc[a, b] = matrix.loc[b, a] = _pair(values[a], values[b], numeric[a], numeric[b])
    return matrix


def association_difference(
    real: pd.DataFrame, synthetic: pd.DataFrame, schema: Schema
) -> MetricResult:
    """Mean absolute difference of the association matrices over the column pairs.

    ``details`` hold the column order and the ``real``, ``synthetic`` and ``difference``
    (synthetic - real) matrices as nested lists, and the rule.
    """
    a = association_matrix(real, schema, "real")
    b = association_matrix(synthetic, schema, "synthetic")
    difference = b - a
    upper = np.triu_indices(len(schema.names), k=1)
    gaps = np.abs(difference.to_numpy()[upper])
    value = float(gaps.mean()) if gaps.size else 0.0
    details = {
        "columns": list(schema.names),
        "real": a.to_numpy().tolist(),
        "synthetic": b.to_numpy().tolist(),
        "difference": difference.to_numpy().tolist(),
        "rule": ASSOCIATION_RULE,
    }
    return MetricResult("association_mean_abs_difference", value, details)
