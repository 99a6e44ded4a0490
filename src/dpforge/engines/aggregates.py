"""The aggregate seam: exact aggregates of a table that an engine computes where the records are.

Every measurement of the default table path reads the records only through an exact aggregate
(design.md section 3): a count of records per cell of a public grid (the DP bounds' histograms,
the fine histograms that place the numeric cells, the label counts), a count per distinct value
(the DP categories) and count tables of one or two encoded columns (the marginals, the pair
scores, the selected pairs). The in-process path computes them from a pandas DataFrame as it
always did; an engine whose records live elsewhere (Spark) hands the statistics a
:class:`TableAggregates` instead, and each statistic asks it for the aggregate it needs. Only
these small tables reach the driver; the mechanism adds noise to them there, once.

A cell is given by a *public* function of the values (``assign``: a NumPy array of one column's
values to integer cell indices, negative for "counted nowhere"): the engine runs that same
function on its part of the records, so both paths count exactly the same cells. The rules the
statistics use are small describable objects (:class:`CellRule`), so that an engine whose
records sit behind a network (federated sites) can send them as data, never as code.

Noise at the source. An engine whose records belong to parties that do not trust the driver
(federated sites, :mod:`dpforge.engines.federated`) never hands out an exact aggregate: its
:class:`NoisyColumn` and :class:`NoisyCells` take each release's noise std with the query and
answer with the noisy sum, the noise added where the records are. Their ``noise_factor`` says
how much larger the released noise is than the std asked for (the sum of independent local
noises), so that the free post-processing reads the noisy counts at the right scale.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpforge.errors import PrivacyError

__all__ = [
    "Assign",
    "CellRule",
    "CellTable",
    "ColumnAggregates",
    "EdgeCells",
    "FineCells",
    "ListedCells",
    "NoisyCells",
    "NoisyColumn",
    "TableAggregates",
    "noise_factor",
    "noised_at_source",
]

Assign = Callable[[np.ndarray], np.ndarray]


class ColumnAggregates(ABC):
    """Exact aggregates of one validated column (never released without noise)."""

    @abstractmethod
    def bincount(self, assign: Assign, size: int) -> np.ndarray:
        """Records per cell ``0 .. size - 1`` (float64), the cell of a value being
        ``assign(values)``; values assigned a negative cell are counted nowhere."""

    @abstractmethod
    def value_counts(self) -> tuple[list[str], np.ndarray]:
        """The distinct values as text, sorted, with their record counts (float64)."""


class CellTable(ABC):
    """The records' cell indices on an encoder's cells (one integer column per softmax span and
    the label), from which count tables of one or two columns are read."""

    @abstractmethod
    def counts(self, marginals: Sequence[tuple[str, ...]]) -> list[np.ndarray]:
        """The exact count table (float64, shape ``(size_a,)`` or ``(size_a, size_b)``) of each
        marginal of one or two columns, computed together."""


class TableAggregates(ABC):
    """The validated records of one table, kept by an engine that computes their aggregates.
    ``adds_noise`` is True for an engine whose parties add each release's noise where the
    records are (federated sites); an engine that counts exactly (Spark) leaves it False, and
    the driver draws the noise as in memory."""

    adds_noise: bool = False

    @abstractmethod
    def validated(
        self, schema: Any, out_of_bounds: str, unit: str | None = None
    ) -> TableAggregates:
        """Every record checked against ``schema`` (``validate_table``'s rules), typed; with
        ``unit``, that column's keys (checked: none missing) are kept for :meth:`bounded`."""

    def bounded(self, rows: int, seed: int) -> TableAggregates:
        """At most ``rows`` records per key of the kept unit column, chosen at random (seeded
        by ``seed``, drawn from the run's generator); the unit column is dropped."""
        raise PrivacyError(
            f"{type(self).__name__} cannot keep at most k rows per person: fit in memory, or "
            "leave out the privacy unit"
        )

    @abstractmethod
    def released(self, schema: Any) -> TableAggregates:
        """The records whose categories were all released (``keep_released_rows``' rule)."""

    @abstractmethod
    def size(self) -> int:
        """The exact number of records (private)."""

    @abstractmethod
    def column(self, name: str) -> ColumnAggregates:
        """The aggregates of one column."""

    @abstractmethod
    def cells(self, encoder: Any, label_name: str | None) -> CellTable:
        """The records' cell indices on ``encoder``'s softmax spans (and the label's)."""


def dense_counts(cells: np.ndarray, counts: np.ndarray, size: int) -> np.ndarray:
    """A dense float64 vector of ``size`` from sparse (cell, count) pairs."""
    out = np.zeros(size, dtype=np.float64)
    np.add.at(out, np.asarray(cells, dtype=np.int64), np.asarray(counts, dtype=np.float64))
    return out


# --------------------------------------------------------------------- describable cell rules


class CellRule(ABC):
    """A public function of one column's values to integer cells (negative: counted nowhere)
    that can be written as data (``to_dict``) and rebuilt where the records are."""

    @abstractmethod
    def __call__(self, values: np.ndarray) -> np.ndarray: ...

    @abstractmethod
    def to_dict(self) -> dict[str, Any]: ...


@dataclass(frozen=True)
class EdgeCells(CellRule):
    """Cell ``i`` holds the values in ``[edges[i], edges[i + 1])``; values outside go to the
    end cells (the DP bounds' histograms); an empty cell (NaN) is counted nowhere, as the
    in-memory path leaves it out."""

    edges: tuple[float, ...]

    def __call__(self, values: np.ndarray) -> np.ndarray:
        edges = np.asarray(self.edges, dtype=np.float64)
        values = np.asarray(values, dtype=float)
        index = np.clip(np.searchsorted(edges, values, side="right") - 1, 0, len(edges) - 2)
        return np.where(np.isnan(values), -1, index)

    def to_dict(self) -> dict[str, Any]:
        return {"rule": "edges", "edges": [float(e) for e in self.edges]}


@dataclass(frozen=True)
class ListedCells(CellRule):
    """The index of each value in a public list (compared as given), -1 for any other."""

    values: tuple[Any, ...]

    def __call__(self, values: np.ndarray) -> np.ndarray:
        import pandas as pd

        listed = pd.Index(list(self.values), dtype=object)
        return listed.get_indexer(np.asarray(values, dtype=object).ravel())

    def to_dict(self) -> dict[str, Any]:
        return {"rule": "listed", "values": [str(v) for v in self.values]}


@dataclass(frozen=True)
class FineCells(CellRule):
    """A numeric column's fine public grid (``statistics.cells``), an empty cell (NaN) in the
    last cell, apart. ``column`` is the column's schema entry (``Column.to_dict``)."""

    column: Mapping[str, Any]
    cells: int

    def __call__(self, values: np.ndarray) -> np.ndarray:
        from dpforge.schema.table import Column
        from dpforge.statistics.bins import numeric_bins

        fine = numeric_bins(Column.from_dict(dict(self.column)), self.cells)
        values = np.asarray(values, dtype=np.float64)
        empty = np.isnan(values)
        return np.where(empty, fine.size, fine.assign(np.where(empty, fine.lower, values)))

    def to_dict(self) -> dict[str, Any]:
        return {"rule": "fine", "column": dict(self.column), "cells": int(self.cells)}


def rule_from_dict(d: Mapping[str, Any]) -> CellRule:
    """A cell rule from its ``to_dict``; anything else is refused."""
    kind = d.get("rule")
    if kind == "edges":
        return EdgeCells(tuple(float(e) for e in d["edges"]))
    if kind == "listed":
        return ListedCells(tuple(str(v) for v in d["values"]))
    if kind == "fine":
        return FineCells(dict(d["column"]), int(d["cells"]))
    raise ValueError(f"unknown cell rule {kind!r}: expected edges, listed or fine")


# --------------------------------------------------------------------- noise at the source


def noise_factor(records: Any) -> float:
    """How much larger than asked the noise of ``records``' releases is (1: added once)."""
    return float(getattr(records, "noise_factor", 1.0)) if noised_at_source(records) else 1.0


def noised_at_source(records: Any) -> bool:
    """Whether ``records``' engine adds each release's noise where the records are (its
    releases are then sums of continuous Gaussian shares, recorded as zCDP)."""
    if isinstance(records, TableAggregates):
        return records.adds_noise
    return isinstance(records, NoisyColumn | NoisyCells)


class NoisyColumn(ColumnAggregates):
    """A column whose engine adds each release's noise where the records are: it answers only
    noisy queries, and its exact aggregates are refused."""

    noise_factor: float = 1.0

    def bincount(self, assign: Assign, size: int) -> np.ndarray:
        raise PrivacyError(f"{type(self).__name__} releases no exact count (noise at source)")

    def value_counts(self) -> tuple[list[str], np.ndarray]:
        raise PrivacyError(f"{type(self).__name__} releases no exact count (noise at source)")

    @abstractmethod
    def noisy_bincount(self, rule: CellRule, size: int, std: float) -> np.ndarray:
        """Records per cell of ``rule`` (one record: one cell, by 1), with N(0, std^2) noise
        (scaled by ``noise_factor``) added where the records are."""

    @abstractmethod
    def frequent_values(self, std: float, threshold: float) -> list[str]:
        """The values whose count with N(0, std^2) noise reaches ``threshold`` (the DP
        categories' thresholded histogram, run where the records are), sorted."""


class NoisyCells(CellTable):
    """Cell indices kept where the records are: count tables and pair scores only with noise."""

    noise_factor: float = 1.0

    def counts(self, marginals: Sequence[tuple[str, ...]]) -> list[np.ndarray]:
        raise PrivacyError(f"{type(self).__name__} releases no exact count (noise at source)")

    @abstractmethod
    def noisy_counts(self, marginals: Sequence[tuple[str, ...]], std: float) -> list[np.ndarray]:
        """The count table of each marginal, N(0, std^2) noise on every cell."""

    @abstractmethod
    def noisy_scores(self, model: Mapping[tuple[str, str], np.ndarray], std: float) -> np.ndarray:
        """Each pair's score against ``model`` (``statistics.selection``), noised for scores
        of sensitivity 1 at ``std`` (an engine whose score is more sensitive scales it)."""
