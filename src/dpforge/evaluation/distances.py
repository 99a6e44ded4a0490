"""Fidelity of numeric columns: Kolmogorov–Smirnov statistic and Wasserstein-1 distance.

Each numeric column of the schema is compared on its raw values (no binning):

* the two-sample Kolmogorov–Smirnov statistic, the largest gap between the two empirical
  distribution functions (0 when they agree, 1 when the samples do not overlap);
* the Wasserstein-1 (earth mover's) distance, in the column's own units, and divided by the
  width of the column's public bounds (``upper - lower`` of the schema) so that columns of
  different scales can be averaged: the normalised figure is 1 when all mass moves from one
  bound to the other.

The KS statistic is computed here (tested against :func:`scipy.stats.ks_2samp`); W1 comes
from :func:`scipy.stats.wasserstein_distance`. These figures are computed from private rows:
they are for the data steward, not for release.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

from dpforge.data.tables import MISSING_TOKENS
from dpforge.errors import DataError
from dpforge.evaluation.utility import MetricResult
from dpforge.schema.table import Column, Schema

__all__ = ["ks_statistic", "ks_two_sample", "numeric_values", "wasserstein"]


def numeric_values(frame: pd.DataFrame, name: str, role: str, nullable: bool = False) -> np.ndarray:
    """Column ``name`` of ``frame`` as finite floats (text such as '1.5' is read as a number);
    a ``nullable`` column keeps its empty cells as NaN."""
    if name not in frame.columns:
        raise DataError(f"the {role} table lacks the column '{name}'")
    column = frame[name]
    if nullable:  # an empty cell as a file writes it ('', 'NA', ...) is NaN
        column = column.mask(column.map(lambda v: str(v).strip().lower() in MISSING_TOKENS))
    try:
        values = pd.to_numeric(column, errors="raise").to_numpy(dtype=np.float64)
    except (TypeError, ValueError):
        raise DataError(f"column '{name}' of the {role} table must be numeric") from None
    if values.size == 0:
        raise DataError(f"the {role} table has no rows")
    if not np.all(np.isfinite(values) | (nullable & np.isnan(values))):
        raise DataError(f"column '{name}' of the {role} table holds missing or infinite values")
    return values


def _numeric_columns(schema: Schema) -> tuple[Column, ...]:
    return tuple(c for c in schema.columns if c.is_numeric)


def _mean(values: dict[str, float]) -> float:
    return float(np.mean(list(values.values()))) if values else float("nan")


def ks_two_sample(a: np.ndarray, b: np.ndarray) -> float:
    """The two-sample KS statistic: the largest gap between the two empirical distribution
    functions (the statistic of :func:`scipy.stats.ks_2samp`, without its p-value)."""
    a, b = np.sort(a), np.sort(b)
    points = np.concatenate([a, b])
    cdf_a = np.searchsorted(a, points, side="right") / a.size
    cdf_b = np.searchsorted(b, points, side="right") / b.size
    return float(np.abs(cdf_a - cdf_b).max())


def ks_statistic(real: pd.DataFrame, synthetic: pd.DataFrame, schema: Schema) -> MetricResult:
    """Two-sample KS statistic per numeric column; ``value`` is their mean (NaN if none).

    ``details["per_column"]`` maps each numeric column to its statistic.
    """
    per_column = {
        c.name: ks_two_sample(*_present_pair(real, synthetic, c)) for c in _numeric_columns(schema)
    }
    return MetricResult("ks_statistic_mean", _mean(per_column), {"per_column": per_column})


def _present_pair(
    real: pd.DataFrame, synthetic: pd.DataFrame, column: Column
) -> tuple[np.ndarray, np.ndarray]:
    """The column's present values on each side (a nullable column's empty cells are left out:
    TVD counts them). A side with none at all stands in as one lower bound."""
    pair = []
    for frame, role in ((real, "real"), (synthetic, "synthetic")):
        values = numeric_values(frame, column.name, role, column.nullable)
        values = values[~np.isnan(values)]
        pair.append(values if values.size else np.array([float(column.lower or 0.0)]))
    return pair[0], pair[1]


def _width(column: Column) -> float | None:
    """The public width of the column's bounds, or None when unknown or zero."""
    if column.lower is None or column.upper is None or column.upper <= column.lower:
        return None
    return float(column.upper - column.lower)


def wasserstein(real: pd.DataFrame, synthetic: pd.DataFrame, schema: Schema) -> MetricResult:
    """Wasserstein-1 distance per numeric column; ``value`` is the mean normalised distance.

    ``details["per_column"]`` maps each numeric column to ``{"distance": W1 in the column's
    units, "normalized": W1 / (upper - lower)}`` (normalised is NaN when the schema has no
    bounds for the column).
    """
    per_column: dict[str, dict[str, float]] = {}
    for column in _numeric_columns(schema):
        distance = float(stats.wasserstein_distance(*_present_pair(real, synthetic, column)))
        width = _width(column)
        normalized = distance / width if width is not None else float("nan")
        per_column[column.name] = {"distance": distance, "normalized": normalized}
    normalized = {k: v["normalized"] for k, v in per_column.items() if np.isfinite(v["normalized"])}
    return MetricResult(
        "wasserstein1_normalized_mean", _mean(normalized), {"per_column": per_column}
    )
