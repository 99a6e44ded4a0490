"""Related tables on the Spark engine (issue 45.5): each part's fit reads Spark DataFrames, the
key checks, child counts and join run as Spark SQL. With nobody beyond k the fit equals the
in-memory one (ledger, schemas, samples); bad keys are refused as in memory, before any charge."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from tests.relational.support import K_DRUGS, K_VISITS, hospital, hospital_schema

from cli_support import options_file, run
from dpforge.data.relational_spark import spark_part_tables
from dpforge.errors import DataError
from dpforge.privacy.budget import BUDGET_SUFFIX, DataBudget
from dpforge.relational import RelationalSynthesizer
from dpforge.statistics.anchor import AnchorConfig

pytestmark = pytest.mark.slow
FAST = AnchorConfig(steps=20, batch_size=256)


def _within_k(tables: dict[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """The hospital with every patient's first k visits and prescriptions: nobody is cut."""
    cut = dict(tables)
    for name, k in (("visits", K_VISITS), ("drugs", K_DRUGS)):
        cut[name] = tables[name].groupby("patient_id").head(k).reset_index(drop=True)
    return cut


def _fit(schema, tables, budget=None) -> RelationalSynthesizer:
    model = RelationalSynthesizer(schema, seed=0, progress=False, anchor=FAST)
    return model.fit(tables, budget=budget)


def _on_spark(spark, tables):
    return {name: spark.createDataFrame(frame) for name, frame in tables.items()}


def test_related_tables_on_spark_equal_in_memory_when_nobody_is_cut(spark):
    tables, schema = hospital(n=80)
    tables = _within_k(tables)
    local, remote = _fit(schema, tables), _fit(schema, _on_spark(spark, tables))
    assert json.dumps(remote.ledger_.to_dict()) == json.dumps(local.ledger_.to_dict())
    for name, model in local.table_models().items():
        assert remote.table_models()[name].schema_ == model.schema_
    for name, frame in local.sample(30, seed=2).items():
        pd.testing.assert_frame_equal(remote.sample(30, seed=2)[name], frame)


def test_the_parent_counts_are_bounded_to_k_and_each_child_row_gets_its_parent(spark):
    tables, schema = hospital(n=50)
    parts = spark_part_tables(_on_spark(spark, tables), schema, "error")
    counts = parts["patients"].toPandas().set_index("patient_id")
    real = tables["visits"]["patient_id"].value_counts()
    expected = real.reindex(counts.index, fill_value=0).clip(upper=K_VISITS)
    assert (counts["n_visits"].astype(int) == expected).all()
    joined = parts["visits"].toPandas()
    assert len(joined) == len(tables["visits"])  # cut to k per parent by the child's fit
    ages = tables["patients"].set_index("patient_id")["age"]
    assert (joined["age"] == joined["patient_id"].map(ages)).all()


@pytest.mark.parametrize(
    ("table", "row", "value", "message"),
    [
        ("visits", 3, "p999", "table 'visits', row 4: foreign key 'patient_id' value 'p999'"),
        ("patients", 5, "p002", "table 'patients', row 6: key 'patient_id' value 'p002'"),
    ],
)
def test_bad_keys_on_spark_are_refused_as_in_memory_before_any_charge(
    spark, tmp_path, table, row, value, message
):
    tables, schema = hospital(n=30)
    tables[table].loc[row, "patient_id"] = value
    budget = DataBudget(tmp_path / ("patients.csv" + BUDGET_SUFFIX))
    with pytest.raises(DataError) as spark_error:
        _fit(schema, _on_spark(spark, tables), budget)
    with pytest.raises(DataError) as memory_error:
        _fit(schema, tables, budget)
    assert message in str(spark_error.value) and message in str(memory_error.value)
    assert budget.status().runs == ()


def test_spark_and_pandas_tables_are_not_mixed(spark):
    tables, schema = hospital(n=20)
    mixed = {**tables, "visits": spark.createDataFrame(tables["visits"])}
    with pytest.raises(DataError, match=r"\['visits'\] are Spark DataFrames"):
        _fit(schema, mixed)


def test_the_command_line_fits_related_tables_on_spark(spark, tmp_path, monkeypatch, capsys):
    tables, _ = hospital(n=40)
    for name, frame in tables.items():
        frame.to_csv(tmp_path / f"{name}.csv", index=False)
    (tmp_path / "hospital.json").write_text(json.dumps(hospital_schema()))
    sections = {
        "anchor": {"steps": 20, "batch_size": 256}, "output": {"progress": False},
        "engine": {"name": "spark", "spark_master": "local[1]"},
    }  # fmt: skip
    args = [
        "fit", *[tmp_path / f"{n}.csv" for n in ("patients", "visits", "drugs")],
        "--schema", tmp_path / "hospital.json", "--out", tmp_path / "model",
        "--options", options_file(sections), "--seed", "0",
    ]  # fmt: skip
    code, out = run(args, monkeypatch, capsys)
    assert code == 0, out
    (record,) = DataBudget(tmp_path / ("patients.csv" + BUDGET_SUFFIX)).status().runs
    model = RelationalSynthesizer.load(tmp_path / "model")
    assert record.ledger.to_dict() == model.ledger_.to_dict()
