"""Engines: where the private records live and where their exact aggregates are computed.

The pipeline never holds the records itself: it holds an engine, and only its ``measure`` and
``refine`` stages ask the engine for them (:mod:`dpforge.pipeline`). The in-process engine
(:class:`LocalEngine`, the default) keeps a validated pandas DataFrame or :class:`ArrayData` in
memory; :class:`dpforge.engines.spark.SparkEngine` keeps a table in Spark and computes its
exact aggregates there (:mod:`dpforge.engines.aggregates`); other engines (federated sites)
plug in behind the same interface.
"""

from typing import Any

from dpforge.engines.base import MEASURE, READING_STAGES, REFINE, Engine, check_refinable
from dpforge.engines.local import LocalEngine

__all__ = [
    "MEASURE",
    "READING_STAGES",
    "REFINE",
    "Engine",
    "LocalEngine",
    "as_engine",
    "check_refinable",
]


def as_engine(data: Any) -> tuple[Engine, bool]:
    """The engine that holds ``data``, and whether it was made here (then its caller closes
    it): an engine as given, a pyspark DataFrame in a Spark engine (pyspark is imported only
    then), anything else in memory."""
    if isinstance(data, Engine):
        return data, False
    from dpforge.engines.spark import is_spark_dataframe

    if is_spark_dataframe(data):
        from dpforge.engines.spark import SparkEngine

        return SparkEngine(data), True
    return LocalEngine(data), True
