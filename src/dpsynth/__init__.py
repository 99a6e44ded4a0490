"""dpsynth: differentially private synthetic data."""
__version__ = "0.1.0"
