"""Encode a checked table into the generator's space and back, using public metadata only.

Continuous and integer columns are scaled by their public bounds to [-1, 1] (a tanh head), or,
with ``n_bins``, become a one-hot block over public cells (:mod:`dpforge.statistics.bins`; a
softmax head whose marginals can be measured and matched); each categorical column becomes a
one-hot block (its own softmax head). The encoder describes
these heads as :class:`Span` objects so that networks never need to know column types.
The label column is not part of the features: it is the condition, returned as class indices.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from dpforge.errors import SchemaError, private
from dpforge.schema.table import Column, Schema
from dpforge.statistics.bins import NumericBins, numeric_bins

TANH = "tanh"
SOFTMAX = "softmax"


@dataclass(frozen=True)
class Span:
    """A block of the generator's output: ``dim`` units from ``start`` with one activation."""

    column: str
    start: int
    dim: int
    activation: str

    @property
    def stop(self) -> int:
        return self.start + self.dim


@dataclass(frozen=True)
class Layout:
    """What a generator produces: encoded table rows (``spans``, kind "table") or arrays of
    ``shape`` (kinds "image" and "timeseries")."""

    kind: str
    spans: tuple[Span, ...] = ()
    shape: tuple[int, ...] = ()

    @property
    def data_dim(self) -> int:
        return self.spans[-1].stop if self.spans else 0


class TableEncoder:
    """Maps a validated table (see ``dpforge.data.tables.validate_table``) to arrays and back."""

    def __init__(
        self,
        schema: Schema,
        n_bins: int | None = None,
        cells: dict[str, NumericBins] | None = None,
    ) -> None:
        incomplete = [c.name for c in schema.incomplete_columns]
        if incomplete:
            raise SchemaError(
                f"columns {incomplete} have no public bounds/categories yet; estimate them "
                "with DP first (dpforge.statistics.metadata) or declare them in the schema"
            )
        self.schema = schema
        self.n_bins = n_bins
        self.bins = {
            c.name: numeric_bins(c, n_bins)
            for c in schema.feature_columns
            if c.is_numeric and n_bins is not None
        }
        self.placed_cells = dict(cells or {})  # cells that follow the data (DP-placed)
        self.bins.update(self.placed_cells)
        self.spans = self._make_spans(schema.feature_columns, self.bins)
        label = schema.label_column
        self.label_classes: tuple[str, ...] = () if label is None else label.categories

    @staticmethod
    def _make_spans(columns: tuple[Column, ...], bins: dict[str, NumericBins]) -> tuple[Span, ...]:
        spans, start = [], 0
        for column in columns:
            if column.name in bins:
                span = Span(column.name, start, bins[column.name].size, SOFTMAX)
            elif column.is_numeric:
                span = Span(column.name, start, 1, TANH)
            else:
                span = Span(column.name, start, len(column.categories), SOFTMAX)
            spans.append(span)
            start = span.stop
        return tuple(spans)

    @property
    def layout(self) -> Layout:
        """What the generator produces for this table (see ``dpforge.nets.families``)."""
        return Layout("table", spans=self.spans)

    @property
    def output_dim(self) -> int:
        return self.spans[-1].stop if self.spans else 0

    @property
    def n_classes(self) -> int:
        return len(self.label_classes)

    # -- forward ---------------------------------------------------------------------------
    def transform(self, table: pd.DataFrame) -> tuple[np.ndarray, np.ndarray | None]:
        """Features in float64 (n, output_dim) and label indices (n,) or None."""
        features = np.zeros((len(table), self.output_dim), dtype=np.float64)
        for span in self.spans:
            column = self.schema.column(span.column)
            values = table[column.name].to_numpy()
            if column.name in self.bins:
                cells = self.bins[column.name].assign(values.astype(np.float64))
                features[np.arange(len(table)), span.start + cells] = 1.0
            elif column.is_numeric:
                features[:, span.start] = _scale(values.astype(np.float64), column)
            else:
                features[:, span.start : span.stop] = _one_hot(values, column.categories, column)
        return features, self._labels(table)

    def _labels(self, table: pd.DataFrame) -> np.ndarray | None:
        label = self.schema.label_column
        if label is None:
            return None
        return _indices(table[label.name].to_numpy(), label.categories, label)

    # -- inverse ---------------------------------------------------------------------------
    def inverse_transform(
        self,
        features: np.ndarray,
        labels: np.ndarray | None,
        rng: np.random.Generator | None = None,
    ) -> pd.DataFrame:
        """Decode generator outputs (any real values) into a table of the schema's columns.

        Softmax blocks give a category (or numeric cell) per row: drawn from the row's
        probabilities with ``rng``, else the most probable one. A numeric cell becomes a value
        drawn inside it (``rng``, else a fixed public generator).
        """
        features = np.asarray(features, dtype=np.float64)
        decoded: dict[str, object] = {}
        for span in self.spans:
            column = self.schema.column(span.column)
            block = features[:, span.start : span.stop]
            if column.name in self.bins:
                cells = _pick(block, rng)
                decoded[column.name] = self.bins[column.name].decode(
                    cells, rng or np.random.default_rng(0)
                )
            elif column.is_numeric:
                decoded[column.name] = _unscale(block[:, 0], column)
            else:
                decoded[column.name] = np.asarray(column.categories, dtype=object)[
                    _pick(block, rng)
                ]
        label = self.schema.label_column
        if label is not None:
            decoded[label.name] = np.asarray(label.categories, dtype=object)[labels]
        return pd.DataFrame(decoded, columns=self.schema.names)


