"""Engines: where the private records live and where their exact aggregates are computed.

The pipeline never holds the records itself: it holds an engine, and only its ``measure`` and
``refine`` stages ask the engine for them (:mod:`dpforge.pipeline`). The in-process engine
(:class:`LocalEngine`, the default) keeps a validated pandas DataFrame or :class:`ArrayData` in
memory; other engines (Spark, federated sites) plug in behind the same interface.
"""

from dpforge.engines.base import MEASURE, READING_STAGES, REFINE, Engine
from dpforge.engines.local import LocalEngine

__all__ = ["MEASURE", "READING_STAGES", "REFINE", "Engine", "LocalEngine"]
