"""Encode a checked table into the generator's space and back, using public metadata only.

Continuous and integer columns are scaled by their public bounds to [-1, 1] (a tanh head), or,
with ``n_bins``, become a one-hot block over public cells (:mod:`dpforge.statistics.bins`; a
softmax head whose marginals can be measured and matched); each categorical column becomes a
one-hot block (its own softmax head). A nullable column's block has one more cell, the last,
for "missing" (a nullable numeric column is always binned, so that its block is a softmax);
identifier columns ("drop", "surrogate") and columns a schema rule sets from another
(``depends``: decoded from the rule's map) have no block at all. The encoder describes
these heads as :class:`Span` objects so that networks never need to know column types.
The label column is not part of the features: it is the condition, returned as class indices.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from dpforge.data.dates import decode_times, part_codes, time_texts
from dpforge.data.rules import dependent_values
from dpforge.errors import SchemaError, private
from dpforge.schema.dates import PARTS, part_columns, part_name, with_parts
from dpforge.schema.table import Column, Schema
from dpforge.statistics.bins import NumericBins, numeric_bins
from dpforge.statistics.codes import CodeCells

TANH = "tanh"
SOFTMAX = "softmax"
NULLABLE_BINS = 64  # public cells of a nullable numeric column when the encoder has no n_bins


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
        codes: dict[str, CodeCells] | None = None,
    ) -> None:
        incomplete = [c.name for c in schema.incomplete_columns]
        if incomplete:
            raise SchemaError(
                f"columns {incomplete} have no public bounds/categories yet; estimate them "
                "with DP first (dpforge.statistics.metadata) or declare them in the schema"
            )
        self.schema = schema
        self.n_bins = n_bins
        # the generated columns (a 'depends' rule's dependent is decoded from its map), each
        # date followed by its parts
        self.columns = with_parts(schema.generated_columns)
        self.part_of = {
            p.name: (c, part)
            for c in schema.generated_columns
            for p, part in zip(part_columns(c), c.parts, strict=True)
        }
        self.bins = {
            c.name: numeric_bins(c, n_bins or NULLABLE_BINS)
            for c in schema.generated_columns
            if c.is_numeric and (n_bins is not None or c.nullable or c.parts)
        }
        self.placed_cells = dict(cells or {})  # cells that follow the data (DP-placed)
        self.bins.update(self.placed_cells)
        self.codes = dict(codes or {})  # long code lists on their DP-placed cells
        self.spans = self._make_spans(self.columns, self.bins, self.codes)
        self._by_name = {c.name: c for c in self.columns}
        self._span_of = {s.column: s for s in self.spans}
        label = schema.label_column
        self.label_classes: tuple[str, ...] = () if label is None else label.categories

    @staticmethod
    def _make_spans(
        columns: tuple[Column, ...], bins: dict[str, NumericBins], codes: dict[str, CodeCells]
    ) -> tuple[Span, ...]:
        spans, start = [], 0
        for column in columns:
            missing = int(column.nullable)  # one more cell, the last, for "missing"
            if column.name in codes:
                span = Span(column.name, start, codes[column.name].size + missing, SOFTMAX)
            elif column.name in bins:
                span = Span(column.name, start, bins[column.name].size + missing, SOFTMAX)
            elif column.is_numeric:
                span = Span(column.name, start, 1, TANH)
            else:
                span = Span(column.name, start, len(column.categories) + missing, SOFTMAX)
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
            column = self._by_name[span.column]
            if span.column in self.part_of:
                date, part = self.part_of[span.column]
                codes = part_codes(table[date.name].to_numpy(np.float64), date, part)
                cells = np.where(codes < 0, span.dim - 1, codes)
                features[np.arange(len(table)), span.start + cells] = 1.0
                continue
            values = table[column.name].to_numpy()
            missing = pd.isna(values) if column.nullable else np.zeros(len(values), dtype=bool)
            if column.name in self.bins:
                numbers = np.where(missing, 0.0, values.astype(np.float64))
                cells = self.bins[column.name].assign(numbers)
                features[np.arange(len(table)), span.start + cells] = 1.0
            elif column.is_numeric:
                features[:, span.start] = _scale(values.astype(np.float64), column)
            elif column.name in self.codes:
                present = np.where(missing, column.categories[0], values)
                cells = self.codes[column.name].assign(_indices(present, column.categories, column))
                features[np.arange(len(table)), span.start + cells] = 1.0
            else:
                present = np.where(missing, column.categories[0], values)
                features[:, span.start : span.start + len(column.categories)] = _one_hot(
                    present, column.categories, column
                )
            if missing.any():
                features[missing, span.start : span.stop] = 0.0
                features[missing, span.stop - 1] = 1.0
        return features, self._labels(table)

    def _labels(self, table: pd.DataFrame) -> np.ndarray | None:
        label = self.schema.label_column
        if label is None:
            return None
        return _indices(table[label.name].to_numpy(), label.categories, label)

    # -- inverse ---------------------------------------------------------------------------
    def picked_cells(self, features: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Per row, a cell drawn from each softmax block's probabilities as decoding draws:
        (rows, softmax blocks) in span order; :meth:`with_cells` turns them back into
        features that decode to those cells (used to match rows to measured marginals)."""
        blocks = [s for s in self.spans if s.activation == SOFTMAX]
        picked = np.empty((len(features), len(blocks)), dtype=np.int32)
        for j, span in enumerate(blocks):
            picked[:, j] = _pick(features[:, span.start : span.stop], rng)
        return picked

    def dense_positions(self) -> np.ndarray:
        """The output positions outside the softmax blocks (unbinned numbers)."""
        return np.asarray(
            [i for s in self.spans if s.activation != SOFTMAX for i in range(s.start, s.stop)],
            dtype=np.int64,
        )

    def with_cells(self, cells: np.ndarray, dense: np.ndarray) -> np.ndarray:
        """Features whose softmax blocks are the one-hot ``cells`` (:meth:`picked_cells`) and
        whose other positions are ``dense`` (:meth:`dense_positions`)."""
        out = np.zeros((len(cells), self.output_dim), dtype=np.float64)
        out[:, self.dense_positions()] = dense
        rows = np.arange(len(cells))
        blocks = [s for s in self.spans if s.activation == SOFTMAX]
        for j, span in enumerate(blocks):
            out[rows, span.start + cells[:, j]] = 1.0
        return out

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
            if span.column in self.part_of:  # drawn with its date; not an output column
                continue
            column, block = self._by_name[span.column], features[:, span.start : span.stop]
            decode = self._decode_time if column.is_time else self._decode_column
            decoded[column.name] = decode(column, block, rng, features)
        label = self.schema.label_column
        if label is not None:
            decoded[label.name] = np.asarray(label.categories, dtype=object)[labels]
        decoded.update(dependent_values(self.schema, decoded))  # set by the schema's rules
        for column in self.schema.columns:
            if column.type == "surrogate":  # fresh keys: no value of the data is ever read
                decoded[column.name] = fresh_keys(len(features), rng)
        return pd.DataFrame(decoded, columns=self.schema.output_names)

    def _decode_column(
        self, column: Column, block: np.ndarray, rng: np.random.Generator | None, _=None
    ) -> object:
        """One column's values: a cell per row, a value inside it; "missing" left empty."""
        if column.is_numeric and column.name not in self.bins:
            return snap(_unscale(block[:, 0], column), column)
        cells = _pick(block, rng)
        missing = cells == block.shape[1] - 1 if column.nullable else None
        if column.is_numeric:
            present = np.where(missing, 0, cells) if missing is not None else cells
            values = self.bins[column.name].decode(present, rng or np.random.default_rng(0))
            return with_missing(snap(values, column), missing, column)
        names = np.asarray((*column.categories, None), dtype=object)
        if column.name in self.codes:  # a cell of a code list: a code drawn inside it
            if missing is None:
                return names[self.codes[column.name].decode(cells, rng)]
            codes = self.codes[column.name].decode(np.where(missing, 0, cells), rng)
            cells = np.where(missing, len(column.categories), codes)
        return names[cells]

    def _decode_time(
        self, column: Column, block: np.ndarray, rng: np.random.Generator | None, features
    ) -> np.ndarray:
        """A date column's values written in its format: a value inside the sampled cell that
        agrees with the sampled parts (``dpforge.data.dates.decode_times``); missing: None."""
        if column.name not in self.bins:
            return time_texts(snap(_unscale(block[:, 0], column), column), column)
        cells = _pick(block, rng)
        missing = cells == block.shape[1] - 1 if column.nullable else np.zeros(len(cells), bool)
        parts = {}
        for part in column.parts:
            span = self._span_of[part_name(column.name, part)]
            codes = _pick(features[:, span.start : span.stop], rng)
            parts[part] = np.where(codes == len(PARTS[part]), -1, codes)
        present = np.where(missing, 0, cells)
        values = decode_times(
            self.bins[column.name], present, parts, column, rng or np.random.default_rng(0)
        )
        return time_texts(np.where(missing, np.nan, values), column)


