"""dpsynth: differentially private synthetic data with GANs and a proven (epsilon, delta)."""

from dpsynth.schema import Column, Schema
from dpsynth.synthesizer import Synthesizer, load

__version__ = "0.1.0"
__all__ = ["Column", "Schema", "Synthesizer", "load", "__version__"]
