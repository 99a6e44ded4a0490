"""Tests of the UCI Adult loader and its public schema (real files skipped when absent)."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dpforge import Synthesizer
from dpforge.data.tables import validate_table
from dpforge.datasets.adult import (
    ADULT_CLASSES,
    ADULT_LABEL,
    adult_schema,
    balance_classes,
    load_adult,
    load_adult_file,
    read_adult_file,
)
from dpforge.datasets.files import DATA_DIR_ENV, resolve_data_dir
from dpforge.errors import DataError
from dpforge.methods.dpcgan import DPCGANConfig
from dpforge.schema.table import Schema

HEADER = ", ".join(adult_schema().names)


@pytest.fixture(scope="module")
def adult_balanced():
    try:
        return load_adult()
    except DataError as exc:
        pytest.skip(f"Adult data not available (set {DATA_DIR_ENV}): {exc}")


@pytest.fixture(scope="module")
def adult_full():
    try:
        return load_adult(balanced=False)
    except DataError as exc:
        pytest.skip(f"Adult data not available (set {DATA_DIR_ENV}): {exc}")


# -- the real files --------------------------------------------------------------------------------
def test_unbalanced_shapes_match_the_code_book(adult_full):
    train, test, schema = adult_full
    # adult.names: "45222 if instances with unknown values are removed (train=30162, test=15060)"
    assert train.shape == (30162, 15) and test.shape == (15060, 15)
    assert train.attrs["rows_read"] == 32561 and test.attrs["rows_read"] == 16281
    assert train.attrs["rows_dropped_missing"] == 32561 - 30162
    assert test.attrs["rows_dropped_missing"] == 16281 - 15060
    assert list(train.columns) == schema.names == list(test.columns)
    assert schema.label_prior == "dp"


def test_schema_accepts_every_row_of_both_files(adult_full):
    train, test, schema = adult_full
    validate_table(train, schema)  # raises on any unknown category or out-of-bounds value
    validate_table(test, schema)
    assert set(test[ADULT_LABEL]) == set(ADULT_CLASSES)  # the "." of adult.test is gone
    assert not (train == "?").any().any() and not (test == "?").any().any()


def test_numeric_columns_are_floats_and_text_is_stripped(adult_full):
    train, _, schema = adult_full
    for column in schema.columns:
        if column.is_numeric:
            assert train[column.name].dtype == np.float64
        else:
            values = train[column.name].tolist()
            assert all(isinstance(v, str) and v == v.strip() for v in values[:100])


def test_balanced_tables_have_equal_classes_and_keep_every_minority_row(adult_balanced, adult_full):
    train, test, schema = adult_balanced
    full_train, full_test, _ = adult_full
    for balanced, full, size in ((train, full_train, 15016), (test, full_test, 7400)):
        counts = balanced[ADULT_LABEL].value_counts()
        assert len(balanced) == size
        assert counts["<=50K"] == counts[">50K"] == (full[ADULT_LABEL] == ">50K").sum()
        assert balanced.attrs["class_counts"] == {"<=50K": size // 2, ">50K": size // 2}
        # every kept row is a row of the full table (a subsample, nothing invented)
        merged = balanced.merge(full.drop_duplicates(), how="left", indicator=True)
        assert (merged["_merge"] == "both").all()
    assert schema.label_prior == "uniform"
    validate_table(train, schema)
    validate_table(test, schema)


def test_balancing_is_seeded(adult_balanced):
    train, test, _ = adult_balanced
    again = load_adult_file("train")
    pd.testing.assert_frame_equal(train, again)
    pd.testing.assert_frame_equal(test, load_adult_file("test"))
    other = load_adult_file("train", seed=1)
    assert len(other) == len(train) and not other.equals(train)


def test_schema_categories_are_the_code_book_lists():
    root, _ = resolve_data_dir()
    names = root / "adult" / "adult.names"
    if not names.is_file():
        pytest.skip(f"adult.names not available (set {DATA_DIR_ENV})")
    book = {}
    for line in names.read_text().splitlines():
        match = re.match(r"^([a-z-]+): (.+)\.$", line.strip())
        if match and match.group(2) != "continuous":
            book[match.group(1)] = tuple(v.strip() for v in match.group(2).split(","))
    schema = adult_schema()
    categorical = [c for c in schema.feature_columns if not c.is_numeric]
    assert {c.name for c in categorical} == set(book)
    for column in categorical:
        assert column.categories == book[column.name]


# -- the schema and the reader without the real files --------------------------------------------
def test_schema_declares_only_public_bounds():
    schema = adult_schema()
    assert Schema.from_dict(schema.to_dict()) == schema
    assert schema.label == ADULT_LABEL and schema.label_column.categories == ADULT_CLASSES
    # no public bound for these two: estimated under DP (charged) during fit
    assert {c.name for c in schema.incomplete_columns} == {"fnlwgt", "capital-loss"}
    bounds = {c.name: (c.lower, c.upper) for c in schema.columns if c.is_complete and c.is_numeric}
    assert bounds == {
        "age": (17, 90),
        "education-num": (1, 16),
        "capital-gain": (0, 99999),
        "hours-per-week": (1, 99),
    }
    assert adult_schema("dp").label_prior == "dp"


ROWS = [
    "39, State-gov, 77516, Bachelors, 13, Never-married, Adm-clerical, Not-in-family, White, "
    "Male, 2174, 0, 40, United-States, <=50K.",
    "50, ?, 83311, Bachelors, 13, Married-civ-spouse, Exec-managerial, Husband, White, Male, 0, "
    "0, 13, United-States, >50K.",
    "38, Private, 215646, HS-grad, 9, Divorced, Handlers-cleaners, Not-in-family, White, Male, "
    "0, 0, 40, ?, <=50K",
    "52, Self-emp-inc, 287927, HS-grad, 9, Married-civ-spouse, Exec-managerial, Wife, White, "
    "Female, 15024, 0, 40, United-States, >50K",
]


def test_reader_drops_missing_rows_and_strips_the_label_dot(tmp_path: Path):
    path = tmp_path / "adult.test"
    path.write_text("\n".join([HEADER, *ROWS]) + "\n\n")
    frame, dropped = read_adult_file(path)
    assert dropped == 2 and len(frame) == 2
    assert frame[ADULT_LABEL].tolist() == ["<=50K", ">50K"]
    assert frame["capital-gain"].tolist() == [2174.0, 15024.0]
    assert frame["workclass"].tolist() == ["State-gov", "Self-emp-inc"]
    validate_table(frame, adult_schema())


def test_reader_refuses_a_file_without_the_header(tmp_path: Path):
    path = tmp_path / "adult.data"
    path.write_text("\n".join(ROWS) + "\n")
    with pytest.raises(DataError, match="expected the header"):
        read_adult_file(path)


def test_reader_names_a_bad_number(tmp_path: Path):
    path = tmp_path / "adult.data"
    path.write_text("\n".join([HEADER, ROWS[0].replace("77516", "lots")]) + "\n")
    with pytest.raises(DataError, match="fnlwgt = 'lots' is not a number"):
        read_adult_file(path)


def test_missing_folder_says_where_it_looked(tmp_path: Path):
    with pytest.raises(DataError, match="cannot find adult/adult.data"):
        load_adult(tmp_path)


def test_balance_classes_keeps_minority_and_refuses_an_empty_one():
    frame = pd.DataFrame({ADULT_LABEL: ["<=50K"] * 7 + [">50K"] * 3, "i": range(10)})
    out = balance_classes(frame, np.random.default_rng(0))
    assert out[ADULT_LABEL].value_counts().to_dict() == {"<=50K": 3, ">50K": 3}
    assert set(out.loc[out[ADULT_LABEL] == ">50K", "i"]) == {7, 8, 9}
    assert out["i"].is_monotonic_increasing  # file order kept
    with pytest.raises(DataError, match="cannot balance"):
        balance_classes(frame.iloc[:7], np.random.default_rng(0))


@pytest.mark.slow
def test_a_short_private_fit_on_adult_charges_the_undeclared_bounds(adult_balanced):
    train, _, schema = adult_balanced
    small = train.sample(1200, random_state=0).reset_index(drop=True)
    config = DPCGANConfig(batch_size=60)
    synth = Synthesizer(
        schema, method="dpcgan", epsilon=3.0, epochs=6.0, method_options=config, seed=0,
        progress=False, anchor=None,
    )  # fmt: skip
    with warnings.catch_warnings():  # the DP bounds may cut a few extreme values
        warnings.filterwarnings("ignore", message="values outside the bounds")
        synth.fit(small)
    names = [e.name for e in synth.ledger_.entries]
    assert any("fnlwgt" in n for n in names) and any("capital-loss" in n for n in names)
    assert not any("label prior" in n for n in names)  # uniform: free
    assert synth.privacy_spent().epsilon <= 3.0
    rows = synth.sample(200, seed=1)
    validate_table(rows, synth.schema_)
    assert set(rows[ADULT_LABEL]) <= set(ADULT_CLASSES)
