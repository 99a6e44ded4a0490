"""A bound is an atom only where the released counts say that it is one (issue 46.3).

Every binned numeric column has a point cell at each bound (:mod:`dpforge.statistics.bins`):
values clipped to a bound, zero-inflated amounts and top codes sit there. Under generous
declared bounds (ages from 0, a body mass up to 10,000 g) no record is on either bound, but
the bound's noisy counts are positive half of the time, the projection onto the simplex keeps
what stands above its common shift, and the generator learns that mass as an atom: 29 % of
one table's ages came out exactly on the lower bound at epsilon 1.

Here each bound's released counts decide (free post-processing): the bound's count in the
column's noisy fine histogram (adaptive columns, :mod:`dpforge.statistics.cells`) and in
round 1's marginals, weighed by the inverse of their noise variances; a bound whose estimate
stays below ``ATOM_SNR`` of its noise standard deviations (public) is no atom; so is each
interior cell from such a bound inward whose count does not stand out either (cells placed on
noise, :func:`empty_ends`). Every marginal's cells on them are marked empty
(:attr:`MeasuredMarginal.empty`): they get no mass when the marginals are made
distributions, for the generator's loss and for sampling.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

import numpy as np

from dpforge.schema.table import Column
from dpforge.statistics.cells import cell_count_std
from dpforge.statistics.marginals import MeasuredMarginal

__all__ = [
    "ATOM_SNR",
    "bound_estimate",
    "column_empty_cells",
    "empty_ends",
    "is_atom",
    "non_atom_bounds",
    "with_empty_bounds",
]

# A bound is an atom when its estimated count stands this many noise sd above zero (public):
# a bound with no record passes with probability 0.13 % (one-sided normal tail at 3).
ATOM_SNR = 3.0


def is_atom(count: float, std: float, snr: float = ATOM_SNR) -> bool:
    """Whether a bound's released count ``count`` (noise sd ``std``) says that it holds records:
    at least ``snr`` sd; without noise, any positive count."""
    if std <= 0:
        return count > 0
    return count >= snr * std


def bound_estimate(estimates: Sequence[tuple[float, float]]) -> tuple[float, float]:
    """One count from several unbiased noisy releases of it, (count, noise sd) each: their
    inverse-variance mix and its sd (an exact one, sd 0, wins)."""
    exact = [c for c, s in estimates if s <= 0]
    if exact:
        return float(exact[0]), 0.0
    weights = np.array([1.0 / s**2 for _, s in estimates])
    counts = np.array([c for c, _ in estimates])
    return float(weights @ counts / weights.sum()), float(1.0 / np.sqrt(weights.sum()))


def non_atom_bounds(
    size: int, releases: Mapping[int, Sequence[tuple[float, float]]]
) -> tuple[int, ...]:
    """The bound cells (0 and ``size - 1``, a column's cells without its "missing" cell) that
    are no atom, from ``releases``: per bound cell, its noisy counts (count, sd)."""
    out = []
    for cell in (0, size - 1):
        if releases.get(cell) and not is_atom(*bound_estimate(releases[cell])):
            out.append(cell)
    return tuple(out)


def empty_ends(
    size: int, bounds: Sequence[int], counts: np.ndarray, stds: np.ndarray
) -> tuple[int, ...]:
    """The cells empty at each end of a column whose bound is no atom: from the bound
    (``bounds``: those of 0 and ``size - 1`` that are no atom) inward, the interior cells
    whose released ``counts`` (noise sd ``stds``, one per interior cell ``1 .. size - 2``)
    do not stand out, up to the first that does. Cells placed on a fine histogram's noise
    (a generous bound, a small table) reach from the bound to where the records start; their
    noise decoded inside them puts values far outside the records' range (flippers of 2 mm).
    Inner cells are never emptied: a cell between records is no end."""
    out = list(bounds)
    standing = [is_atom(c, s) for c, s in zip(counts, stds, strict=True)]
    if not any(standing):
        return tuple(out)
    if 0 in bounds:
        out += [k + 1 for k in range(standing.index(True))]
    if size - 1 in bounds:
        last = len(standing) - 1 - standing[::-1].index(True)
        out += [k + 1 for k in range(last + 1, len(standing))]
    return tuple(sorted(out))


def column_empty_cells(
    column: Column,
    size: int,
    fine: tuple[np.ndarray, float] | None,
    released: tuple[np.ndarray, float] | None,
    cells: tuple[np.ndarray, np.ndarray] | None,
) -> tuple[int, ...]:
    """One binned numeric column's empty cells (of its ``size`` cells, "missing" left out):
    its bounds that are no atom and, for an adaptive column, the cells from such a bound to
    the records (:func:`empty_ends`). ``fine``: its noisy fine histogram (the bounds' point
    cells first and last) and noise sd; ``released``: round 1's count of each of its cells
    and noise sd; ``cells``: an adaptive column's cell edges and interior counts
    (:func:`dpforge.statistics.cells.cell_counts`). None where not released."""
    bounds = (0, size - 1)
    releases: dict[int, list[tuple[float, float]]] = {cell: [] for cell in bounds}
    if fine is not None:  # the fine grid's point cells are its first and last
        for cell, count in zip(bounds, (fine[0][0], fine[0][-1]), strict=True):
            releases[cell].append((float(count), fine[1]))
    if released is not None:
        for cell in bounds:
            releases[cell].append((float(released[0][cell]), released[1]))
    empty = non_atom_bounds(size, releases)
    if empty and cells is not None and fine is not None:
        edges, counts = cells
        stds = cell_count_std(column, edges, fine[1], released and released[1])
        empty = empty_ends(size, empty, counts, stds)
    return empty


def with_empty_bounds(
    marginals: Sequence[MeasuredMarginal], empty: Mapping[str, Sequence[int]]
) -> list[MeasuredMarginal]:
    """``marginals`` with every cell on an ``empty`` cell of one of its columns (per column
    name, its own cell indices) marked empty."""
    out = []
    for m in marginals:
        mask = np.zeros(m.shape, dtype=bool)
        for axis, name in enumerate(m.columns):
            cells = [c for c in empty.get(name, ()) if c < m.shape[axis]]
            if cells:
                index = [slice(None)] * len(m.shape)
                index[axis] = cells
                mask[tuple(index)] = True
        flat = tuple(int(i) for i in np.flatnonzero(mask))
        out.append(replace(m, empty=tuple(sorted(set(m.empty) | set(flat)))) if flat else m)
    return out
