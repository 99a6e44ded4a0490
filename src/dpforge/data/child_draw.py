"""Children for generated parents, drawn from a child model conditioned on each parent's cells.

A child model is fitted on the child joined with its parent's columns, so its rows are draws of
(child, parent columns). A generated parent's children are that model's rows whose parent
columns fall in the parent's own cells: the model's conditional given the parent, met by
rejection (:mod:`dpforge.conditions.rejection` does the same for one condition), here for every
parent at once. Parents are grouped by their cells; batches are drawn from the model and each
group takes, at random, as many of the batch's rows in its cells as its parents' counts sum to.

Cells are public: a categorical column's values (a missing value is a cell of its own); a
numeric column's ``CONDITION_CELLS`` equal-width cells between the child model's bounds
(declared or DP-estimated), :func:`dpforge.statistics.bins.numeric_bins`. The conditioning
columns come in a public order (the parent's label first, then its other columns as the schema
lists them). Where the model does not reach a group's cells within ``DRAWS_PER_CHILD`` rows
drawn per child still missing, the group's remaining children are conditioned on one column
fewer (the last of the order), with new draws again, down to none: every parent gets its
count, conditioned on as many leading columns as the model reaches.

Post-processing of released models only: the parents sampled from the parent model and the
rows sampled from the child model. Nothing is read from the records, nothing is charged.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from dpforge.schema.table import Column
from dpforge.statistics.bins import numeric_bins

__all__ = [
    "CONDITION_CELLS",
    "DRAWS_PER_CHILD",
    "Conditioning",
    "conditioned_children",
    "most_draws",
    "stream_draw",
]

CONDITION_CELLS = 6  # per numeric column: two bound cells and four between
DRAWS_PER_CHILD = 4  # per level, rows drawn per child still missing before widening
MISSING = "\0missing"

Draw = Callable[[int], pd.DataFrame]  # n rows of the child model (child and parent columns)


def most_draws(total: int, levels: int) -> int:
    """The most rows :func:`conditioned_children` draws for ``total`` children conditioned on
    ``levels`` columns: ``DRAWS_PER_CHILD`` per child at each level, one per child at none."""
    return total * (DRAWS_PER_CHILD * levels + 1)


def stream_draw(chunks: Iterator[pd.DataFrame]) -> Draw:
    """A :data:`Draw` that hands out the rows of one stream of model chunks in order (a
    model's ``sample_chunks``: its matching to the stored marginals is fitted once, at the
    first chunk, rather than once per batch)."""
    left = [pd.DataFrame()]

    def draw(n: int) -> pd.DataFrame:
        parts, have = [left[0]], len(left[0])
        while have < n:
            chunk = next(chunks).reset_index(drop=True)
            parts.append(chunk)
            have += len(chunk)
        rows = pd.concat(parts, ignore_index=True)
        left[0] = rows.iloc[n:].reset_index(drop=True)
        return rows.iloc[:n].reset_index(drop=True)

    return draw


@dataclass(frozen=True)
class Conditioning:
    """One parent column the children are conditioned on: its name among the parent rows, its
    name among the child model's rows, and the child model's (public) column."""

    parent: str
    joined: str
    column: Column


def _codes(parents: pd.Series, rows: pd.Series, column: Column) -> tuple[np.ndarray, np.ndarray]:
    """The cell of each parent's value and of each row's value, as integer codes."""
    if column.is_numeric and not column.is_time:
        bins = numeric_bins(column, CONDITION_CELLS)

        def cells(values: pd.Series) -> np.ndarray:
            numbers = pd.to_numeric(values, errors="coerce").to_numpy(dtype=np.float64)
            missing = np.isnan(numbers)
            return np.where(missing, bins.size, bins.assign(np.where(missing, 0, numbers)))

        return cells(parents), cells(rows)
    texts = [v.astype(object).where(v.notna(), MISSING).astype(str) for v in (parents, rows)]
    codes, _ = pd.factorize(pd.concat(texts, ignore_index=True))
    return codes[: len(parents)], codes[len(parents) :]


def _cell_matrix(
    parents: pd.DataFrame, rows: pd.DataFrame, conditioning: Sequence[Conditioning]
) -> tuple[np.ndarray, np.ndarray]:
    """Per parent and per row, the code of each conditioning column (one column each)."""
    mine = np.zeros((len(parents), len(conditioning)), dtype=np.int64)
    theirs = np.zeros((len(rows), len(conditioning)), dtype=np.int64)
    for j, c in enumerate(conditioning):
        mine[:, j], theirs[:, j] = _codes(parents[c.parent], rows[c.joined], c.column)
    return mine, theirs


def _keys(mine: np.ndarray, theirs: np.ndarray, level: int) -> tuple[np.ndarray, np.ndarray]:
    """One integer per parent and per row: its cells on the first ``level`` columns."""
    both = np.concatenate([mine[:, :level], theirs[:, :level]])
    keys = np.zeros(len(both), dtype=np.int64)
    for j in range(level):  # kept compact: at most as many keys as rows
        keys = pd.factorize(keys * (int(both[:, j].max()) + 1) + both[:, j])[0].astype(np.int64)
    return keys[: len(mine)], keys[len(mine) :]


def _ranked(keys: np.ndarray, order: np.ndarray) -> pd.DataFrame:
    """``order`` (indices into ``keys``) with each one's key and its rank among its key."""
    frame = pd.DataFrame({"index": order, "key": keys[order]})
    frame["rank"] = frame.groupby("key", sort=False).cumcount()
    return frame


