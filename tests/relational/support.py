"""A small hospital (patients and their visits and prescriptions) and its relational schema."""

from __future__ import annotations

import numpy as np
import pandas as pd

from dpforge.schema.relational import RelationalSchema
from dpforge.schema.table import Column, Schema

K_VISITS = 3
K_DRUGS = 2


def hospital_schema(k_visits: object = K_VISITS) -> dict:
    """The relational schema's JSON object (k of visits given, so tests can break it)."""
    patients = Schema((
        Column("patient_id", "drop"),
        Column("sex", "categorical", categories=("F", "M")),
        Column("age", "integer", lower=0, upper=99),
    ))  # fmt: skip
    visits = Schema((
        Column("patient_id", "drop"),
        Column("ward", "categorical", categories=("a", "b", "c")),
        Column("cost", "continuous", lower=0, upper=100),
    ))  # fmt: skip
    drugs = Schema((
        Column("patient_id", "drop"),
        Column("drug", "categorical", categories=("x", "y")),
    ))  # fmt: skip
    return {
        "version": 1,
        "type": "relational",
        "tables": {
            "patients": {"key": "patient_id", "schema": patients.to_dict()},
            "visits": {
                "key": None, "parent": "patients", "foreign_key": "patient_id",
                "max_rows_per_parent": k_visits, "schema": visits.to_dict(),
            },
            "drugs": {
                "key": None, "parent": "patients", "foreign_key": "patient_id",
                "max_rows_per_parent": K_DRUGS, "schema": drugs.to_dict(),
            },
        },
    }  # fmt: skip


def hospital(n: int = 40, seed: int = 0) -> tuple[dict[str, pd.DataFrame], RelationalSchema]:
    """``n`` patients with 0..6 visits and 0..3 prescriptions each (as text, as CSV gives)."""
    rng = np.random.default_rng(seed)
    ids = [f"p{i:03d}" for i in range(n)]
    patients = pd.DataFrame({
        "patient_id": ids,
        "sex": rng.choice(["F", "M"], n),
        "age": rng.integers(0, 100, n).astype(str),
    })  # fmt: skip
    visits_per = rng.integers(0, 7, n)
    owners = np.repeat(ids, visits_per)
    visits = pd.DataFrame({
        "patient_id": owners,
        "ward": rng.choice(["a", "b", "c"], len(owners)),
        "cost": rng.uniform(0, 100, len(owners)).round(2).astype(str),
    })  # fmt: skip
    drug_owners = np.repeat(ids, rng.integers(0, 4, n))
    drugs = pd.DataFrame(
        {"patient_id": drug_owners, "drug": rng.choice(["x", "y"], len(drug_owners))}
    )
    tables = {"patients": patients, "visits": visits, "drugs": drugs}
    return tables, RelationalSchema.from_dict(hospital_schema())
