"""dpforge: differentially private synthetic data with GANs and a proven (epsilon, delta)."""

from dpforge.data.arrays import ArrayData
from dpforge.schema.array import ArraySchema, Channel, image_schema
from dpforge.schema.table import Column, Schema
from dpforge.synthesizer import Synthesizer, load

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
