"""The Spark engine gives the in-process path's measurements, ledger and samples (issue 23.1).

One small table whose bounds, categories and label prior are all estimated under DP, fitted
with the same seed in memory and on Spark ``local[1]``: every release (metadata, fine
histograms, marginals, pair scores and pairs) must be the same, so the ledger, the completed
schema, the measured marginals and the sampled records are identical. One SparkSession serves
the module; the tests are skipped, saying why, only when Spark cannot start here.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from tests.cli_support import quiet, run

from dpforge.errors import DataError, PrivacyError
from dpforge.schema.table import Column, Schema
from dpforge.statistics import rounds
from dpforge.statistics.anchor import AnchorConfig
from dpforge.synthesizer import Synthesizer

pytestmark = pytest.mark.slow
ANCHOR = AnchorConfig(steps=20, batch_size=256)
MEASURE_MARGINALS = rounds.measure_marginals


def _table(n: int = 1500) -> tuple[pd.DataFrame, Schema]:
    rng = np.random.default_rng(7)
    y = rng.integers(0, 2, n)
    frame = pd.DataFrame(
        {
            "age": rng.integers(18, 90, n),
            "income": np.round(rng.lognormal(8 + y, 1.0, n), 2),
            "hours": rng.integers(1, 99, n),
            "city": rng.choice(["a", "b", "c", "d"], n, p=[0.4, 0.3, 0.2, 0.1]),
            "y": np.where(y == 1, "yes", "no"),
        }
    )
    schema = Schema(
        columns=(
            Column("age", "integer"),
            Column("income", "continuous"),
            Column("hours", "integer", lower=0, upper=100),
            Column("city", "categorical"),
            Column("y", "categorical"),
        ),
        label="y",
        label_prior="dp",
    )
    return frame, schema


def _fit(data, schema: Schema, monkeypatch) -> tuple[Synthesizer, list]:
    """A fixed-seed fit, with every marginal release it measured."""
    released: list = []

    def recording(*args, **kwargs):
        out = MEASURE_MARGINALS(*args, **kwargs)
        released.extend(m.to_dict() for m in out)
        return out

    monkeypatch.setattr(rounds, "measure_marginals", recording)
    synth = Synthesizer(schema, epsilon=3.0, delta=1e-5, seed=0, progress=False, anchor=ANCHOR)
    return synth.fit(data), released


def test_spark_fit_equals_in_memory_fit(spark, monkeypatch):
    frame, schema = _table()
    local, local_marginals = _fit(frame, schema, monkeypatch)
    remote, spark_marginals = _fit(spark.createDataFrame(frame), schema, monkeypatch)
    assert json.dumps(remote.ledger_.to_dict()) == json.dumps(local.ledger_.to_dict())
    assert remote.schema_ == local.schema_
    np.testing.assert_array_equal(remote.label_prior_, local.label_prior_)
    assert spark_marginals == local_marginals and len(local_marginals) > 10
    assert remote.encoder_.bins.keys() == local.encoder_.bins.keys()
    for name, bins in local.encoder_.bins.items():
        np.testing.assert_array_equal(remote.encoder_.bins[name].edges, bins.edges)
    pd.testing.assert_frame_equal(remote.sample(200, seed=3), local.sample(200, seed=3))


def test_spark_refuses_a_bad_record_by_message(spark):
    frame, schema = _table(50)
    frame = frame.astype({"income": object})
    frame.loc[17, "income"] = "n/a"
    synth = Synthesizer(schema, epsilon=3.0, delta=1e-5, seed=0, progress=False, anchor=ANCHOR)
    with pytest.raises(DataError, match="column 'income'.*missing value"):
        synth.fit(spark.createDataFrame(frame))


def test_spark_refuses_a_discriminator_before_reading(spark):
    frame, schema = _table(50)
    synth = Synthesizer(
        schema, epsilon=3.0, delta=1e-5, seed=0, progress=False,
        anchor=AnchorConfig(share=0.5), epochs=1.0,
    )  # fmt: skip
    with pytest.raises(PrivacyError, match="anchored table path only"):
        synth.fit(spark.createDataFrame(frame))


def test_cli_fit_reads_parquet_on_spark(spark, tmp_path, monkeypatch, capsys):
    frame, schema = _table()
    data = tmp_path / "records.parquet"
    spark.createDataFrame(frame).write.parquet(str(data))
    schema_path = tmp_path / "schema.json"
    schema_path.write_text(schema.to_json())
    args = ["fit", data, "--schema", schema_path, "--out", tmp_path / "model", "--seed", "0"]
    sections = {"engine": {"name": "spark", "spark_master": "local[1]"}}
    sections["privacy"] = {"record_budget": False}
    code, out = run([*args, *quiet(sections)], monkeypatch, capsys)
    assert code == 0, out
    assert (tmp_path / "model" / "model.json").is_file()
    assert "privacy spent" in out
    args[args.index(tmp_path / "model")] = tmp_path / "model2"
    code, out = run([*args, *quiet({"engine": {"spark_master": "local[1]"}})], monkeypatch, capsys)
    assert code != 0 and 'need name = "spark"' in out


def test_spark_fit_of_dates_equals_in_memory_fit(spark, monkeypatch):
    """A date with parts and a datetime whose range is estimated under DP (issue 21.2): the
    same releases and samples on Spark as in memory."""
    rng = np.random.default_rng(8)
    day = pd.Timestamp("2013-01-01") + pd.to_timedelta(rng.integers(0, 365, 800), unit="D")
    at = day + pd.to_timedelta(rng.integers(0, 1440, 800), unit="min")
    frame = pd.DataFrame(
        {"day": day.strftime("%Y-%m-%d"), "at": at.strftime("%Y-%m-%d %H:%M"), "y": "a"}
    )
    frame.loc[::2, "y"] = "b"
    schema = Schema.from_dict(
        {
            "label": "y",
            "columns": [
                {"name": "day", "type": "date", "min": "2013-01-01", "max": "2013-12-31",
                 "parts": ["weekday"]},
                {"name": "at", "type": "datetime", "format": "%Y-%m-%d %H:%M", "parts": ["hour"]},
                {"name": "y", "type": "categorical", "categories": ["a", "b"]},
            ],
        }
    )  # fmt: skip
    local, local_marginals = _fit(frame, schema, monkeypatch)
    remote, spark_marginals = _fit(spark.createDataFrame(frame), schema, monkeypatch)
    assert json.dumps(remote.ledger_.to_dict()) == json.dumps(local.ledger_.to_dict())
    assert remote.schema_ == local.schema_ and spark_marginals == local_marginals


def test_spark_pools_rare_values_and_places_code_cells_as_in_memory(spark, monkeypatch):
    """A long code list (600 declared codes: its code histogram counted on Spark) and a column
    whose rare values pool into a declared "other" give the in-memory fit's releases."""
    frame, schema = _table()
    rng = np.random.default_rng(3)
    codes = tuple(f"{i:04d}" for i in range(600))
    frame["code"] = np.asarray(codes, dtype=object)[rng.zipf(1.5, len(frame)) % 600]
    frame.loc[:3, "city"] = ["rare1", "rare2", "rare3", "rare4"]
    columns = tuple(
        Column("city", "categorical", other="other") if c.name == "city" else c
        for c in schema.columns
    )
    schema = Schema(columns + (Column("code", "categorical", categories=codes),), "y", "dp")
    local, local_marginals = _fit(frame, schema, monkeypatch)
    remote, spark_marginals = _fit(spark.createDataFrame(frame), schema, monkeypatch)
    assert local.schema_.column("city").categories[-1] == "other"
    assert remote.schema_ == local.schema_ and spark_marginals == local_marginals
    assert remote.encoder_.codes["code"].to_dict() == local.encoder_.codes["code"].to_dict()
    pd.testing.assert_frame_equal(remote.sample(200, seed=3), local.sample(200, seed=3))


def test_spark_keeps_rows_with_a_missing_category_as_in_memory(spark, monkeypatch):
    """Issue 43 (data lost): Spark dropped every row with an empty value in a nullable
    categorical column (penguins' 'sex'), so its marginals counted 2-5 records fewer than the
    in-memory ones under the same ledger. A missing value is its own cell on both engines."""
    palmerpenguins = pytest.importorskip("palmerpenguins")
    from tests.data.test_missing_values import penguin_schema

    raw = palmerpenguins.load_penguins()
    frame = raw.astype(object).where(raw.notna(), None)  # Spark's null where pandas has NaN
    schema = penguin_schema()
    local, local_marginals = _fit(frame, schema, monkeypatch)
    remote, spark_marginals = _fit(spark.createDataFrame(frame), schema, monkeypatch)
    assert json.dumps(remote.ledger_.to_dict()) == json.dumps(local.ledger_.to_dict())
    with_sex = [m for m in local_marginals if "sex" in json.dumps(m)]
    assert with_sex and spark_marginals == local_marginals
