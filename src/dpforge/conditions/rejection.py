"""Samples that meet conditions on any columns, drawn from the model's own conditional.

A condition on one class of the label is met by the generator's label input (exact: the
generator models each class). Every other condition is met by rejection: rows are drawn from
the model in batches (matched to the stored marginals first, when the model matches, so that the
kept rows follow the matched model's conditional), those that meet every condition are kept,
and drawing stops when enough are kept. The first batch estimates the share of rows that meet
the conditions; when the expected number of draws passes the public cap
(:func:`draw_cap`), sampling stops with that share and a suggestion to widen the conditions.
Post-processing of the released model: no record is read, nothing is charged.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import pandas as pd
import torch

from dpforge.conditions.resolve import ResolvedConditions, resolve_conditions
from dpforge.errors import DataError
from dpforge.generate import SAMPLE_CHUNK_ROWS, FittedModel, sample_batch, sample_chunks

DRAWS_PER_ROW = 100  # the cap on rows drawn per row asked for ...
MIN_CAP = 1_000_000  # ... and never below this many in all
FIRST_BATCH = 4_096  # at least this many rows estimate the share that meets the conditions
ZERO_BOUND = 3.0  # no kept row in m draws: the share is below about 3 / m (95 %, rule of three)


def draw_cap(n: int) -> int:
    """The most rows drawn to keep ``n`` rows that meet the conditions (public)."""
    return max(MIN_CAP, DRAWS_PER_ROW * n)


def conditioned_batch(
    model: FittedModel, n: int, conditions: Any, generator: torch.Generator, mover: Any
) -> Any:
    """``n`` records that meet ``conditions`` (see :func:`resolve_conditions`); ``mover`` as
    in :func:`dpforge.generate.sample_batch`. A condition on the label alone gives the same
    records as :func:`dpforge.generate.sample_batch` with it."""
    resolved = resolve_conditions(model.schema, conditions)
    if not resolved.rows:
        return sample_batch(model, n, resolved.label, generator, mover)
    return _Rejection(model, resolved, n, generator, mover).take(n)


def conditioned_chunks(
    model: FittedModel,
    n: int,
    conditions: Any,
    generator: torch.Generator,
    mover: Any,
    chunk_rows: int = SAMPLE_CHUNK_ROWS,
) -> Iterator[Any]:
    """:func:`conditioned_batch` as consecutive chunks of at most ``chunk_rows`` records, one
    random stream through them (the same seed and chunk size give the same records)."""
    resolved = resolve_conditions(model.schema, conditions)
    if not resolved.rows:
        yield from sample_chunks(model, n, resolved.label, generator, mover, chunk_rows)
        return
    rejection = _Rejection(model, resolved, n, generator, mover)
    for start in range(0, n, chunk_rows):
        yield rejection.take(min(chunk_rows, n - start))


class _Rejection:
    """Kept rows of the model's batches, handed out ``take`` by ``take`` for ``n`` in all."""

    def __init__(
        self,
        model: FittedModel,
        resolved: ResolvedConditions,
        n: int,
        generator: torch.Generator,
        mover: Any,
    ) -> None:
        self.model, self.resolved, self.n = model, resolved, n
        self.generator, self.mover = generator, mover
        self.cap, self.drawn, self.met, self.handed = draw_cap(n), 0, 0, 0
        self.kept: list[pd.DataFrame] = []

    def take(self, k: int) -> pd.DataFrame:
        """The next ``k`` kept rows (drawing batches until they are there)."""
        while sum(len(part) for part in self.kept) < k:
            self._draw()
        rows = pd.concat([part for part in self.kept if len(part)], ignore_index=True)
        self.kept = [rows.iloc[k:].reset_index(drop=True)]
        self.handed += k
        return rows.iloc[:k].reset_index(drop=True)

    def _draw(self) -> None:
        """One batch from the model; its rows that meet every condition are kept."""
        size = self._batch_size()
        rows = sample_batch(self.model, size, self.resolved.label, self.generator, self.mover)
        met = self.resolved.met(rows)
        self.drawn += size
        self.met += int(met.sum())
        if met.any():
            self.kept.append(rows[met].reset_index(drop=True))
        self._check_reachable()

    def _missing(self) -> int:
        """Rows still to keep for the whole request."""
        return self.n - self.handed - sum(len(part) for part in self.kept)

    def _share(self) -> float:
        """The share of drawn rows that met the conditions (an upper bound when none did)."""
        return (self.met if self.met else ZERO_BOUND) / self.drawn

    def _batch_size(self) -> int:
        """The first batch: at least FIRST_BATCH rows; then about what the missing rows need."""
        if not self.drawn:
            wanted = max(FIRST_BATCH, 2 * self.n)
        else:
            wanted = math.ceil(1.25 * self._missing() / self._share())
        room = self.cap - self.drawn
        return max(1, min(wanted, SAMPLE_CHUNK_ROWS, room))

    def _check_reachable(self) -> None:
        """Refuse, with the share met, when the request would take more draws than the cap."""
        missing = self._missing()
        if missing <= 0:
            return
        expected = self.drawn + missing / self._share()
        if expected <= self.cap and self.drawn < self.cap:
            return
        raise DataError(self._too_rare(missing, expected))

    def _too_rare(self, missing: int, expected: float) -> str:
        """The refusal: the conditions, the share of the model's rows that meets them, the
        draws they would take against the cap, and what to change (all of it public: the
        model's samples, not the data)."""
        share = self._share()
        seen = (
            f"about {share:.3%} of the model's rows meet them ({self.met:,} of {self.drawn:,} "
            "drawn)"
            if self.met
            else f"none of the {self.drawn:,} rows drawn met them (under {share:.3%} do)"
        )
        return (
            f"the conditions {self.resolved.shown} are too rare to sample {self.n:,} rows: "
            f"{seen}, so {missing:,} more rows would take {'about' if self.met else 'at least'} "
            f"{expected:,.0f} draws, more "
            f"than the cap of {self.cap:,} ({DRAWS_PER_ROW} per row asked for, at least "
            f"{MIN_CAP:,}); widen the conditions (a longer range, more values, fewer columns) "
            "or ask for fewer rows"
        )
