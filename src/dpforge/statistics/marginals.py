"""Which marginals to measure, and their measurement with discrete Gaussian noise.

A marginal is the histogram of one column, or the joint histogram of two or more (the label may
be one of them), on the encoder's cells: categories, or the public numeric cells of
:mod:`dpforge.statistics.bins`. The counts are read from the encoded records, whose spans are
one-hot blocks; each is kept as its cell indices (:class:`CellColumn`), and the count table of
``(a, b, ...)`` is a ``bincount`` of the flattened index tuples.

Privacy. Neighbouring tables differ by one record (added or removed). A record adds exactly one
to one cell of every marginal, so the vector of ``k`` marginals has L2 sensitivity ``sqrt(k)``
and each cell gets discrete Gaussian noise of ``sigma * sqrt(k)``
(:mod:`dpforge.privacy.release_noise`): one moved count per marginal, recorded as ``k``
discrete Gaussians by ``release_noise.table_event``. With a privacy unit (one person, at most
``r`` rows kept: :mod:`dpforge.privacy.person`) a person adds at most ``r`` to each marginal,
at most ``r`` in L2 (all rows in one cell), so the vector has L2 sensitivity ``r * sqrt(k)``,
the noise std is ``sigma * r * sqrt(k)`` and the event the zCDP of that (the rows may fall in
several cells).
"""

from __future__ import annotations

from collections.abc import Container, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from dpforge.data.encoder import SOFTMAX, Span
from dpforge.engines.aggregates import CellTable, NoisyCells, TableAggregates, noise_factor
from dpforge.privacy.release_noise import noisy_counts
from dpforge.statistics.projection import project_to_simplex, simplex_shift

__all__ = [
    "MeasuredMarginal",
    "default_marginals",
    "measure_marginals",
    "CellColumn",
    "cell_columns",
    "indexed_cells",
    "encoded_cells",
]


@dataclass(frozen=True)
class MeasuredMarginal:
    """The noisy counts of one marginal over ``columns`` (flattened, C order, of ``shape``)."""

    columns: tuple[str, ...]
    shape: tuple[int, ...]
    noisy_counts: np.ndarray
    total: float  # the public number of records the counts are projected to
    # The public total of each row along the first column (post-processed; they sum to
    # ``total``); empty: the table is projected as a whole. Only model folders fitted with the
    # removed ``AnchorConfig.class_totals`` hold them (docs/research/anchoring-options.md).
    row_totals: tuple[float, ...] = ()
    # Flat indices of cells the released counts say are empty (a bound that is no atom,
    # :mod:`dpforge.statistics.bound_atoms`): post-processing, they get no mass.
    empty: tuple[int, ...] = ()
    # The noise standard deviation of each count (public, from the plan; 0 without noise),
    # which weights it in the consistent estimate (:mod:`dpforge.statistics.estimate`); None
    # in a model folder saved before the estimate.
    std: float | None = None

    def is_label_by(self, label: str, columns: Container[str] | None = None) -> bool:
        """Whether this is a label x column marginal (of one of ``columns``, when given)."""
        two = len(self.columns) == 2 and self.columns[0] == label
        return two and (columns is None or self.columns[1] in columns)

    def distribution(self) -> np.ndarray:
        """The projected, normalised histogram (free post-processing), of ``shape``: the
        whole table onto the simplex of ``total``, or with ``row_totals`` each row onto its
        own."""
        if not self.row_totals:
            keep = np.ones(np.size(self.noisy_counts), dtype=bool)
            keep[list(self.empty)] = False
            counts = np.zeros(keep.size)
            counts[keep] = project_to_simplex(np.asarray(self.noisy_counts)[keep], self.total)
            return counts.reshape(self.shape) / self.total
        rows = np.asarray(self.noisy_counts, dtype=np.float64).reshape(len(self.row_totals), -1)
        counts = [row_onto(r, t) for r, t in zip(rows, self.row_totals, strict=True)]
        return np.stack(counts).reshape(self.shape) / self.total

    def to_dict(self) -> dict:
        out = {
            "columns": list(self.columns),
            "shape": list(self.shape),
            "noisy_counts": [float(v) for v in self.noisy_counts],
            "total": float(self.total),
        }
        if self.row_totals:
            out["row_totals"] = [float(t) for t in self.row_totals]
        if self.empty:
            out["empty"] = [int(i) for i in self.empty]
        if self.std is not None:
            out["std"] = float(self.std)
        return out

    @classmethod
    def from_dict(cls, d: dict) -> MeasuredMarginal:
        if d.get("groups"):  # the removed label_pairs option's merged cells
            raise ValueError(
                f"marginal {d['columns']} is on merged cells (a model folder fitted with the "
                "removed label_pairs option): fit the table again"
            )
        counts = np.asarray(d["noisy_counts"], dtype=np.float64)
        shape = tuple(int(s) for s in d["shape"])
        rows = tuple(float(t) for t in d.get("row_totals", ()))
        empty = tuple(int(i) for i in d.get("empty", ()))
        std = None if d.get("std") is None else float(d["std"])
        return cls(tuple(d["columns"]), shape, counts, float(d["total"]), rows, empty, std)


def row_onto(row: np.ndarray, total: float) -> np.ndarray:
    """One noisy row made a histogram of ``total`` records (free post-processing). Where its
    positive cells hold more than ``total``, the projection onto its own simplex: the surplus
    comes from every cell alike, so the smallest (noise where the class has no records) go to
    zero first. Where they hold less, the positive cells are scaled up: adding the deficit
    evenly, as the projection would, puts records in every empty cell (it cost nmes 0.010 RF
    AUC over 10 seeds; a floor at the whole table's shift cost it more: quality_gaps.md,
    session 36)."""
    if total <= 0:
        return np.zeros(np.shape(row))
    threshold = max(0.0, simplex_shift(row, total))
    kept = np.clip(np.asarray(row, dtype=np.float64) - threshold, 0.0, None)
    if kept.sum() <= 0:
        return np.full(np.shape(row), total / np.size(row))
    return kept * (total / kept.sum())


