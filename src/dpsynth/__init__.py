"""dpsynth: differentially private synthetic data with GANs and a proven (epsilon, delta)."""

from dpsynth.array_schema import ArraySchema, Channel, image_schema
from dpsynth.data.arrays import ArrayData
from dpsynth.schema import Column, Schema
from dpsynth.synthesizer import Synthesizer, load

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
