"""Tests of the benchmark data loaders (Thyroid by path, breast cancer from scikit-learn)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from dpforge.data.tables import validate_table
from dpforge.datasets.breast_cancer import load_breast_cancer_demo
from dpforge.datasets.files import DATA_DIR_ENV, resolve_data_dir
from dpforge.datasets.thyroid import THYROID_CONTINUOUS, load_thyroid
from dpforge.errors import DataError
from dpforge.schema.table import Schema


@pytest.fixture(scope="module")
def thyroid():
    try:
        return load_thyroid()
    except DataError as exc:
        pytest.skip(f"Thyroid data not available (set {DATA_DIR_ENV}): {exc}")


def thyroid_dir() -> Path:
    root, _ = resolve_data_dir()
    return root / "thyroid"


def test_thyroid_shapes_and_schema(thyroid):
    train, test, schema = thyroid
    assert train.shape == (3772, 22) and test.shape == (3428, 22)
    assert list(train.columns) == schema.names == list(test.columns)
    assert schema.label == "diagnosis" and schema.label_prior == "dp"
    assert Schema.from_dict(schema.to_dict()) == schema
    assert not schema.incomplete_columns  # everything declared is public
    validate_table(train, schema)
    validate_table(test, schema)


def test_thyroid_values_are_text_categories_and_float_measurements(thyroid):
    train, _, schema = thyroid
    for column in schema.columns:
        values = set(train[column.name].tolist())
        if column.name in THYROID_CONTINUOUS:
            assert train[column.name].dtype == np.float64
            assert (column.lower, column.upper) == (0.0, 1.0)
            assert min(values) >= 0.0 and max(values) <= 1.0
        elif column.name == schema.label:
            assert values == {"1", "2", "3"}
        else:
            assert column.categories == ("0", "1")
            assert values <= {"0", "1"} and all(isinstance(v, str) for v in values)


def test_data_dir_from_argument_env_or_thyroid_folder(thyroid, monkeypatch):
    folder = thyroid_dir()
    train, _, _ = load_thyroid(folder)  # the thyroid folder itself is accepted
    assert len(train) == 3772
    monkeypatch.setenv(DATA_DIR_ENV, str(folder.parent))
    assert resolve_data_dir()[0] == folder.parent
    assert len(load_thyroid()[1]) == 3428


def test_missing_data_says_where_it_looked_and_what_to_do(tmp_path, monkeypatch):
    monkeypatch.delenv(DATA_DIR_ENV, raising=False)
    with pytest.raises(DataError) as info:
        load_thyroid(tmp_path)
    message = str(info.value)
    assert str(tmp_path) in message and DATA_DIR_ENV in message and "ann-train.data" in message
    monkeypatch.setenv(DATA_DIR_ENV, str(tmp_path / "nowhere"))
    with pytest.raises(DataError, match=DATA_DIR_ENV):
        load_thyroid()


def test_malformed_thyroid_file_is_a_data_error(tmp_path):
    folder = tmp_path / "thyroid"
    folder.mkdir()
    (folder / "ann-train.data").write_text("0.5,1,0,3,\n0.2,0,1,3,\n")
    (folder / "ann-test.data").write_text("0.5,1,0,3,\n")
    with pytest.raises(DataError, match="22 comma-separated fields"):
        load_thyroid(tmp_path)


def test_breast_cancer_demo_split_and_schema():
    train, test, schema = load_breast_cancer_demo(seed=0)
    assert train.shape == (455, 31) and test.shape == (114, 31)
    assert schema.label == "diagnosis" and schema.label_prior == "dp"
    assert schema.label_column.categories == ("malignant", "benign")
    features = schema.feature_columns
    assert len(features) == 30 and all(c.type == "continuous" for c in features)
    assert all(c.lower is None and c.upper is None for c in features)  # nothing is public
    assert set(train["diagnosis"]) == {"malignant", "benign"}
    share = (train["diagnosis"] == "malignant").mean(), (test["diagnosis"] == "malignant").mean()
    assert share[0] == pytest.approx(share[1], abs=0.02)  # stratified
    validate_table(train, schema)


def test_breast_cancer_demo_is_seeded():
    a, _, _ = load_breast_cancer_demo(seed=1)
    b, _, _ = load_breast_cancer_demo(seed=1)
    c, _, _ = load_breast_cancer_demo(seed=2)
    assert a.equals(b)
    assert not a.equals(c)
