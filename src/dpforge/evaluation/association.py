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
value counts as a category of its own.

:func:`cell_associations` reads every column on the evaluation's cells instead (the public cells
of :func:`dpforge.evaluation.fidelity.discretize`, numbers binned) and compares Cramér's V of
every pair, real against synthetic: the mean absolute difference, and the dependence the
synthetic rows invent where the real rows have none (:data:`INVENTION_RULE`), with the pair of
the largest excess. Computed from private rows: for the steward, not for release.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from itertools import combinations

import numpy as np
import pandas as pd

from dpforge.evaluation.fidelity import EVAL_BINS, discretize
from dpforge.evaluation.inputs import typed_table
from dpforge.evaluation.utility import MetricResult
from dpforge.schema.table import Schema

__all__ = [
    "ASSOCIATION_RULE",
    "INVENTION_RULE",
    "PairAssociation",
    "association_difference",
    "association_matrix",
    "cell_associations",
    "correlation_ratio",
    "cramers_v",
    "pearson",
]

ASSOCIATION_RULE = (
    "numeric x numeric: Pearson correlation; categorical x categorical: Cramér's V (no bias "
    "correction); numeric x categorical: correlation ratio eta; a constant column: 0"
)


# A dependence the synthetic rows invent (issue 44): a pair independent in the real rows (V
# below INDEPENDENT_V) whose every cell is well populated (at least MIN_CELL_ROWS real rows, so
# that its V is not sampling noise) must not reach INVENTED_V in the synthetic rows.
INDEPENDENT_V = 0.05
MIN_CELL_ROWS = 100
INVENTED_V = 0.2
INVENTION_RULE = (
    f"real Cramér's V < {INDEPENDENT_V:g}, every cell of the pair's real table (its non-empty "
    f"rows and columns) >= {MIN_CELL_ROWS} rows, synthetic V > {INVENTED_V:g}"
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
    return _table_v(_contingency(x, y, (r, c)))


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


@dataclass(frozen=True)
class PairAssociation:
    """Cramér's V of one column pair on the evaluation's cells, real and synthetic.

    ``well_populated``: every cell of the real table (its non-empty rows and columns) holds at
    least :data:`MIN_CELL_ROWS` rows. ``excess``: synthetic V minus real V."""

    pair: str
    real_v: float
    synthetic_v: float
    well_populated: bool

    @property
    def excess(self) -> float:
        return self.synthetic_v - self.real_v

    @property
    def invented(self) -> bool:
        """Whether the pair breaks :data:`INVENTION_RULE`."""
        return self.well_populated and self.real_v < INDEPENDENT_V and self.synthetic_v > INVENTED_V

    def to_dict(self) -> dict[str, object]:
        return {**asdict(self), "excess": self.excess, "invented": self.invented}


def _table_v(table: np.ndarray) -> float:
    """Cramér's V (no bias correction) of a contingency table, empty rows and columns left out
    (as :func:`cramers_v` sees only the values present); 0 when fewer than two remain."""
    table = table[table.sum(axis=1) > 0][:, table.sum(axis=0) > 0]
    if min(table.shape) < 2:
        return 0.0
    n = table.sum()
    expected = np.outer(table.sum(axis=1), table.sum(axis=0)) / n
    chi2 = float(((table - expected) ** 2 / expected).sum())
    return float(np.clip(np.sqrt(chi2 / n / (min(table.shape) - 1)), 0.0, 1.0))


def _contingency(x: np.ndarray, y: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    flat = np.bincount(x * shape[1] + y, minlength=shape[0] * shape[1])
    return flat.reshape(shape).astype(np.float64)


def _well_populated(table: np.ndarray) -> bool:
    table = table[table.sum(axis=1) > 0][:, table.sum(axis=0) > 0]
    return bool(table.size) and float(table.min()) >= MIN_CELL_ROWS


def pair_associations(
    real: pd.DataFrame, synthetic: pd.DataFrame, schema: Schema, n_bins: int = EVAL_BINS
) -> list[PairAssociation]:
    """Cramér's V of every column pair (label included) on the evaluation's cells
    (:func:`~dpforge.evaluation.fidelity.discretize`; an empty cell is a cell of its own)."""
    cells = [
        discretize(typed_table(table, schema, role), schema, n_bins)
        for table, role in ((real, "real"), (synthetic, "synthetic"))
    ]
    sizes = {n: int(max(c[n].max() for c in cells)) + 1 for n in schema.names}
    out = []
    for x, y in combinations(schema.names, 2):
        shape = (sizes[x], sizes[y])
        a, b = (_contingency(c[x].to_numpy(), c[y].to_numpy(), shape) for c in cells)
        out.append(PairAssociation(f"{x} x {y}", _table_v(a), _table_v(b), _well_populated(a)))
    return out


def cell_associations(
    real: pd.DataFrame, synthetic: pd.DataFrame, schema: Schema, n_bins: int = EVAL_BINS
) -> MetricResult:
    """Mean |synthetic V - real V| of Cramér's V over every column pair on the evaluation's
    cells; ``details``: the pair of the largest excess (synthetic V above real V; None with
    fewer than two columns) and the pairs that break :data:`INVENTION_RULE`."""
    pairs = pair_associations(real, synthetic, schema, n_bins)
    value = float(np.mean([abs(p.excess) for p in pairs])) if pairs else 0.0
    largest = max(pairs, key=lambda p: p.excess, default=None)
    details = {
        "largest_excess": None if largest is None else largest.to_dict(),
        "invented": [p.to_dict() for p in pairs if p.invented],
        "pairs": len(pairs),
        "n_bins": n_bins,
        "rule": INVENTION_RULE,
    }
    return MetricResult("cramers_v_mean_abs_difference", value, details)
