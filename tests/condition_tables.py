"""A small public table with every kind of column a condition can name, and its schema.

The rows are drawn from a seeded generator (public by construction): ``y`` depends on ``age``
and ``income`` on ``region``, so that a condition changes the other columns' distribution.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from dpforge.schema.table import Column, Schema

SCHEMA = Schema(
    (
        Column("id", "surrogate"),
        Column("sex", "categorical", categories=("F", "M")),
        Column("region", "categorical", categories=("N", "S", "E", "W")),
        Column("age", "integer", lower=18, upper=90),
        Column("income", "continuous", lower=0.0, upper=200_000.0),
        Column("visit", "date", lower=18262.0, upper=18627.0),  # 2020-01-01 to 2020-12-31
        Column("y", "categorical", categories=("no", "yes")),
    ),
    label="y",
    label_prior="uniform",
)


def public_table(n: int = 1000, seed: int = 0) -> pd.DataFrame:
    """``n`` rows of :data:`SCHEMA`, drawn from ``seed``."""
    rng = np.random.default_rng(seed)
    region = rng.choice(["N", "S", "E", "W"], n, p=[0.4, 0.3, 0.2, 0.1])
    age = np.clip(rng.normal(45, 15, n), 18, 90).round().astype(int)
    days = pd.to_timedelta(rng.integers(0, 366, n), unit="D")
    return pd.DataFrame(
        {
            "id": [f"r{i}" for i in range(n)],
            "sex": rng.choice(["F", "M"], n),
            "region": region,
            "age": age,
            "income": np.clip(rng.lognormal(10 + 0.4 * (region == "N"), 0.5), 0, 200_000),
            "visit": (pd.Timestamp("2020-01-01") + days).strftime("%Y-%m-%d"),
            "y": np.where(rng.random(n) < np.where(age > 50, 0.8, 0.2), "yes", "no"),
        }
    )