@dataclass(frozen=True)
class CellColumn:
    """One column of the records as cell indices (0..size-1): a one-hot block, kept small."""

    index: np.ndarray
    size: int


def cell_columns(
    features: np.ndarray,
    spans: Sequence[Span],
    labels: np.ndarray | None,
    label_name: str | None,
    n_classes: int,
) -> dict[str, CellColumn]:
    """Each categorical (or binned) column's cells, and the label's, by column name.

    ``features`` are encoded rows, whose softmax spans are one-hot.
    """
    softmax = [s for s in spans if s.activation == SOFTMAX]
    picked = [features[:, s.start : s.stop].argmax(axis=1) for s in softmax]
    return indexed_cells(picked, softmax, labels, label_name, n_classes)


def indexed_cells(
    picked: Sequence[np.ndarray],
    softmax_spans: Sequence[Span],
    labels: np.ndarray | None,
    label_name: str | None,
    n_classes: int,
) -> dict[str, CellColumn]:
    """:func:`cell_columns` from each softmax span's cell indices (``picked``, in span
    order) rather than one-hot rows."""
    columns = {
        s.column: CellColumn(np.asarray(index, dtype=np.int32), s.dim)
        for s, index in zip(softmax_spans, picked, strict=True)
    }
    if label_name is not None and labels is not None:
        columns[label_name] = CellColumn(np.asarray(labels, dtype=np.int32), n_classes)
    return columns


def encoded_cells(
    encoder, records, label_name: str | None, chunk_rows: int = 50_000
) -> dict[str, CellColumn]:
    """:func:`cell_columns` of ``records``, encoded ``chunk_rows`` at a time so that the dense
    one-hot matrix of a large table never exists whole (about 8 bytes per cell per row).
    Records kept by an engine (:class:`TableAggregates`) give their engine's cell table."""
    if isinstance(records, TableAggregates):
        return records.cells(encoder, label_name)
    parts = []
    for start in range(0, len(records), chunk_rows):
        features, labels = encoder.transform(records.iloc[start : start + chunk_rows])
        parts.append(cell_columns(features, encoder.spans, labels, label_name, encoder.n_classes))
    if not parts:
        features, labels = encoder.transform(records)
        return cell_columns(features, encoder.spans, labels, label_name, encoder.n_classes)
    return {
        name: CellColumn(np.concatenate([p[name].index for p in parts]), parts[0][name].size)
        for name in parts[0]
    }


def default_marginals(spans: Sequence[Span], label_name: str | None) -> list[tuple[str, ...]]:
    """The public rule: every column's 1-way marginal and, with a label, label x each column.

    Numeric columns take part only when binned (a softmax span over public cells).
    """
    columns = [s.column for s in spans if s.activation == SOFTMAX]
    marginals: list[tuple[str, ...]] = [(c,) for c in columns]
    if label_name is not None:
        marginals += [(label_name, c) for c in columns]
    return marginals


def true_counts(cells: Mapping[str, CellColumn], columns: tuple[str, ...]) -> np.ndarray:
    """The exact (private) count table of ``columns``; never released without noise."""
    if isinstance(cells, CellTable):
        return cells.counts([columns])[0]
    indices = [cells[name].index.astype(np.int64) for name in columns]
    sizes = [cells[name].size for name in columns]
    flat = np.ravel_multi_index(indices, sizes) if len(sizes) > 1 else indices[0]
    counts = np.bincount(flat, minlength=int(np.prod(sizes))).astype(np.float64)
    return counts.reshape(sizes)


def count_tables(cells, marginals: Sequence[tuple[str, ...]]) -> list[np.ndarray]:
    """:func:`true_counts` of every marginal; an engine's cell table computes them together."""
    if isinstance(cells, CellTable):
        return cells.counts(list(marginals))
    return [true_counts(cells, c) for c in marginals]


def measure_marginals(
    blocks: Mapping[str, CellColumn],
    marginals: Sequence[tuple[str, ...]],
    noise_multiplier: float,
    rng: np.random.Generator,
    total: float,
    rows: int = 1,
) -> list[MeasuredMarginal]:
    """All ``marginals`` released at once: noise std ``noise_multiplier * rows * sqrt(k)`` per
    cell (``rows``: a person's most rows, 1 per record).

    ``total`` is the public number of records (N read, before any record of an unreleased
    category is dropped): the counts are projected to it, so no count of the data leaks in.
    """
    if not marginals:
        return []
    if noise_multiplier < 0:
        raise ValueError(f"noise multiplier must be >= 0, got {noise_multiplier}")
    std = noise_multiplier * rows * np.sqrt(len(marginals))
    carried = float(std * noise_factor(blocks))  # the noise the counts carry (public)
    if isinstance(blocks, NoisyCells):  # noised where the records are (federated sites)
        return [
            MeasuredMarginal(
                columns, noisy.shape, noisy.ravel().astype(np.float64), float(total), std=carried
            )
            for columns, noisy in zip(marginals, blocks.noisy_counts(marginals, std), strict=True)
        ]
    measured = []
    for columns, counts in zip(marginals, count_tables(blocks, marginals), strict=True):
        noisy = noisy_counts(counts.ravel(), std, rng)
        measured.append(MeasuredMarginal(columns, counts.shape, noisy, float(total), std=carried))
    return measured
