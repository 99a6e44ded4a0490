"""Tests of train-on-synthetic, test-on-real (TSTR) utility metrics."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from dpforge.datasets.thyroid import load_thyroid
from dpforge.errors import DataError, SchemaError
from dpforge.evaluation.utility import (
    FeatureEncoder,
    MetricResult,
    predict_test,
    tstr_accuracy,
    tstr_auroc,
    tstr_balanced_accuracy,
    tstr_vs_real,
)
from dpforge.schema.table import Column, Schema

CLASSES = ("a", "b", "c")


def toy_schema() -> Schema:
    return Schema(
        columns=(
            Column("x1", "continuous", lower=-10.0, upper=10.0),
            Column("x2", "continuous", lower=-10.0, upper=10.0),
            Column("flag", "categorical", categories=("0", "1", "2")),
            Column("y", "categorical", categories=CLASSES),
        ),
        label="y",
    )


def toy_table(n: int, seed: int) -> pd.DataFrame:
    """Three classes separated by their means in (x1, x2); ``flag`` weakly tied to the class."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, n)
    centres = np.array([[-2.0, 0.0], [2.0, 0.0], [0.0, 2.5]])
    x = centres[y] + rng.normal(size=(n, 2))
    flag = np.where(rng.random(n) < 0.7, y, rng.integers(0, 3, n)) % 2  # only "0"/"1" occur
    return pd.DataFrame(
        {"x1": x[:, 0], "x2": x[:, 1], "flag": flag.astype(str), "y": np.array(CLASSES)[y]}
    )


@pytest.fixture(scope="module")
def tables() -> tuple[pd.DataFrame, pd.DataFrame]:
    return toy_table(300, seed=1), toy_table(300, seed=2)


@pytest.mark.parametrize("classifier", ["lr", "mlp", "rf"])
def test_real_training_set_scores_well_above_chance(tables, classifier):
    train, test = tables
    result = tstr_auroc(train, test, toy_schema(), classifier=classifier, seed=0)
    assert isinstance(result, MetricResult)
    assert result.value > 0.9
    assert result.name == f"tstr_auroc_macro_{classifier}"
    for key in ("macro", "micro", "weighted", "per_class", "accuracy", "balanced_accuracy"):
        assert key in result.details
    assert result.details["macro"] == result.value
    assert set(result.details["per_class"]) == set(CLASSES)


def test_average_selects_the_value(tables):
    train, test = tables
    micro = tstr_auroc(train, test, toy_schema(), classifier="lr", average="micro")
    macro = tstr_auroc(train, test, toy_schema(), classifier="lr", average="macro")
    assert micro.value == micro.details["micro"] == macro.details["micro"]
    assert macro.value != micro.value
    with pytest.raises(ValueError, match="average"):
        tstr_auroc(train, test, toy_schema(), average="samples")


def test_training_set_missing_a_class_gives_a_valid_auroc(tables):
    train, test = tables
    without_c = train[train["y"] != "c"]
    result = tstr_auroc(without_c, test, toy_schema(), classifier="mlp", seed=0)
    assert 0.0 <= result.value <= 1.0 and math.isfinite(result.value)
    assert result.details["classes_missing_from_train"] == ["c"]
    assert result.details["per_class"]["c"] == 0.5  # predicted probability 0 for every row
    pred = predict_test(without_c, test, toy_schema(), classifier="lr")
    assert pred.proba.shape == (len(test), 3)
    assert np.all(pred.proba[:, 2] == 0.0)
    np.testing.assert_allclose(pred.proba.sum(axis=1), 1.0)


def test_training_set_with_a_single_class_is_degenerate_not_an_error(tables):
    train, test = tables
    only_a = train[train["y"] == "a"]
    result = tstr_auroc(only_a, test, toy_schema(), classifier="lr")
    assert result.details["degenerate"] is True
    assert result.value == 0.5


def test_results_are_deterministic_for_a_seed(tables):
    train, test = tables
    for classifier in ("mlp", "rf"):
        first = tstr_auroc(train, test, toy_schema(), classifier=classifier, seed=3)
        again = tstr_auroc(train, test, toy_schema(), classifier=classifier, seed=3)
        assert first.value == again.value
        assert first.details["per_class"] == again.details["per_class"]


def test_features_follow_the_schema_not_the_data(tables):
    train, test = tables
    encoder = FeatureEncoder.from_schema(toy_schema(), (train, test))
    x_train, x_test = encoder.fit_transform(train[train["flag"] == "0"], test)
    assert x_train.shape[1] == x_test.shape[1] == 2 + 3  # two numeric, three flag categories
    np.testing.assert_allclose(x_train[:, :2].mean(axis=0), 0.0, atol=1e-9)  # scaled on train


def test_categorical_values_compare_as_text(tables):
    train, test = tables
    as_numbers = train.assign(flag=train["flag"].astype(float))  # 1.0 is category "1"
    a = tstr_auroc(as_numbers, test, toy_schema(), classifier="lr")
    b = tstr_auroc(train, test, toy_schema(), classifier="lr")
    assert a.value == pytest.approx(b.value)


def test_accuracy_metrics(tables):
    train, test = tables
    acc = tstr_accuracy(train, test, toy_schema(), classifier="lr")
    bal = tstr_balanced_accuracy(train, test, toy_schema(), classifier="lr")
    assert 0.8 < acc.value <= 1.0 and 0.8 < bal.value <= 1.0
    assert acc.details["balanced_accuracy"] == bal.value


def test_tstr_vs_real_reports_the_baseline(tables):
    train, test = tables
    synthetic = toy_table(300, seed=5)
    result = tstr_vs_real(train, test, synthetic, toy_schema(), classifier="lr")
    assert result.details["real_value"] > 0.9
    assert result.details["ratio_to_real"] == pytest.approx(
        result.value / result.details["real_value"]
    )


def test_bad_inputs_name_the_problem(tables):
    train, test = tables
    with pytest.raises(DataError, match="x2"):
        tstr_auroc(train.drop(columns="x2"), test, toy_schema())
    with pytest.raises(DataError, match="'z'"):
        tstr_auroc(train.assign(y="z"), test, toy_schema())
    with pytest.raises(ValueError, match="classifier"):
        tstr_auroc(train, test, toy_schema(), classifier="xgboost")
    unlabelled = Schema(columns=toy_schema().columns)
    with pytest.raises(SchemaError, match="label"):
        tstr_auroc(train, test, unlabelled)


def test_thyroid_real_baseline_is_high():
    try:
        train, test, schema = load_thyroid()
    except DataError as exc:
        pytest.skip(f"Thyroid data not available: {exc}")
    result = tstr_auroc(train, test.head(1500), schema, classifier="lr", seed=0)
    assert result.value > 0.95
    assert result.details["micro"] > 0.95