def _pick(block: np.ndarray, rng: np.random.Generator | None) -> np.ndarray:
    """Per row, a draw from the (renormalised, non-negative) probabilities, or the argmax."""
    if rng is None:
        return block.argmax(axis=1)
    probs = np.clip(block, 0.0, None)
    cumulative = np.cumsum(probs, axis=1)
    totals = cumulative[:, -1:]
    draws = rng.random((block.shape[0], 1)) * totals
    picked = (cumulative <= draws).sum(axis=1)
    picked = np.minimum(picked, block.shape[1] - 1)
    return np.where(totals[:, 0] > 0, picked, block.argmax(axis=1))


def _scale(values: np.ndarray, column: Column) -> np.ndarray:
    """Values clipped to the public bounds, scaled to [-1, 1].

    Nothing is reported about the clipping: how many values, or which columns, had values
    outside the bounds depends on the private records (issue 13.4). The synthesizer says once,
    from public settings only, that values outside the bounds are clipped.
    """
    values = np.clip(values, column.lower, column.upper)
    return 2.0 * (values - column.lower) / (column.upper - column.lower) - 1.0


def _unscale(scaled: np.ndarray, column: Column) -> np.ndarray:
    scaled = np.clip(scaled, -1.0, 1.0)
    values = column.lower + (scaled + 1.0) / 2.0 * (column.upper - column.lower)
    if column.type == "integer":
        return np.clip(np.rint(values), column.lower, column.upper).astype(np.int64)
    return values


def _indices(values: np.ndarray, categories: tuple[str, ...], column: Column) -> np.ndarray:
    lookup = {c: i for i, c in enumerate(categories)}
    try:
        return np.fromiter((lookup[v] for v in values), dtype=np.int64, count=len(values))
    except KeyError as exc:
        raise SchemaError(
            f"column '{column.name}': category {private(exc.args[0], 'r')} is not in the schema"
        ) from None


def _one_hot(values: np.ndarray, categories: tuple[str, ...], column: Column) -> np.ndarray:
    out = np.zeros((len(values), len(categories)), dtype=np.float64)
    out[np.arange(len(values)), _indices(values, categories, column)] = 1.0
    return out
