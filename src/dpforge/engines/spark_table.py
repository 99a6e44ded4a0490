"""The table's exact aggregates as Spark aggregations (:mod:`dpforge.engines.aggregates`).

Each aggregate runs where the records are: a public function of the values (the same NumPy
code the in-process path runs: ``validate_table``, a grid's ``assign``, the encoder) is applied
to each Arrow batch of a partition (``mapInPandas``), and Spark sums the per-batch counts
(``groupBy``). Only count tables come back to the driver, where the mechanism adds the noise.

Nothing here prints or logs a value: a record refused by the checks comes back as the
message ``validate_table`` wrote (redacted when the driver redacts), and the driver raises it.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd

from dpforge.data.tables import check_columns, single_class_error, validate_table
from dpforge.engines import spark_checks as checks
from dpforge.engines.aggregates import (
    Assign,
    CellTable,
    ColumnAggregates,
    TableAggregates,
    dense_counts,
)
from dpforge.engines.spark_checks import UNIT
from dpforge.errors import DataError, redacted_errors, redacting
from dpforge.privacy.person import check_unit_column, frame_keys, row_priority

ERROR = "__dpforge_error__"
RANK = "__dpforge_rank__"
PRIORITY = "__dpforge_priority__"


def column(name: str) -> Any:
    """A Spark column by its exact name (dots, spaces and backticks quoted)."""
    from pyspark.sql import functions as F

    return F.col("`" + name.replace("`", "``") + "`")


class SparkTable(TableAggregates):
    """A table's records in a Spark DataFrame (validated: numbers as doubles, text as strings)."""

    def __init__(self, frame: Any, persisted: list | None = None) -> None:
        self.frame = frame
        self._size: int | None = None
        self._persisted = [] if persisted is None else persisted  # shared with derived tables

    def _persist(self, frame: Any) -> Any:
        self._persisted.append(frame.persist())
        return frame

    def validated(self, schema: Any, out_of_bounds: str, unit: str | None = None) -> SparkTable:
        """Every record checked with ``validate_table``'s rules: as Spark SQL expressions in
        one pass where they cover the table's types (:mod:`dpforge.engines.spark_checks`),
        else batch by batch in Python on the workers; the refusal is raised here. The typed
        records are persisted. With ``unit``, its keys are checked too and kept (as ``UNIT``)
        for :meth:`bounded`."""
        header = pd.DataFrame(columns=self.frame.columns, index=[0])
        check_columns(header, schema)  # names only
        if unit is not None:
            check_unit_column(self.frame.columns, unit)
        if checks.covers(self.frame, schema, unit):
            try:
                typed, size = checks.checked(self.frame, schema, out_of_bounds, unit)
            except checks.PythonValue:  # a number only Python reads: the Python path decides
                pass
            else:
                self._persisted.append(typed)
                names = checks.typed_names(schema, unit)
                table = SparkTable(typed.select(*[column(n) for n in names]), self._persisted)
                table._size = size
                return table
        return self._validated_in_python(schema, out_of_bounds, unit)

    def _validated_in_python(self, schema: Any, out_of_bounds: str, unit: str | None) -> Any:
        """``validate_table`` on each Arrow batch (Python workers): the columns the
        expressions of :mod:`dpforge.engines.spark_checks` do not cover (dates, booleans)."""
        names = [n for n in schema.names if n in self.frame.columns]
        checked = self.frame.select(*[column(n) for n in names]).mapInPandas(
            _validate_batches(schema, out_of_bounds, redacting(), unit),
            _checked_schema(schema, unit),
        )
        checked = self._persist(checked)
        try:
            size = _check_summary(checked, schema.label)
        except DataError:
            self.unpersist()
            raise
        table = SparkTable(checked.filter(column(ERROR).isNull()).drop(ERROR), self._persisted)
        table._size = size
        return table

    def bounded(self, rows: int, seed: int) -> SparkTable:
        """At most ``rows`` records per unit key: each record's priority is computed on the
        workers as in memory (:func:`dpforge.privacy.person.row_priority`, a hash of its
        values keyed by ``seed``) and a key keeps its ``rows`` smallest (a window per key), so
        the same records as in memory; the unit column is dropped. The kept records are
        persisted, so that every later aggregate sees the same ones."""
        from pyspark.sql import Window
        from pyspark.sql import functions as F
        from pyspark.sql.types import LongType, StructField, StructType

        names = [n for n in self.frame.columns if n != UNIT]
        out = StructType([*self.frame.schema.fields, StructField(PRIORITY, LongType(), False)])
        scored = self.frame.mapInPandas(_with_priority(names, seed), out)
        order = Window.partitionBy(column(UNIT)).orderBy(column(PRIORITY))
        ranked = scored.withColumn(RANK, F.row_number().over(order)).drop(PRIORITY)
        kept = ranked.filter(F.col(RANK) <= rows).drop(RANK, UNIT)
        return SparkTable(self._persist(kept), self._persisted)

    def released(self, schema: Any) -> SparkTable:
        """The rows whose every categorical value is a released category, or missing in a
        nullable column (its own cell, as in memory: ``keep_released_rows``); a column with an
        ``other`` value keeps every row, its unreleased values becoming ``other``."""
        from pyspark.sql import functions as F

        frame = self.frame
        for c in schema.columns:
            if c.is_numeric or c.categories is None:
                continue
            known = column(c.name).isin(list(c.categories)) | column(c.name).isNull()
            if c.other is not None:
                frame = frame.withColumn(
                    c.name, F.when(known, column(c.name)).otherwise(F.lit(c.other))
                )
            elif c.nullable:  # isin is null on a null value: a filter on it alone dropped them
                frame = frame.filter(known)
            else:
                frame = frame.filter(column(c.name).isin(list(c.categories)))
        return SparkTable(frame, self._persisted)

    def size(self) -> int:
        if self._size is None:
            self._size = int(self.frame.count())
        return self._size

    def column(self, name: str) -> SparkColumn:
        return SparkColumn(self.frame.select(column(name)))

    def cells(self, encoder: Any, label_name: str | None) -> SparkCells:
        cells = SparkCells.of(self.frame, encoder, label_name)
        self._persist(cells.frame)
        return cells

    def unpersist(self) -> None:
        """Free what this table and those derived from it persisted (checked records, cells)."""
        while self._persisted:
            self._persisted.pop().unpersist()


