"""Public bins for numeric columns: a rule of the schema's bounds alone, never of the data.

Marginal measurements, the binned encoding of the generator and the fidelity metrics all need a
numeric column cut into cells. The cells come only from public quantities (the column's declared
or DP-estimated bounds, its type and a requested number of bins), so using them costs nothing:

* an integer column with at most ``2 * n_bins`` possible values gets one cell per value (ages,
  hours, codes: their peaks, such as a 40-hour week, stay exact);
* otherwise the two bounds are cells of their own (values clipped to a bound, zero-inflated
  amounts such as capital gains, top codes) and the open interval between them is cut into
  ``n_bins - 2`` cells: uniform in the value, or uniform in ``log(1 + value)`` when the
  bounds are non-negative and ``1 + upper`` is at least 100 times ``1 + lower`` (amounts,
  weights), so that small values keep their resolution. Integer columns have their interior
  edges at whole numbers plus one half (every cell holds whole numbers).

A cell decodes to a value drawn inside it (integers: a whole number inside it), from a generator
the caller owns: uniformly, or, for cells placed on a released fine histogram
(:mod:`dpforge.statistics.cells`), first a fine cell in proportion to its released mass and then
uniformly inside that fine cell, so that values heaped on a few points come back on them; a
fine cell with several times its neighbours' mass holds a heaped value, decoded to the roundest
number inside it (17.5, not 17.498: people heap on round numbers, and a value just below a
round edge would fall into another cell).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dpforge.schema.formats import WHOLE_TYPES
from dpforge.schema.table import Column

__all__ = ["NumericBins", "numeric_bins"]

LOG_SCALE_RATIO = 100.0


@dataclass(frozen=True)
class NumericBins:
    """Cells of one numeric column: ``edges`` of the interior cells, and point cells at the
    bounds when ``point_ends`` (otherwise every cell is one integer value, ``values``)."""

    column: str
    lower: float
    upper: float
    integer: bool
    edges: np.ndarray  # interior cell edges (len = interior cells + 1); empty for value cells
    values: np.ndarray  # one value per cell for small integer domains; empty otherwise
    fine_edges: np.ndarray | None = None  # a finer grid inside the interior cells, and its
    fine_mass: np.ndarray | None = None  # released mass per fine cell (DP, post-processed)

    @property
    def size(self) -> int:
        """Number of cells."""
        if self.values.size:
            return int(self.values.size)
        return int(self.edges.size - 1) + 2

    def assign(self, x: np.ndarray) -> np.ndarray:
        """The cell index of each value (values outside the bounds go to the bound's cell)."""
        x = np.clip(np.asarray(x, dtype=np.float64), self.lower, self.upper)
        if self.values.size:
            return np.rint(x - self.lower).astype(np.int64)
        inner = np.searchsorted(self.edges, x, side="right").clip(1, self.edges.size - 1)
        cells = inner.astype(np.int64)  # interior cells are 1 .. size - 2
        cells[x <= self.lower] = 0
        cells[x >= self.upper] = self.size - 1
        return cells

    def decode(self, cells: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """A value inside each cell: the bound for a point cell, uniform inside an interval."""
        cells = np.asarray(cells, dtype=np.int64)
        if self.values.size:
            return self.values[cells].astype(np.int64 if self.integer else np.float64)
        out = np.empty(cells.shape, dtype=np.float64)
        out[cells == 0] = self.lower
        out[cells == self.size - 1] = self.upper
        inner = (cells > 0) & (cells < self.size - 1)
        lo, hi = self.edges[cells[inner] - 1], self.edges[cells[inner]]
        if self.fine_mass is not None:
            lo, hi = self._fine_cells(cells[inner], lo, hi, rng)
        if self.integer:  # edges are k + 1/2: the cell holds ceil(lo) .. floor(hi)
            lo_int, hi_int = np.ceil(lo), np.floor(hi)
            out[inner] = lo_int + np.floor(rng.random(lo.size) * (hi_int - lo_int + 1))
            return out.astype(np.int64)
        out[inner] = lo + rng.random(lo.size) * (hi - lo)
        return out

    def _fine_cells(
        self, cells: np.ndarray, lo: np.ndarray, hi: np.ndarray, rng: np.random.Generator
    ) -> tuple[np.ndarray, np.ndarray]:
        """Per value of interior ``cells`` [lo, hi], the fine cell inside drawn in proportion
        to the fine mass (the whole cell when none of its fine cells has mass)."""
        fine, mass = np.asarray(self.fine_edges), np.asarray(self.fine_mass, dtype=np.float64)
        cumulative = np.concatenate([[0.0], np.cumsum(np.clip(mass, 0.0, None))])
        at = np.abs(fine[:, None] - self.edges[None, :]).argmin(axis=0)  # coarse edge -> fine
        first, last = at[cells - 1], at[cells]
        low, high = cumulative[first], cumulative[last]
        target = low + rng.random(lo.size) * (high - low)
        chosen = np.searchsorted(cumulative, target, side="right") - 1
        chosen = np.clip(chosen, first, np.maximum(first, last - 1))
        has_mass = (high > low) & (last > first)
        fine_lo, fine_hi = fine[chosen], fine[np.minimum(chosen + 1, fine.size - 1)]
        if not self.integer:  # a peak among (nearly) empty fine cells is a heaped value:
            point = _isolated(mass)[chosen]  # its values sit on one point, most likely the
            roundest = self._heap_point(fine_lo[point], fine_hi[point])  # roundest inside
            fine_lo[point], fine_hi[point] = roundest, roundest
        return np.where(has_mass, fine_lo, lo), np.where(has_mass, fine_hi, hi)

    def _heap_point(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """The roundest number of each interior fine cell [lo, hi) that :meth:`assign` puts
        back into the same cell: at least ``lo``, below ``hi`` (a value on an edge belongs to
        the cell above it) and strictly between the bounds. A bound is a point cell of its
        own, so a heap in the fine cell next to it is NOT on it: decoding it onto the bound
        (0 for spending shares crowded just above 0) would move its values out of their
        cell and into the bound's."""
        return _roundest(lo, np.minimum(hi, self.upper), strictly_above=lo <= self.lower)


PEAK_RATIO = 4.0  # a fine cell with this many times its neighbours' mass is a heaped value


def _isolated(mass: np.ndarray) -> np.ndarray:
    """Fine cells with mass at least PEAK_RATIO times each neighbour's (0 beyond the ends)."""
    mass = np.clip(mass, 0.0, None)
    left = np.concatenate([[0.0], mass[:-1]])
    right = np.concatenate([mass[1:], [0.0]])
    return (mass > 0) & (mass >= PEAK_RATIO * left) & (mass >= PEAK_RATIO * right)


def _roundest(
    lo: np.ndarray, hi: np.ndarray, strictly_above: np.ndarray | bool = False
) -> np.ndarray:
    """The number with the fewest decimals in each half-open [lo, hi), or (lo, hi) where
    ``strictly_above`` (a multiple of the coarsest power of ten, from 10**6 down to 10**-6,
    that has one there; else the middle). Half-open because cells are: a number on ``hi``
    is assigned to the next cell."""
    out = (lo + hi) / 2.0
    above = np.broadcast_to(np.asarray(strictly_above, dtype=bool), lo.shape)
    found = np.zeros(lo.shape, dtype=bool)
    for exponent in range(6, -7, -1):
        step = 10.0**exponent
        candidate = np.maximum(np.ceil(lo / step - 1e-9) * step, lo)  # lo: a rounding below it
        candidate = np.where(above & (candidate <= lo), candidate + step, candidate)
        fits = ~found & (candidate < hi)
        out[fits], found = candidate[fits], found | fits
    return out


def numeric_bins(column: Column, n_bins: int) -> NumericBins:
    """The public cells of ``column`` (bounds must be known: declared or DP-estimated)."""
    if column.lower is None or column.upper is None:
        raise ValueError(f"column '{column.name}' has no bounds yet; complete the schema first")
    if n_bins < 3:
        raise ValueError(f"n_bins must be >= 3, got {n_bins}")
    lower, upper = float(column.lower), float(column.upper)
    integer = column.type in WHOLE_TYPES
    empty = np.zeros(0)
    if integer and upper - lower + 1 <= 2 * n_bins:
        values = np.arange(math.ceil(lower), math.floor(upper) + 1, dtype=np.float64)
        return NumericBins(column.name, lower, upper, True, empty, values)
    edges = _interior_edges(lower, upper, n_bins - 2)
    if integer:
        edges = _half_integer_edges(edges, lower, upper)
    return NumericBins(column.name, lower, upper, integer, edges, empty)


def _half_integer_edges(edges: np.ndarray, lower: float, upper: float) -> np.ndarray:
    """Integer columns: edges moved to the nearest k + 1/2 inside (lower, upper), duplicates
    dropped, so every interior cell holds at least one whole number and assignment and
    decoding agree on which cell a whole number belongs to."""
    inner = np.unique(np.floor(edges[1:-1]) + 0.5)
    inner = inner[(inner > lower + 0.5) & (inner < upper - 0.5)]
    return np.concatenate([[lower + 0.5], inner, [upper - 0.5]])


def _interior_edges(lower: float, upper: float, cells: int) -> np.ndarray:
    """``cells + 1`` edges from ``lower`` to ``upper``, log-spaced for wide ranges."""
    if lower >= 0 and (1.0 + upper) / (1.0 + lower) >= LOG_SCALE_RATIO:
        edges = np.expm1(np.linspace(math.log1p(lower), math.log1p(upper), cells + 1))
        edges[0], edges[-1] = lower, upper
        return edges
    return np.linspace(lower, upper, cells + 1)
