"""Tests of the table metrics of issue 12: the wider classifier set, KS and Wasserstein-1, the
association-matrix difference, and ``evaluate_table`` (which rows each number used)."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy import stats
from scipy.stats.contingency import association

from dpforge.errors import DataError, SchemaError
from dpforge.evaluation.association import (
    association_difference,
    association_matrix,
    correlation_ratio,
    cramers_v,
    pearson,
)
from dpforge.evaluation.distances import ks_statistic, wasserstein
from dpforge.evaluation.evaluate import evaluate_table, json_safe
from dpforge.evaluation.utility import CLASSIFIERS, tstr_auroc
from dpforge.schema.table import Column, Schema

FEW = ("lr", "nb", "dt")  # fast classifiers for the tests that are not about classifiers


@pytest.fixture(scope="module")
def split(cancer):
    """Cancer with a categorical feature derived from a numeric one, split 400 / 169."""
    frame, schema = cancer
    frame = frame.assign(size=np.where(frame["mean_radius"] > 14.0, "large", "small"))
    frame = frame[[*frame.columns.drop("diagnosis"), "diagnosis"]]
    columns = (
        *schema.feature_columns,
        Column("size", "categorical", categories=("small", "large")),
    )
    schema = Schema((*columns, schema.label_column), label="diagnosis", label_prior="uniform")
    shuffled = frame.sample(frac=1.0, random_state=0).reset_index(drop=True)
    return shuffled.iloc[:400].reset_index(drop=True), shuffled.iloc[400:], schema


def noisy_copy(frame: pd.DataFrame, schema: Schema, seed: int) -> pd.DataFrame:
    """A stand-in synthetic table: a bootstrap of ``frame`` with jittered numbers."""
    rng = np.random.default_rng(seed)
    out = frame.sample(len(frame), replace=True, random_state=seed).reset_index(drop=True)
    for column in schema.columns:
        if column.is_numeric:
            spread = 0.05 * (column.upper - column.lower)
            out[column.name] = out[column.name] + rng.normal(0.0, spread, len(out))
    return out


# -- classifiers -----------------------------------------------------------------------------
@pytest.mark.parametrize("classifier", CLASSIFIERS)
def test_every_classifier_scores_in_unit_interval_and_is_seeded(split, classifier):
    train, test, schema = split
    synthetic = noisy_copy(train, schema, seed=1).iloc[:200]
    first = tstr_auroc(synthetic, test, schema, classifier=classifier, seed=3)
    again = tstr_auroc(synthetic, test, schema, classifier=classifier, seed=3)
    for key in ("macro", "micro", "weighted", "accuracy", "balanced_accuracy"):
        assert 0.0 <= first.details[key] <= 1.0
    assert first.value > 0.7  # the diagnosis is easy to predict from these features
    assert first.value == again.value


# -- KS and Wasserstein-1 --------------------------------------------------------------------
def one_column(lower: float = 0.0, upper: float = 10.0) -> Schema:
    return Schema((Column("x", "continuous", lower=lower, upper=upper),))


def test_ks_and_w1_of_a_known_pair():
    real = pd.DataFrame({"x": [0.0, 1.0, 2.0, 3.0]})
    shifted = pd.DataFrame({"x": [0.5, 1.5, 2.5, 3.5]})  # every quantile moves by 0.5
    ks, w1 = ks_statistic(real, shifted, one_column()), wasserstein(real, shifted, one_column())
    assert ks.value == pytest.approx(0.25)
    assert w1.details["per_column"]["x"] == {"distance": pytest.approx(0.5), "normalized": 0.05}
    assert w1.value == pytest.approx(0.05)


def test_ks_and_w1_match_scipy_on_a_random_pair():
    rng = np.random.default_rng(0)
    a, b = rng.normal(3.0, 1.0, 300), rng.gamma(2.0, 1.5, 170)
    real, synthetic = pd.DataFrame({"x": a}), pd.DataFrame({"x": b.astype(str)})  # text is read
    assert ks_statistic(real, synthetic, one_column()).value == pytest.approx(
        stats.ks_2samp(a, b).statistic, abs=1e-12
    )
    distance = wasserstein(real, synthetic, one_column()).details["per_column"]["x"]["distance"]
    assert distance == pytest.approx(stats.wasserstein_distance(a, b), rel=1e-12)


def test_ks_and_w1_refuse_non_numbers():
    with pytest.raises(DataError, match="'x'.*numeric"):
        ks_statistic(pd.DataFrame({"x": [1.0]}), pd.DataFrame({"x": ["a"]}), one_column())
    with pytest.raises(DataError, match="missing or infinite"):
        wasserstein(pd.DataFrame({"x": [1.0]}), pd.DataFrame({"x": [np.nan]}), one_column())


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.floats(-100, 100), min_size=1, max_size=30),
    st.lists(st.floats(-100, 100), min_size=1, max_size=30),
)
def test_ks_in_unit_interval_and_w1_symmetric(a, b):
    schema = one_column(-100.0, 100.0)
    ra, rb = pd.DataFrame({"x": a}), pd.DataFrame({"x": b})
    assert 0.0 <= ks_statistic(ra, rb, schema).value <= 1.0
    forward, backward = wasserstein(ra, rb, schema).value, wasserstein(rb, ra, schema).value
    assert forward >= 0.0 and forward == pytest.approx(backward, abs=1e-9)
    assert wasserstein(ra, ra, schema).value == 0.0
    with np.errstate(divide="ignore"):  # scipy's p-value of tiny samples; we use the statistic
        reference = stats.ks_2samp(np.array(a), np.array(b), method="asymp").statistic
    assert ks_statistic(ra, rb, schema).value == pytest.approx(reference, abs=1e-12)


# -- associations ----------------------------------------------------------------------------
def test_association_measures_on_known_cases():
    x = np.arange(10.0)
    assert pearson(x, 2 * x + 1) == pytest.approx(1.0)
    assert pearson(x, -x) == pytest.approx(-1.0)
    assert pearson(x, np.ones(10)) == 0.0
    groups = np.array(list("aabbccddee"))
    assert cramers_v(groups, groups) == pytest.approx(1.0)
    assert cramers_v(np.array(list("aabb")), np.array(list("abab"))) == pytest.approx(0.0)
    assert cramers_v(groups, np.array(["z"] * 10)) == 0.0
    assert correlation_ratio(groups, np.repeat([1.0, 2.0, 3.0, 4.0, 5.0], 2)) == pytest.approx(1.0)
    assert correlation_ratio(np.array(list("abab")), np.array([1.0, 1.0, 2.0, 2.0])) == 0.0


def test_cramers_v_matches_scipy():
    rng = np.random.default_rng(1)
    a, b = rng.integers(0, 3, 200), rng.integers(0, 4, 200)
    b = np.where(rng.random(200) < 0.4, a, b)
    table = pd.crosstab(a, b).to_numpy()
    assert cramers_v(a, b) == pytest.approx(association(table, method="cramer"), abs=1e-12)


def test_association_difference_is_zero_for_identical_tables(split):
    train, _, schema = split
    result = association_difference(train, train.copy(), schema)
    assert result.value == 0.0
    assert np.all(np.array(result.details["difference"]) == 0.0)
    assert result.details["columns"] == schema.names


def test_association_difference_sees_a_broken_dependency(split):
    train, _, schema = split
    broken = train.copy()
    broken["mean_perimeter"] = np.random.default_rng(0).permutation(broken["mean_perimeter"])
    result = association_difference(train, broken, schema)
    names = result.details["columns"]
    i, j = names.index("mean_radius"), names.index("mean_perimeter")
    assert result.details["real"][i][j] > 0.95
    assert abs(result.details["difference"][i][j]) > 0.8
    assert result.value > 0.0


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10_000), st.integers(2, 40))
def test_association_matrix_is_symmetric_with_unit_diagonal(seed, n):
    rng = np.random.default_rng(seed)
    schema = Schema(
        (
            Column("u", "continuous", lower=0.0, upper=1.0),
            Column("v", "integer", lower=0.0, upper=3.0),
            Column("c", "categorical", categories=("a", "b", "c")),
            Column("d", "categorical", categories=("0", "1")),
        )
    )
    table = pd.DataFrame(
        {
            "u": rng.random(n),
            "v": rng.integers(0, 4, n),
            "c": rng.choice(list("abc"), n),
            "d": rng.choice(["0", "1"], n),
        }
    )
    matrix = association_matrix(table, schema).to_numpy()
    assert np.allclose(matrix, matrix.T)
    assert np.all(np.diag(matrix) == 1.0)
    assert np.all((matrix >= -1.0) & (matrix <= 1.0))
    off = ~np.eye(4, dtype=bool)
    off[0, 1] = off[1, 0] = False  # the only signed pair (two numeric columns)
    assert np.all(matrix[off] >= 0.0)


# -- evaluate_table ---------------------------------------------------------------------------
def test_real_against_real_is_perfect(split):
    train, test, schema = split
    result = evaluate_table(train, train, test, schema, classifiers=FEW, seed=0)
    fidelity = result["fidelity"]
    assert fidelity["tvd"]["mean_one_way"] == 0.0 and fidelity["tvd"]["mean_two_way"] == 0.0
    assert fidelity["ks"]["mean"] == 0.0 and fidelity["wasserstein1"]["mean_normalized"] == 0.0
    assert fidelity["association"]["mean_abs_difference"] == 0.0
    for name in FEW:
        scores = result["utility"]["classifiers"][name]
        assert scores["synthetic"]["auroc_macro"] == scores["real"]["auroc_macro"]
        assert set(scores["ratio"].values()) == {1.0}
    assert set(result["utility"]["mean"]["ratio"].values()) == {1.0}


def test_rows_used_are_recorded_and_test_rows_only_score(split):
    train, test, schema = split
    synthetic = noisy_copy(train, schema, seed=2).iloc[:300]
    result = evaluate_table(synthetic, train, test, schema, classifiers=("lr",), seed=0)
    assert result["rows"] == {"real_train": 400, "real_test": 169, "synthetic": 300}
    lr = result["utility"]["classifiers"]["lr"]
    assert (lr["synthetic"]["n_train"], lr["real"]["n_train"]) == (300, 400)
    assert lr["synthetic"]["n_test"] == lr["real"]["n_test"] == 169
    assert "real_test" in result["row_use"] and result["differentially_private"] is False
    assert "NOT differentially private" in result["notice"]
    assert result["privacy"] is None and result["synthetic_source"] == "given table"
    # Fidelity compares synthetic with real_train only: other test rows change nothing there.
    other_test = test.assign(diagnosis=test["diagnosis"].iloc[::-1].to_numpy())
    again = evaluate_table(synthetic, train, other_test, schema, classifiers=("lr",), seed=0)
    assert again["fidelity"] == result["fidelity"]
    attacks = result["attacks"]
    assert set(attacks["attacks"]) == {"dcr", "domias", "classifier"}
    assert attacks["targets"] == {"members": 84, "non_members": 84, "reference": 85}
    assert all(0.0 <= a["auc"] <= 1.0 for a in attacks["attacks"].values())
    none = evaluate_table(synthetic, train, test, schema, classifiers=("lr",), attacks=())
    assert none["attacks"] is None
    assert 0.0 <= result["fidelity"]["tvd"]["mean_one_way"] <= 1.0
    json.dumps(result, allow_nan=False)  # strict JSON


def test_without_label_utility_is_skipped(split):
    train, test, schema = split
    unlabelled = Schema(schema.feature_columns)
    result = evaluate_table(train, train, test, unlabelled, seed=0)
    assert result["utility"] is None
    assert result["fidelity"]["tvd"]["mean_one_way"] == 0.0


class _ImageModel:
    """Stands in for a fitted image model: it samples arrays, not tables."""

    ledger_ = None
    schema_ = None

    def sample(self, n, seed=None):
        return np.zeros((n, 1, 4, 4))


def test_bad_inputs_are_refused(split):
    train, test, schema = split
    with pytest.raises(SchemaError, match="needs the schema"):
        evaluate_table(train, train, test)
    with pytest.raises(DataError, match="not supported yet"):
        evaluate_table(_ImageModel(), train, test, schema)
    with pytest.raises(ValueError, match="classifiers"):
        evaluate_table(train, train, test, schema, classifiers=("xgboost",))
    with pytest.raises(DataError, match="real test.*'mean_area'"):
        evaluate_table(train, train, test.drop(columns="mean_area"), schema)


def test_json_safe_writes_strict_json():
    value = json_safe({"a": np.float32(0.5), "b": float("nan"), "c": [math.inf, np.int64(2)]})
    assert value == {"a": 0.5, "b": None, "c": ["inf", 2]}
    assert isinstance(value["c"][1], int)
