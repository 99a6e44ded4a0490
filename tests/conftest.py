"""Shared fixtures: small real tables and fast, reproducible settings."""

from __future__ import annotations

import os

import numpy as np
import pandas as pd
import pytest
import torch
from sklearn.datasets import load_breast_cancer

from dpforge.schema.table import Column, Schema

# Tiny networks run faster on one thread, and CI has two cores shared with pytest itself.
torch.set_num_threads(1)
# The files whose tests fit models end to end, start other processes (the command line, Spark,
# Flower, torchrun) or draw many examples: each of them takes seconds, together most of the
# suite. `python3 -m pytest -m "not slow"` leaves them out (the quick subset, under 4 minutes
# on 2 cores); every room keeps its unit tests there. A test elsewhere that fits a model end to
# end marks itself (`@pytest.mark.slow`).
SLOW_FILES = frozenset(
    {
        "test_arrays_anchor.py",
        "test_arrays_end_to_end.py",
        "test_images_large.py",
        "test_kill_resume.py",
        "test_pipeline_fixtures.py",
        "test_real_tables.py",
        "test_rules_fit.py",
    }
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Marks the tests of SLOW_FILES slow."""
    for item in items:
        if item.path.name in SLOW_FILES:
            item.add_marker(pytest.mark.slow)


# Rich wraps console lines at the terminal's width (80 without one): the messages the tests
# read name long temporary paths, which a wrap would split mid-name.
os.environ["COLUMNS"] = "1000"


@pytest.fixture(scope="session")
def cancer() -> tuple[pd.DataFrame, Schema]:
    """scikit-learn's breast-cancer records (569 real patients), 6 features + label.

    The bounds are declared here for the tests (they are not public knowledge; the demo
    estimates them under DP instead).
    """
    raw = load_breast_cancer(as_frame=True)
    features = raw.data.iloc[:, :6]
    frame = features.copy()
    frame.columns = [c.replace(" ", "_") for c in frame.columns]
    frame["diagnosis"] = np.asarray(raw.target_names, dtype=object)[raw.target.to_numpy()]
    columns = tuple(
        Column(
            name,
            "continuous",
            lower=float(np.floor(frame[name].min())),
            upper=float(np.ceil(frame[name].max())),
        )
        for name in frame.columns[:-1]
    ) + (Column("diagnosis", "categorical", categories=("malignant", "benign")),)
    return frame, Schema(columns, label="diagnosis", label_prior="uniform")


@pytest.fixture
def files(tmp_path, cancer):
    """The cancer table and its schema as files, as a user of the command line has them."""
    frame, schema = cancer
    data = tmp_path / "data.csv"
    frame.to_csv(data, index=False)
    schema_path = tmp_path / "schema.json"
    schema_path.write_text(schema.to_json())
    return data, schema_path
