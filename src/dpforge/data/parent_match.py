"""Giving generated child rows to generated parents: each parent takes, from a pool of child
rows drawn jointly with parent columns, the unused rows whose parent columns are nearest its own.

Everything here reads generated rows only (post-processing, free): the parents sampled from the
parent model and the joined rows sampled from a child model. Columns are compared on a common
scale: a numeric column divided by its public range (the fitted schema's bounds), a
categorical one as one-hot cells; a missing value is a cell of its own.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from dpforge.schema.table import Column

__all__ = ["assign_to_parents"]


def _features(frame: pd.DataFrame, columns: list[tuple[str, Column]]) -> np.ndarray:
    """The compared columns of ``frame`` on one scale."""
    parts = []
    for name, column in columns:
        values = frame[name]
        if column.is_numeric and not column.is_time:
            numbers = pd.to_numeric(values, errors="coerce").to_numpy(dtype=np.float64)
            span = (column.upper - column.lower) or 1.0
            missing = np.isnan(numbers)
            parts += [np.where(missing, 0.0, (numbers - column.lower) / span), missing * 1.0]
        else:
            texts = values.astype(object).where(values.notna(), "\0missing").astype(str)
            parts.append(pd.get_dummies(texts).to_numpy(dtype=np.float64))
    return np.column_stack(parts) if parts else np.zeros((len(frame), 0))


def assign_to_parents(
    parents: pd.DataFrame,
    pool: pd.DataFrame,
    columns: list[tuple[str, str, Column]],
    counts: np.ndarray,
    rng: np.random.Generator,
) -> np.ndarray:
    """For each pool row, the parent it is given to (-1: unused). Parent ``i`` takes
    ``counts[i]`` rows, parents in random order, each the nearest unused rows by the compared
    ``columns`` (parent name, its name in the pool, its public column). The pool must hold at
    least ``counts.sum()`` rows."""
    if len(pool) < counts.sum():
        raise ValueError(f"the pool holds {len(pool)} rows for {counts.sum()} children")
    both = pd.concat(
        [
            parents[[p for p, _, _ in columns]].set_axis([p for p, _, _ in columns], axis=1),
            pool[[j for _, j, _ in columns]].set_axis([p for p, _, _ in columns], axis=1),
        ],
        ignore_index=True,
    )
    features = _features(both, [(p, c) for p, _, c in columns])
    mine, theirs = features[: len(parents)], features[len(parents) :]
    owner = np.full(len(pool), -1, dtype=np.int64)
    free = np.ones(len(pool), dtype=bool)
    for i in rng.permutation(len(parents)):
        c = int(counts[i])
        if c == 0:
            continue
        distance = np.where(free, ((theirs - mine[i]) ** 2).sum(axis=1), np.inf)
        distance += rng.random(len(pool)) * 1e-9  # ties broken at random
        nearest = np.argpartition(distance, c - 1)[:c]
        owner[nearest], free[nearest] = i, False
    return owner
