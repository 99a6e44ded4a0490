"""Evaluation of related tables on small hand-made tables whose answers are known."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from dpforge.errors import DataError, SchemaError
from dpforge.evaluation.relational import (
    completed_schema,
    count_fidelity,
    evaluate_relational,
    parent_child_fidelity,
    table_fidelity,
)
from dpforge.evaluation.relational_features import feature_schema, parent_features, split_parents
from dpforge.schema.relational import RelationalSchema
from dpforge.schema.table import Column, Schema

K = 3


def _schema(label: str | None = "g", x_upper: float | None = 10) -> RelationalSchema:
    people = Schema((
        Column("id", "drop"), Column("g", "categorical", categories=("a", "b")),
        Column("x", "integer", lower=0, upper=x_upper),
    ), label=label)  # fmt: skip
    items = Schema((
        Column("id", "drop"), Column("c", "categorical", categories=("u", "v")),
        Column("y", "continuous", lower=0, upper=1),
    ))  # fmt: skip
    return RelationalSchema.from_dict({"type": "relational", "tables": {
        "people": {"key": "id", "schema": people.to_dict()},
        "items": {"key": None, "parent": "people", "foreign_key": "id",
                  "max_rows_per_parent": K, "schema": items.to_dict()},
    }})  # fmt: skip


def _linked(n: int = 60, seed: int = 0) -> dict[str, pd.DataFrame]:
    """People whose group decides their items: group a holds u items with small y, b holds v
    items with large y; 0..K items each."""
    rng = np.random.default_rng(seed)
    ids = [f"k{i}" for i in range(n)]
    g = rng.choice(["a", "b"], n)
    people = pd.DataFrame({"id": ids, "g": g, "x": rng.integers(0, 11, n)})
    counts = rng.integers(0, K + 1, n)
    owner = np.repeat(np.arange(n), counts)
    is_b = g[owner] == "b"
    items = pd.DataFrame({
        "id": np.asarray(ids)[owner], "c": np.where(is_b, "v", "u"),
        "y": np.where(is_b, 0.8, 0.2) + rng.uniform(-0.1, 0.1, len(owner)),
    })  # fmt: skip
    return {"people": people, "items": items}


def test_synthetic_equal_to_real_scores_zero_everywhere():
    tables, schema = _linked(), _schema()
    per_table = table_fidelity(tables, tables, schema)
    assert all(t["mean_one_way"] == 0 and t["mean_two_way"] == 0 for t in per_table.values())
    assert parent_child_fidelity(tables, tables, schema)["items"]["mean"] == 0
    assert count_fidelity(tables, tables, schema)["items"]["tvd"] == 0


def test_shuffled_children_break_only_the_parent_x_child_pairs():
    tables, schema = _linked(), _schema()
    shuffled = dict(tables)
    items = tables["items"].copy()
    items["id"] = items["id"].to_numpy()[np.random.default_rng(1).permutation(len(items))]
    shuffled["items"] = items
    assert table_fidelity(tables, shuffled, schema)["items"]["mean_two_way"] == 0
    pairs = parent_child_fidelity(tables, shuffled, schema)["items"]["pairs"]
    assert pairs["g x c"] > 0.2 and pairs["g x y"] > 0.2  # the group decided c and y


def test_child_count_distribution_is_exact_with_an_over_k_cell():
    schema = _schema()
    real = {
        "people": pd.DataFrame({"id": ["p1", "p2", "p3"], "g": "a", "x": 1}),
        "items": pd.DataFrame({"id": ["p1", "p1", "p3"], "c": "u", "y": 0.5}),
    }
    synthetic = {
        "people": pd.DataFrame({"id": ["q1", "q2", "q3"], "g": "a", "x": 1}),
        "items": pd.DataFrame({"id": ["q1", "q2", *["q3"] * 5], "c": "u", "y": 0.5}),
    }
    counts = count_fidelity(real, synthetic, schema)["items"]
    assert counts["cells"] == ["0", "1", "2", "3", ">3"]
    assert counts["real"] == pytest.approx([1 / 3, 1 / 3, 1 / 3, 0, 0])
    assert counts["synthetic"] == pytest.approx([0, 2 / 3, 0, 0, 1 / 3])
    assert counts["tvd"] == pytest.approx(2 / 3)


def test_parent_features_are_counts_means_and_shares_per_parent():
    schema = _schema()
    tables = {
        "people": pd.DataFrame({"id": ["p1", "p2"], "g": ["a", "b"], "x": [1, 2]}),
        "items": pd.DataFrame({"id": ["p1", "p1"], "c": ["u", "v"], "y": [0.2, 0.6]}),
    }
    features = parent_features(tables, schema, "real")
    assert list(features.columns) == feature_schema(schema, "g").names
    assert features["items: rows"].tolist() == [2, 0]
    assert features["items: mean y"][0] == pytest.approx(0.4)
    assert features["items: share c=u"][0] == 0.5
    assert np.isnan(features["items: mean y"][1]) and np.isnan(features["items: share c=v"][1])


def test_the_parent_split_keeps_each_parent_and_its_children_on_one_side():
    tables, schema = _linked(90), _schema()
    train, holdout = split_parents(tables, schema, 1 / 3, np.random.default_rng(0))
    assert not set(train["people"]["id"]) & set(holdout["people"]["id"])
    assert len(holdout["people"]) == 30 and len(train["people"]) == 60
    for side in (train, holdout):
        assert set(side["items"]["id"]) <= set(side["people"]["id"])
    assert len(train["items"]) + len(holdout["items"]) == len(tables["items"])


def test_a_holdout_parent_seen_in_training_is_refused():
    tables, schema = _linked(), _schema()
    train, holdout = split_parents(tables, schema, 0.5, np.random.default_rng(0))
    seen = train["people"]["id"].iloc[0]
    leaked = {n: pd.concat([holdout[n], train[n][train[n]["id"] == seen]]) for n in holdout}
    with pytest.raises(DataError, match="also in the training tables"):
        evaluate_relational(train, leaked, train, schema, classifiers=("lr",), attacks=())


def test_the_task_trained_on_a_copy_of_the_real_parents_scores_as_the_real_baseline():
    tables, schema = _linked(90), _schema()
    train, holdout = split_parents(tables, schema, 1 / 3, np.random.default_rng(0))
    result = evaluate_relational(train, holdout, train, schema, classifiers=("lr",),
                                 attacks=("dcr",))  # fmt: skip
    mean = result.task["mean"]
    assert mean["synthetic"]["auroc_macro"] == mean["real"]["auroc_macro"] > 0.9
    assert result.attacks["max_auc"] > 0.5  # the release is the members themselves
    assert result.headline()["child_count_tvd"] == 0
    text = result.markdown()
    assert "### Parent-level task (label 'g')" in text and "| items | 3 |" in text
    assert result.to_dict()["differentially_private"] is False


def test_an_undeclared_bound_is_refused_naming_table_and_column():
    tables = _linked()
    with pytest.raises(SchemaError, match="table 'people': column 'x' has no declared bounds"):
        evaluate_relational(tables, tables, tables, _schema(x_upper=None), attacks=())


def test_a_fitted_model_gives_the_cells_the_schema_leaves_undeclared():
    """completed_schema reads each table's columns from the model's fits (stand-ins here:
    the completed parent schema and the completed joined child schema)."""
    declared, complete = _schema(x_upper=None), _schema()
    model = SimpleNamespace(
        parent_model_=SimpleNamespace(schema_=complete.parent_with_counts()),
        child_models_={"items": SimpleNamespace(schema_=complete.joined(complete.table("items")))},
    )
    done = completed_schema(declared, model)
    assert done.table("people").schema.column("x").upper == 10
    assert done.to_dict() == complete.to_dict()