def _with_priority(names: list[str], seed: int):
    """A ``mapInPandas`` function adding each record's bounding priority (as in memory)."""

    def add(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        for batch in batches:
            yield batch.assign(**{PRIORITY: row_priority(batch[names], seed)})

    return add


class SparkColumn(ColumnAggregates):
    """One column's aggregates: counts per public cell, counts per distinct text."""

    def __init__(self, frame: Any) -> None:
        self.frame = frame  # one column

    def bincount(self, assign: Assign, size: int) -> np.ndarray:
        from pyspark.sql import functions as F

        partial_counts = self.frame.mapInPandas(
            _bincount_batches(assign, size), "cell long, n long"
        )
        rows = partial_counts.groupBy("cell").agg(F.sum("n").alias("n")).collect()
        return dense_counts([r[0] for r in rows], [r[1] for r in rows], size)

    def value_counts(self) -> tuple[list[str], np.ndarray]:
        name = self.frame.columns[0]
        counted = self.frame.groupBy(column(name)).count().collect()
        rows = sorted((str(r[0]), int(r[1])) for r in counted)
        return [v for v, _ in rows], np.array([n for _, n in rows], dtype=np.float64)


class SparkCells(CellTable):
    """The records' cell indices, one integer column per encoded column (persisted)."""

    def __init__(self, frame: Any, sizes: dict[str, int], aliases: dict[str, str]) -> None:
        self.frame, self.sizes, self.aliases = frame, sizes, aliases

    @classmethod
    def of(cls, frame: Any, encoder: Any, label_name: str | None) -> SparkCells:
        """Encode every batch with ``encoder`` (``cell_columns``, as in-process)."""
        sizes = {s.column: s.dim for s in encoder.spans if s.activation == "softmax"}
        if label_name is not None:
            sizes[label_name] = encoder.n_classes
        aliases = {name: f"c{i}" for i, name in enumerate(sizes)}
        ddl = ", ".join(f"{a} int" for a in aliases.values())
        cells = frame.mapInPandas(_cell_batches(encoder, label_name, aliases), ddl)
        return cls(cells, sizes, aliases)

    def counts(self, marginals: Sequence[tuple[str, ...]]) -> list[np.ndarray]:
        """Every count table in one pass: each record gives one (marginal, flat cell) per
        marginal, and Spark counts them."""
        from pyspark.sql import functions as F

        if not marginals:
            return []
        keys = [
            F.struct(F.lit(i).alias("q"), self._flat(m).alias("cell"))
            for i, m in enumerate(marginals)
        ]
        exploded = self.frame.select(F.explode(F.array(*keys)).alias("k")).select("k.q", "k.cell")
        rows = exploded.groupBy("q", "cell").count().collect()
        return [self._table(i, m, rows) for i, m in enumerate(marginals)]

    def _flat(self, columns: tuple[str, ...]) -> Any:
        from pyspark.sql import functions as F

        if len(columns) == 1:
            return F.col(self.aliases[columns[0]]).cast("long")
        if len(columns) == 2:
            a, b = (F.col(self.aliases[c]).cast("long") for c in columns)
            return a * self.sizes[columns[1]] + b
        raise ValueError(f"marginals of 1 or 2 columns are supported, got {columns}")

    def _table(self, query: int, columns: tuple[str, ...], rows: list) -> np.ndarray:
        shape = tuple(self.sizes[c] for c in columns)
        mine = [(r[1], r[2]) for r in rows if r[0] == query]
        flat = dense_counts([c for c, _ in mine], [n for _, n in mine], int(np.prod(shape)))
        return flat.reshape(shape)


def _checked_schema(schema: Any, unit: str | None = None) -> Any:
    """The Spark schema of validated records: numbers as doubles, text as strings, the unit's
    keys (with a unit), and the refusal message of a batch (null on the records that passed)."""
    from pyspark.sql.types import DoubleType, StringType, StructField, StructType

    fields = [
        StructField(c.name, DoubleType() if c.is_numeric else StringType())
        for c in schema.columns
        if not c.is_identifier
    ]
    keys = [StructField(UNIT, StringType())] if unit is not None else []
    return StructType([*fields, *keys, StructField(ERROR, StringType())])


def _validate_batches(schema: Any, out_of_bounds: str, redact: bool, unit: str | None = None):
    """``validate_table`` on each batch (the label's at-least-two-classes check is global and
    runs on the driver), and the unit's keys with a unit; a refused batch yields one row
    holding the message, not an exception, so that no value reaches Spark's logs."""
    batch_schema = replace(schema, label=None, label_prior="uniform")
    names = [c.name for c in schema.columns if not c.is_identifier]
    names += [UNIT] if unit is not None else []

    def run(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        for batch in batches:
            if batch.empty:
                continue
            try:
                with redacted_errors(redact):
                    table = validate_table(batch, batch_schema, out_of_bounds=out_of_bounds)
                    if unit is not None:
                        table[UNIT] = frame_keys(batch, unit)
            except DataError as exc:
                yield _refusal(names, str(exc))
                return
            table[ERROR] = None
            yield table

    return run


def _refusal(names: list[str], message: str) -> pd.DataFrame:
    """One row that carries a batch's refusal message (every value null)."""
    empty = {n: pd.Series([None], dtype=object) for n in names}
    return pd.DataFrame({**empty, ERROR: [message]})


def _check_summary(checked: Any, label: str | None) -> int:
    """One pass over the checked batches: the refusal is raised, as are no records and
    a label with a single class (``validate_table``'s rules); returns the number of records."""
    from pyspark.sql import functions as F

    passed = column(ERROR).isNull()
    parts = [F.sum(passed.cast("long")).alias("n"), F.min(column(ERROR)).alias("refused")]
    if label is not None:
        kept = F.when(passed, column(label))
        parts += [F.min(kept).alias("low"), F.max(kept).alias("high")]
    summary = checked.agg(*parts).collect()[0]
    if summary["refused"] is not None:
        raise DataError(summary["refused"])
    if not summary["n"]:
        raise DataError("the data have no rows")
    if label is not None and summary["low"] == summary["high"]:
        raise single_class_error(label, summary["low"])
    return int(summary["n"])


def _bincount_batches(assign: Assign, size: int):
    """Per batch, the records per cell of ``assign`` (non-empty cells only)."""

    def run(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        for batch in batches:
            cells = np.asarray(assign(batch.iloc[:, 0].to_numpy()), dtype=np.int64)
            counts = np.bincount(cells[cells >= 0], minlength=size)
            kept = np.flatnonzero(counts)
            yield pd.DataFrame({"cell": kept.astype(np.int64), "n": counts[kept]})

    return run


def _cell_batches(encoder: Any, label_name: str | None, aliases: dict[str, str]):
    """Per batch, each encoded column's cell indices (``cell_columns`` of the encoded batch)."""
    from dpforge.statistics.marginals import cell_columns

    def run(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        for batch in batches:
            features, labels = encoder.transform(batch)
            cells = cell_columns(features, encoder.spans, labels, label_name, encoder.n_classes)
            yield pd.DataFrame({alias: cells[name].index for name, alias in aliases.items()})

    return run
