"""Cells where the data are: numeric cells cut at DP quantiles of a fine public grid (charged).

Public cells (:mod:`dpforge.statistics.bins`) are equal in width, so a column whose records
crowd into a small part of its range (a hormone level near 0 on a [0, 1] scale) gets one or two
cells for almost all of them, and whatever separates the classes inside those cells is lost:
on Thyroid a classifier trained on the real rows, cut into 64 public cells and decoded again,
reaches a macro AuROC of 0.90 instead of 0.98. Here every such column's histogram on a fine
public grid (``FINE_CELLS`` cells) is released once with the discrete Gaussian (a record adds
one to one cell of each column's histogram: L2 sensitivity ``sqrt(m)`` for ``m`` columns, the
``table_event`` of :mod:`dpforge.privacy.release_noise`), projected onto the simplex (free)
and cut into cells of about equal mass (free): fine where the records are, coarse where they
are not. The bounds' point cells stay.
The fine counts that stand out from the noise are kept too (free, ``kinds.table``): a value is
drawn inside its cell in proportion to them, so that heaped numbers come back on their points
(``NumericBins.decode``). An empty cell
of a nullable column adds to no fine cell: the sensitivity stays ``sqrt(m)``. With a privacy
unit (a person's at most ``r`` rows, :mod:`dpforge.privacy.person`) it is ``r * sqrt(m)``.

How many cells (:func:`cells_for_noise`) follows from public quantities only: the public record
count N, the number of label classes K and the noise std that each cell of the label x column
marginals will get (fixed by epsilon, delta and the public rules of the plan). A cell of about
equal mass holds about N / (K k) records of each class; the rule takes the largest k (at most
``n_bins``) at which that count stands ``snr`` noise standard deviations above the noise, so a
small table or a small epsilon gets few wide cells instead of many cells drowned in noise (AIM
makes the same trade when it drops marginals too large for its budget). Never fewer than
``MIN_CELLS`` (16): below that the cells themselves cost more than their noise saves (on the
502-row psid table the rule gave 4 and 8 cells at epsilon 1 and 3; 16 took the 1-way TVD from
0.33 / 0.19 to 0.26 / 0.14 and the 2-way from 0.57 / 0.38 to 0.51 / 0.32, at a cost in
linear-classifier AUC at epsilon 3,
bench/results/tables/trials_pairs_within_cell.md). An integer column with at most ``2 k``
values keeps one cell per value (:func:`dpforge.statistics.bins.numeric_bins`); a wider one,
however many values it has, gets k cells placed by its fine histogram.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from dpforge.engines.aggregates import FineCells, NoisyColumn, TableAggregates
from dpforge.privacy.release_noise import noisy_counts
from dpforge.schema.formats import WHOLE_TYPES
from dpforge.schema.table import Column
from dpforge.statistics.bins import NumericBins, numeric_bins
from dpforge.statistics.projection import project_to_simplex

__all__ = [
    "CELLS_SNR",
    "FINE_CELLS",
    "adaptive_columns",
    "bins_from_edges",
    "block_size",
    "cell_count_std",
    "cell_counts",
    "cells_for_noise",
    "within_cell_mass",
    "fine_mass",
    "measure_fine_histograms",
    "noise_outweighs_a_cell",
    "quantile_bins",
]

FINE_CELLS = 1024
# The fewest cells per numeric column (the bounds' point cells included), whatever the noise:
# a public constant, measured on psid (see the module docstring).
MIN_CELLS = 16


# Numeric cells keep their counts this many noise sd above the noise (docs/tables.md, "How the
# default works", step 1).
CELLS_SNR = 2.0


def cells_for_noise(
    n_public: float, cell_std: float, n_classes: int, n_bins: int, snr: float
) -> int:
    """Cells per numeric column (the bounds' point cells included) from public inputs only:
    the largest k <= ``n_bins`` with ``n_public / (K k) >= snr * cell_std``, at least
    MIN_CELLS; ``n_bins`` when there is no noise or ``snr`` is 0 (the rule off)."""
    if cell_std <= 0 or snr <= 0:
        return n_bins
    k = math.floor(n_public / (max(1, n_classes) * snr * cell_std))
    return int(min(n_bins, max(MIN_CELLS, k)))


def adaptive_columns(columns: Sequence[Column], n_bins: int) -> list[Column]:
    """Numeric columns whose public cells at ``n_bins`` are intervals (not one cell per whole
    number): they get cells placed by their fine histograms."""
    return [c for c in columns if c.is_numeric and numeric_bins(c, n_bins).values.size == 0]


def measure_fine_histograms(
    table: pd.DataFrame,
    columns: Sequence[Column],
    noise: float,
    rng: np.random.Generator,
    rows: int = 1,
) -> dict[str, np.ndarray]:
    """Each column's noisy histogram on its fine public grid (noise std noise * rows *
    sqrt(m); ``rows``: a person's most rows, 1 per record)."""
    std = noise * rows * np.sqrt(len(columns))
    out = {}
    for column in columns:
        fine = numeric_bins(column, FINE_CELLS + 2)
        at_source = isinstance(table, TableAggregates) and table.column(column.name)
        if isinstance(at_source, NoisyColumn):  # noised where the records are
            rule = FineCells(column.to_dict(), FINE_CELLS + 2)
            out[column.name] = at_source.noisy_bincount(rule, fine.size + 1, std)[:-1]
            continue
        counts = _fine_counts(table, column.name, fine)
        out[column.name] = noisy_counts(counts, std, rng) if std > 0 else counts
    return out


def _fine_counts(table, name: str, fine: NumericBins) -> np.ndarray:
    """The exact histogram of one column on its fine grid (an engine's, or from pandas); an
    empty cell (NaN) is counted apart and left out."""

    def assign(values: np.ndarray) -> np.ndarray:
        values = np.asarray(values, dtype=np.float64)
        empty = np.isnan(values)
        return np.where(empty, fine.size, fine.assign(np.where(empty, fine.lower, values)))

    if isinstance(table, TableAggregates):
        return table.column(name).bincount(assign, fine.size + 1)[:-1]
    values = table[name].to_numpy(np.float64)
    return np.bincount(assign(values), minlength=fine.size + 1)[:-1].astype(np.float64)


def _fine_edges(fine: NumericBins) -> np.ndarray:
    """The edges of the fine grid's interior cells."""
    if fine.values.size:  # a small integer range has one fine cell per whole number:
        return np.arange(fine.lower + 0.5, fine.upper, 1.0)  # cut at the half-integers
    return fine.edges


MAX_BLOCK = 16  # the most fine cells pooled into one block, unless the noise outweighs a cell


def block_size(std: float, total: float, n_fine: int = FINE_CELLS) -> int:
    """How many fine cells to pool before projecting (public: noise std and N): a power of two
    near ``(n_fine * std / total) ** 2``, where a block's count (about ``total * b / n_fine``
    for ``n_fine`` interior fine cells, if the records were spread evenly) reaches its noise
    ``std * sqrt(b)``. Without pooling, the positive noise of a thousand nearly empty fine
    cells survives the projection as mass spread over the whole range, and the cells placed on
    it are nearly uniform. At most MAX_BLOCK, so that records crowded in a small part of the
    range still stand out of finer blocks, unless :func:`noise_outweighs_a_cell`: then the
    block the noise asks for (up to the whole grid of ``n_fine`` cells)."""
    if std <= 0 or total <= 0:
        return 1
    wanted = (n_fine * std / total) ** 2
    block = 2 ** max(0, math.ceil(math.log2(max(wanted, 1.0))))
    ceiling = max(1, n_fine) if noise_outweighs_a_cell(std, total) else MAX_BLOCK
    return int(min(ceiling, block))


def noise_outweighs_a_cell(std: float, total: float) -> bool:
    """Whether the noise sd of one block of MAX_BLOCK fine cells, ``std * sqrt(MAX_BLOCK)``,
    exceeds the records of one cell at the fewest cells, ``total / MIN_CELLS`` (public: noise
    std and N). Then even records crowded into as few blocks as the cells they need hold
    fewer per block than an empty block's noise sd: at least one empty block in six carries
    noise worth a whole cell, and cells are placed on it. For a grid of ``n_fine`` fine cells
    this is a wanted block over ``(n_fine / (MIN_CELLS * sqrt(MAX_BLOCK))) ** 2``, 256 on the
    full grid: psid (502 records) asks for 961 at epsilon 3; nmes at epsilon 1, the next
    noisiest benchmark table, for 109 (bench/results/tables/quality_gaps.md, session 35)."""
    return std * math.sqrt(MAX_BLOCK) * MIN_CELLS > total


def fine_mass(noisy: np.ndarray, total: float, block: int = 1) -> np.ndarray:
    """The interior fine cells' mass: the noisy histogram projected to ``total`` (free), the
    interior pooled ``block`` fine cells at a time and each block's mass spread evenly."""
    noisy = np.asarray(noisy, dtype=np.float64)
    if block <= 1:
        return project_to_simplex(noisy, total)[1:-1]  # the bounds' point cells stay apart
    interior = noisy[1:-1]
    starts = np.arange(0, interior.size, block)
    pooled = np.add.reduceat(interior, starts)
    projected = project_to_simplex(np.concatenate([[noisy[0]], pooled, [noisy[-1]]]), total)
    widths = np.diff(np.append(starts, interior.size))
    return np.repeat(projected[1:-1] / widths, widths)


def quantile_bins(
    column: Column, noisy: np.ndarray, total: float, n_bins: int, block: int = 1
) -> NumericBins:
    """Cells of about equal (noisy, projected, pooled by ``block``) mass, cut at the fine
    grid's edges (free)."""
    fine = numeric_bins(column, FINE_CELLS + 2)
    fine_edges = _fine_edges(fine)
    mass = fine_mass(noisy, total, block)
    interior = n_bins - 2
    if mass.sum() <= 0:
        return numeric_bins(column, n_bins)
    cumulative = np.cumsum(mass) / mass.sum()
    cuts = np.searchsorted(cumulative, np.arange(1, interior) / interior, side="left") + 1
    inner = np.unique(np.clip(cuts, 1, fine_edges.size - 2))
    edges = np.concatenate([[fine_edges[0]], fine_edges[inner], [fine_edges[-1]]])
    return NumericBins(column.name, fine.lower, fine.upper, fine.integer, edges, np.zeros(0))


def within_cell_mass(
    column: Column,
    noisy: np.ndarray,
    edges: np.ndarray,
    threshold: float,
    counts: np.ndarray,
    spread: np.ndarray | None = None,
) -> np.ndarray:
    """The interior fine cells' mass that decoding draws values from inside each cell (free):
    the noisy counts at or above ``threshold`` (heaped values, dense spots), plus the cell's
    continuous part spread evenly over its fine cells (without it, a cell's one standing-out
    fine cell would take all of its values), except that the first cell starts, and the last
    cell stops, where ``spread`` (the projected, pooled fine mass, :func:`fine_mass`) has
    mass in it (:func:`_from_the_bounds`). Spread evenly there, a
    cell reaching from a generous bound to where the records start (0 to 172 mm for a
    penguin's flipper) puts values far outside the records' range (issue 46.3). Every other
    cell lies between cuts placed on the records' mass; inside it, the pooled mass's holes
    are mostly the projection's common shift on noise: placed in proportion to it, creditcard
    at epsilon 3 (noise sd 45 a block of 16 fine cells, about 11 records a block) put the 158
    values of income's 4.2-7.6 cell on the quarter of its fine cells the noise left, and
    4.5-6.5 came out empty (1-way TVD 0.30 on income, 0.08 evenly; quality_gaps.md).

    The continuous part of a cell is its count beyond the standouts, from ``counts`` (one
    released estimate per interior cell, :func:`cell_counts`). Sizing it from the fine
    histogram pooled as for placing the cells instead fails on small tables, where the pool
    is as wide as the cell (docs/research/anchoring-options.md, ``within_cell``)."""
    raw = np.asarray(noisy, dtype=np.float64)[1:-1]
    standout = np.where(raw >= threshold, raw, 0.0)
    shape = np.ones(raw.size) if spread is None else np.asarray(spread, dtype=np.float64)
    at = _fine_index(column, edges)
    mass = standout.copy()
    for k, (first, last) in enumerate(zip(at[:-1], at[1:], strict=True)):
        if last > first:
            rest = max(0.0, counts[k] - standout[first:last].sum())
            part = _from_the_bounds(shape[first:last], k == 0, k == at.size - 2)
            mass[first:last] += rest * part / part.sum()
    return mass


def _from_the_bounds(shape: np.ndarray, lower: bool, upper: bool) -> np.ndarray:
    """Ones over a cell's fine cells but, where the cell reaches the ``lower`` (``upper``)
    bound, zeros from it to the first (after the last) fine cell where ``shape`` is positive:
    where the records start, at the pooled mass's resolution. Ones everywhere where it is
    positive nowhere."""
    out = np.ones(shape.size)
    where = np.flatnonzero(shape > 0)
    if where.size:
        out[: where[0] if lower else 0] = 0.0
        out[where[-1] + 1 if upper else shape.size :] = 0.0
    return out


def cell_counts(
    column: Column,
    noisy: np.ndarray,
    edges: np.ndarray,
    fine_std: float,
    released: tuple[np.ndarray, float] | None = None,
) -> np.ndarray:
    """Each interior cell's count, estimated from DP releases alone (free): the sum of its
    noisy fine counts (noise variance ``fine_std**2`` times its fine cells: unbiased, but
    noisier the wider the cell), and, when given, ``released`` = (the cell's noisy count in
    round 1's marginal of the column, one per interior cell; its noise sd), the two weighed
    by the inverse of their noise variances (the least-variance unbiased mix)."""
    raw = np.asarray(noisy, dtype=np.float64)[1:-1]
    at = _fine_index(column, edges)
    fine_sum = np.array([raw[a:b].sum() for a, b in zip(at[:-1], at[1:], strict=True)])
    if released is None:
        return fine_sum
    counts, std = np.asarray(released[0], dtype=np.float64), float(released[1])
    fine_var = fine_std**2 * np.maximum(1, np.diff(at))
    if std <= 0:
        return counts
    if fine_std <= 0:
        return fine_sum
    weight = (1.0 / fine_var) / (1.0 / fine_var + 1.0 / std**2)
    return weight * fine_sum + (1.0 - weight) * counts


def cell_count_std(
    column: Column, edges: np.ndarray, fine_std: float, released_std: float | None = None
) -> np.ndarray:
    """The noise sd of each interior cell's count from :func:`cell_counts` (public): its fine
    cells' sum, or the inverse-variance mix of it and round 1's (sd ``released_std``)."""
    widths = np.maximum(1, np.diff(_fine_index(column, edges)))
    fine_var = fine_std**2 * widths
    if released_std is None or fine_std <= 0:
        return np.sqrt(fine_var)
    if released_std <= 0:
        return np.zeros(widths.size)
    return 1.0 / np.sqrt(1.0 / fine_var + 1.0 / released_std**2)


def _fine_index(column: Column, edges: np.ndarray) -> np.ndarray:
    """The index on the column's interior fine grid of each of its cells' edges (the cells
    are placed on fine edges, so the nearest one)."""
    fine_edges = _fine_edges(numeric_bins(column, FINE_CELLS + 2))
    return np.abs(fine_edges[:, None] - np.asarray(edges)[None, :]).argmin(axis=0)


def bins_from_edges(
    columns: Sequence[Column],
    edges: Mapping[str, Sequence[float]],
    masses: Mapping[str, Sequence[float]] | None = None,
):
    """Rebuild saved cells (the edges and fine masses are DP outputs: public, kept in the model
    folder); a column without a fine mass draws uniformly inside its cells."""
    by_name, masses = {c.name: c for c in columns}, masses or {}
    return {name: _saved_bins(by_name[name], e, masses.get(name)) for name, e in edges.items()}


def _saved_bins(column: Column, edges: Sequence[float], mass: Sequence[float] | None):
    fine = numeric_bins(column, FINE_CELLS + 2) if mass is not None else None
    return NumericBins(
        column.name,
        float(column.lower),
        float(column.upper),
        column.type in WHOLE_TYPES,
        np.asarray(edges, dtype=np.float64),
        np.zeros(0),
        None if fine is None else _fine_edges(fine),
        None if mass is None else np.asarray(mass, dtype=np.float64),
    )
