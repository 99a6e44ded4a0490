"""dpforge: differentially private synthetic data with GANs and a proven (epsilon, delta)."""

from dpforge.data.arrays import ArrayData
from dpforge.schema.array import ArraySchema, Channel, image_schema
from dpforge.schema.table import Column, Schema

__version__ = "0.1.0"
__all__ = [
    "ArrayData",
    "ArraySchema",
    "Channel",
    "Column",
    "Schema",
    "Synthesizer",
    "image_schema",
    "load",
    "__version__",
]


def __getattr__(name: str):
    """``Synthesizer`` and ``load`` on first use (PEP 562): a worker that only counts records
    (a Spark executor importing dpforge's statistics) never loads torch."""
    if name in ("Synthesizer", "load"):
        from dpforge import synthesizer

        return getattr(synthesizer, name)
    raise AttributeError(f"module 'dpforge' has no attribute {name!r}")