def _pair(
    slot_keys: np.ndarray, row_keys: np.ndarray, free: np.ndarray, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """(slots, rows) paired within their key: the free rows in random order, each key's
    first rows to its first slots (slots in random order too)."""
    slots = _ranked(slot_keys, rng.permutation(len(slot_keys)))
    rows = _ranked(row_keys, rng.permutation(np.flatnonzero(free)))
    paired = slots.merge(rows, on=["key", "rank"], suffixes=("_slot", "_row"))
    return paired["index_slot"].to_numpy(), paired["index_row"].to_numpy()


class _Pool:
    """The rows drawn so far, which are taken and by which parent."""

    def __init__(self, draw: Draw, parents: pd.DataFrame, conditioning: Sequence[Conditioning]):
        self.draw, self.parents, self.conditioning = draw, parents, conditioning
        self.rows = pd.DataFrame()
        self.owner = np.zeros(0, dtype=np.int64)
        self.mine = np.zeros((len(parents), len(conditioning)), dtype=np.int64)
        self.theirs = np.zeros((0, len(conditioning)), dtype=np.int64)

    def grow(self, n: int) -> None:
        """``n`` more rows from the model, untaken."""
        rows = pd.concat([self.rows, self.draw(n)], ignore_index=True)
        self.mine, self.theirs = _cell_matrix(self.parents, rows, self.conditioning)
        self.rows, self.owner = rows, np.concatenate([self.owner, np.full(n, -1)])

    def take(self, need: np.ndarray, level: int, rng: np.random.Generator) -> None:
        """Give each parent, up to its ``need``, free rows in its cells on ``level`` columns
        (``need`` is lowered in place)."""
        parent_keys, row_keys = _keys(self.mine, self.theirs, level)
        slot_parent = np.repeat(np.arange(len(need)), need)
        slots, rows = _pair(parent_keys[slot_parent], row_keys, self.owner < 0, rng)
        self.owner[rows] = slot_parent[slots]
        np.subtract.at(need, slot_parent[slots], 1)


def conditioned_children(
    parents: pd.DataFrame,
    counts: np.ndarray,
    conditioning: Sequence[Conditioning],
    draw: Draw,
    rng: np.random.Generator,
) -> tuple[pd.DataFrame, np.ndarray]:
    """(rows, owner): ``counts[i]`` rows of the child model for parent ``i`` (row ``r`` is
    parent ``owner[r]``'s), each in its parent's cells on as many leading ``conditioning``
    columns as the model reaches (see the module docstring). ``draw(n)`` gives n model rows."""
    need = np.asarray(counts, dtype=np.int64).copy()
    pool = _Pool(draw, parents.reset_index(drop=True), conditioning)
    for level in range(len(conditioning), -1, -1):
        pool.take(need, level, rng)  # rows drawn for a narrower level may fit a wider one
        room = DRAWS_PER_CHILD * int(need.sum())
        while need.sum() > 0 and room > 0:
            missing = int(need.sum())  # at level 0 every free row fits: one batch is enough
            size = missing if level == 0 else min(2 * missing, room)
            pool.grow(size)
            room -= size
            pool.take(need, level, rng)
    taken = np.flatnonzero(pool.owner >= 0)
    return pool.rows.iloc[taken].reset_index(drop=True), pool.owner[taken]
