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
function on its part of the records, so both paths count exactly the same cells.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from dpforge.errors import PrivacyError

__all__ = ["Assign", "CellTable", "ColumnAggregates", "TableAggregates"]

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
    """The validated records of one table, kept by an engine that computes their aggregates."""

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
