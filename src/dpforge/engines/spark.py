"""The Apache Spark engine: a table's records stay in Spark, only exact aggregates come back.

``Synthesizer(...).fit(spark_dataframe)`` and ``dpforge fit PATH`` (``[engine] name = "spark"``)
run every measurement of the default table path (DP bounds and categories, the label prior, the fine
histograms that place the cells, the marginals, the pair scores and the selected pairs) as
Spark aggregations (:mod:`dpforge.engines.spark_table`). The driver receives count tables,
adds the noise once as the in-process path does, and records the same ledger: the same data and
seed give the same measurements through either engine. The discriminator (refine) trains on
records in memory and is not offered here: a run on Spark must spend its budget on the
anchoring (the default for tables).

pyspark is imported only when this engine is used (``pip install 'dpforge[spark]'``).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from dpforge.engines.base import REFINE, Engine, check_reading_stage
from dpforge.engines.spark_table import SparkTable
from dpforge.errors import DataError, DpforgeError

LOCAL_MASTER = "local[*]"
REFINE_NOTE = (
    "the Spark engine measures the table path's statistics where the records are; the "
    "discriminator (refine) trains on records in memory and is not available on Spark: keep the "
    "anchoring's share at 1 (the default for tables), or fit in memory"
)


def is_spark_dataframe(data: Any) -> bool:
    """Whether ``data`` is a pyspark DataFrame (classic or Spark Connect), without importing
    pyspark."""
    kind = type(data)
    return kind.__name__ == "DataFrame" and kind.__module__.startswith("pyspark.sql")


def spark_session(master: str | None = None, remote: str | None = None) -> Any:
    """The Spark session to run on: Spark Connect at ``remote``, else the cluster ``master``
    (``local[*]``, embedded, by default). Spark's own logs are cut to errors; its progress bar
    is off (nothing it prints holds a value of the records)."""
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        raise DpforgeError(
            "the Spark engine needs pyspark: pip install 'dpforge[spark]' (and Java 17)"
        ) from None
    if remote is not None:
        return SparkSession.builder.remote(remote).appName("dpforge").getOrCreate()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # workers run this Python
    builder = SparkSession.builder.master(master or LOCAL_MASTER).appName("dpforge")
    session = builder.config("spark.ui.showConsoleProgress", "false").getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session


def read_table(session: Any, paths: Sequence[str | Path]) -> Any:
    """Parquet files or folders, or CSV files (read as text, like ``read_csv``), as one
    Spark DataFrame."""
    names = [str(p) for p in paths]
    if not names:
        raise DataError("give at least one Parquet or CSV path")
    if all(n.lower().endswith(".csv") for n in names):
        return session.read.options(
            header=True, inferSchema=False, ignoreLeadingWhiteSpace=True, mode="FAILFAST"
        ).csv(names)
    if any(n.lower().endswith(".csv") for n in names):
        raise DataError("give Parquet paths or CSV files, not both")
    return session.read.parquet(*names)


class SparkEngine(Engine):
    """A table's records in Spark: checked, counted and aggregated there."""

    supports_refine = False

    def __init__(self, frame: Any) -> None:
        self._source = frame if isinstance(frame, SparkTable) else SparkTable(frame)
        self._table = self._source

    @classmethod
    def from_paths(
        cls, paths: Sequence[str | Path], master: str | None = None, remote: str | None = None
    ) -> SparkEngine:
        """An engine over Parquet or CSV ``paths`` on a session (see :func:`spark_session`)."""
        return cls(read_table(spark_session(master, remote), paths))

    def _records(self) -> SparkTable:
        return self._table

    def read(self, stage: str) -> SparkTable:
        """The records for ``measure``; ``refine`` is refused (see ``REFINE_NOTE``)."""
        check_reading_stage(stage)
        if stage == REFINE:
            raise DpforgeError(REFINE_NOTE)
        return self._table

    def size(self, stage: str) -> int:
        check_reading_stage(stage)
        return self._table.size()

    def replace(self, records: SparkTable) -> None:
        self._table = records

    def close(self) -> None:
        """Free what this engine persisted in Spark (the checked records, the cell tables)."""
        self._source.unpersist()
