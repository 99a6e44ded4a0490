"""Shared fixtures: small real tables and fast, reproducible settings."""

from __future__ import annotations

import os

import numpy as np
import pandas as pd
import pytest
import torch
from sklearn.datasets import load_breast_cancer
from threadpoolctl import threadpool_limits

from dpforge.schema.table import Column, Schema

# One thread per test process for PyTorch, NumPy's OpenBLAS and OpenMP: pytest-xdist already
# runs one worker per core, and a second thread per worker only contends with the other worker
# (OpenBLAS's threads spin while they wait). Measured on three NumPy-heavy files (statistics'
# anchored fits, heaps and released rows), 2 loaded cores: 34 % more CPU and 42 % more wall
# time with the default two threads. The variables reach the processes the tests start.
for _variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")
threadpool_limits(1)
torch.set_num_threads(1)

# The files whose tests fit models end to end, start other processes (the command line, Spark,
# Flower, torchrun) or draw many examples: each of them takes seconds, together most of the
# suite. `python3 -m pytest -m "not slow"` leaves them out, and every test that starts Spark
# (the `spark` fixture): the quick subset, under 4 minutes on 2 cores, where every room keeps
# its unit tests. A test elsewhere that fits a model end to end marks itself
# (`@pytest.mark.slow`).
SLOW_FILES = frozenset(
    {
        "test_arrays_anchor.py",
        "test_arrays_end_to_end.py",
        "test_images_large.py",
        "test_kill_resume.py",
        "test_pipeline_fixtures.py",
        "test_real_tables.py",
        "test_rules_fit.py",
        "test_federated_deploy.py",
        "test_federated_images_deploy.py",
        "test_distributed.py",
        "test_audit_training_step.py",
        "test_property_calculator.py",
        "test_property_options.py",
        "test_property_models.py",
        "test_resume.py",
        "test_released_categories.py",
        "test_anchored_fit.py",
        "test_report.py",
    }
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Marks the tests of SLOW_FILES, and those that start Spark, slow."""
    for item in items:
        if item.path.name in SLOW_FILES or "spark" in getattr(item, "fixturenames", ()):
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