def snap(values: np.ndarray, column: Column) -> np.ndarray:
    """Values on the column's public resolution (multiples of it from the lower bound),
    rounded to the decimals the resolution and the bound are written with, so that 19.7 is
    written 19.7 and not 19.700000000000003."""
    if column.resolution is None:
        return values
    step, lower = float(column.resolution), float(column.lower)
    snapped = lower + np.rint((np.asarray(values, dtype=np.float64) - lower) / step) * step
    snapped = np.clip(snapped, lower, float(column.upper))
    if column.type == "integer":
        return np.rint(snapped).astype(np.int64)
    return np.round(snapped, max(_decimals(step), _decimals(lower)))


def _decimals(value: float) -> int:
    """The digits after the point of ``value`` written in its shortest exact form (0.1: 1)."""
    text = np.format_float_positional(value, trim="-")
    return len(text.partition(".")[2])


def with_missing(values: np.ndarray, missing: np.ndarray | None, column: Column) -> object:
    """Empty cells where ``missing``; an integer column stays whole numbers (pandas Int64)."""
    if missing is None:
        return values
    if column.type == "integer":
        whole = pd.array(np.asarray(values, dtype=np.int64), dtype="Int64")
        whole[missing] = pd.NA
        return whole
    out = np.asarray(values, dtype=np.float64).copy()
    out[missing] = np.nan
    return out


def fresh_keys(n: int, rng: np.random.Generator | None) -> np.ndarray:
    """``n`` new random keys (16 hex digits each) for a surrogate column."""
    rng = rng or np.random.default_rng()
    draws = rng.integers(0, 2**63, size=n, dtype=np.int64)
    return np.asarray([f"{int(v):016x}" for v in draws], dtype=object)


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
