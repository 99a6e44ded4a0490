"""Aggregates of a child's rows per parent (the schema's "aggregates"): the schema round trip,
bad declarations refused naming the fix, the values computed on each parent's kept rows, and
the command line as a user calls it (the children drawn for their parent's aggregate, the
aggregates left out of the sampled parents unless asked). Their sensitivity is checked in
test_sensitivity.py."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from cli_support import run
from dpforge.data.relational import bound_children, child_aggregates, parent_with_counts
from dpforge.errors import SchemaError
from dpforge.schema.relational import RelationalSchema
from tests.relational.support import K_VISITS, hospital, hospital_schema
from tests.relational.test_product import _fit_args

MEAN_COST = {"column": "cost", "aggregate": "mean"}
WARD_A = {"column": "ward", "aggregate": "count", "category": "a"}


def _schema(aggregates: list, table: str = "visits") -> RelationalSchema:
    document = hospital_schema()
    document["tables"][table]["aggregates"] = aggregates
    return RelationalSchema.from_dict(document)


def test_the_schema_round_trips_its_aggregates_as_public_parent_columns():
    schema = _schema([MEAN_COST, WARD_A])
    assert RelationalSchema.from_dict(json.loads(schema.to_json())) == schema
    mean, count = schema.parent_with_counts().columns[-2:]
    assert (mean.name, mean.type, mean.lower, mean.upper, mean.nullable) == (
        "visits.mean.cost", "continuous", 0, 100, True,
    )  # fmt: skip
    assert (count.name, count.type, count.lower, count.upper) == (
        "visits.count.ward=a", "integer", 0, K_VISITS,
    )  # fmt: skip
    visits = schema.table("visits")
    assert schema.joined(visits).names[-2:] == [mean.name, count.name]
    assert mean.name not in schema.joined(visits, aggregates=False).names


@pytest.mark.parametrize(
    ("aggregates", "table", "message"),
    [
        ([{"column": "price", "aggregate": "mean"}], "visits",
         "table 'visits': aggregate mean of 'price': 'price' is not a column of 'visits'"),
        ([{"column": "ward", "aggregate": "mean"}], "visits",
         "a mean needs a continuous or integer column, 'ward' is categorical"),
        ([{"column": "ward", "aggregate": "count", "category": "z"}], "visits",
         'category "z" is not one of the column\'s categories'),
        ([{"column": "ward", "aggregate": "count"}], "visits", "a count needs 'category'"),
        ([{"column": "cost", "aggregate": "median"}], "visits",
         "aggregates[0].aggregate must be one of ['mean', 'count']"),
        ([MEAN_COST], "patients", "only a child table has aggregates"),
    ],
)  # fmt: skip
def test_a_bad_aggregate_is_refused_naming_the_fix(aggregates, table, message):
    with pytest.raises(SchemaError) as caught:
        _schema(aggregates, table)
    assert message in str(caught.value)


def test_a_mean_needs_public_bounds():
    document = hospital_schema()
    document["tables"]["visits"]["schema"]["columns"][2].pop("upper")
    document["tables"]["visits"]["aggregates"] = [MEAN_COST]
    with pytest.raises(SchemaError, match="declare the column's public lower and upper bounds"):
        RelationalSchema.from_dict(document)


def test_the_aggregates_are_computed_on_each_parents_kept_rows():
    tables, _ = hospital(n=30, seed=2)
    schema = _schema([MEAN_COST, WARD_A])
    bounded = bound_children(tables, schema, np.random.default_rng(0))
    parents = parent_with_counts(bounded, schema)
    visits = bounded["visits"].assign(cost=lambda f: f["cost"].astype(float))
    for _, parent in parents.iterrows():
        rows = visits[visits["patient_id"] == parent["patient_id"]]
        assert parent["n_visits"] == len(rows) <= K_VISITS
        assert parent["visits.count.ward=a"] == (rows["ward"] == "a").sum()
        expected = rows["cost"].mean() if len(rows) else np.nan
        np.testing.assert_allclose(parent["visits.mean.cost"], expected)
    # a parent's aggregates read its own rows only: another parent's rows do not move them
    alone = child_aggregates(parents.iloc[:1], visits, schema.table("visits"), "patient_id")
    pd.testing.assert_frame_equal(alone, parents.iloc[:1][alone.columns], check_dtype=False)


def _two_kinds(n: int, seed: int) -> dict[str, pd.DataFrame]:
    """Patients whose visits all cost about 10 or all about 90, which no patient column
    tells: only the mean cost per patient carries it."""
    tables, _ = hospital(n=n, seed=seed)
    rng = np.random.default_rng(seed)
    dear = dict(zip(tables["patients"]["patient_id"], rng.random(n) < 0.5, strict=True))
    owners = tables["visits"]["patient_id"].map(dear).to_numpy()
    cost = np.where(owners, 90, 10) + rng.uniform(-5, 5, len(owners))
    tables["visits"]["cost"] = cost.round(2).astype(str)
    return tables


@pytest.mark.slow
def test_fit_and_sample_with_aggregates_as_a_user_calls_them(tmp_path, monkeypatch, capsys):
    for name, frame in _two_kinds(300, 5).items():
        frame.to_csv(tmp_path / f"{name}.csv", index=False)
    document = hospital_schema()
    document["tables"]["visits"]["aggregates"] = [MEAN_COST]
    (tmp_path / "hospital.json").write_text(json.dumps(document))
    args = [*_fit_args(tmp_path, "patients", "visits", "drugs"), "--epsilon", "20"]
    code, out = run(args, monkeypatch, capsys)
    assert code == 0, out
    sample = ["sample", tmp_path / "model", "-n", "300", "-o", tmp_path / "out", "--seed", "1"]
    code, out = run(sample, monkeypatch, capsys)
    assert code == 0, out
    plain = pd.read_csv(tmp_path / "out" / "patients.csv")
    assert list(plain.columns) == ["patient_id", "sex", "age"]  # dropped unless asked
    code, out = run([*sample[:5], tmp_path / "asked", "--seed", "1", "--aggregates"],
                    monkeypatch, capsys)  # fmt: skip
    assert code == 0, out
    parents = pd.read_csv(tmp_path / "asked" / "patients.csv")
    visits = pd.read_csv(tmp_path / "asked" / "visits.csv")
    drawn = parents.set_index("patient_id")["visits.mean.cost"]
    theirs = visits.groupby("patient_id")["cost"].mean()
    drawn = drawn.loc[theirs.index]
    # the children follow the aggregate their parent was drawn with: dear parents' visits
    # cost more (without the aggregate, nothing in a parent's columns would tell them apart)
    assert theirs[drawn > 50].mean() - theirs[drawn <= 50].mean() > 40


def test_aggregates_of_a_single_table_model_are_refused(tmp_path, monkeypatch, capsys):
    code, out = run(["sample", tmp_path, "-n", "5", "-o", tmp_path / "out", "--aggregates"],
                    monkeypatch, capsys)  # fmt: skip
    assert code != 0 and "--aggregates" in out
