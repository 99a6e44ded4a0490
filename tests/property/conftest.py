"""One tiny model, fitted once per session; tests mutate copies of its folder."""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from safetensors.torch import load_file, save_file

import dpforge
from dpforge.methods.dpcgan import DPCGANConfig
from dpforge.schema.table import Column, Schema

TINY = DPCGANConfig(batch_size=32, latent_dim=4, generator_hidden=(8,), discriminator_hidden=(8,))


@pytest.fixture(scope="session")
def small_table(cancer) -> tuple[pd.DataFrame, Schema]:
    """200 real records (breast cancer), 2 numeric features, an integer code and the label."""
    frame, _ = cancer
    rng = np.random.default_rng(0)
    table = frame.iloc[:200, :2].copy()
    table.columns = ["radius", "texture"]
    table["grade"] = rng.integers(1, 4, size=len(table))
    table["diagnosis"] = frame["diagnosis"].iloc[:200].to_numpy()
    schema = Schema(
        (
            Column("radius", "continuous", 0.0, 40.0),
            Column("texture", "continuous", 0.0, 50.0),
            Column("grade", "integer", 1.0, 3.0),
            Column("diagnosis", "categorical", categories=("malignant", "benign")),
        ),
        label="diagnosis",
        label_prior="dp",
    )
    return table, schema


@pytest.fixture(scope="session")
def model_folders(small_table, tmp_path_factory) -> dict[bool, Path]:
    """The folder as saved (True: weights carry the digest of model.json) and a copy as an
    older dpforge saved it (False: no digest), so that every other check is reached too."""
    frame, schema = small_table
    # epsilon = inf: the same code path without noise and without calibrating sigma (seconds
    # saved); the ledger then holds non-private events and reports epsilon = inf.
    synth = dpforge.Synthesizer(
        schema,
        epsilon=math.inf,
        epochs=16,
        method_options=TINY,
        seed=0,
        progress=False,
        anchor=None,
    ).fit(frame)
    root = tmp_path_factory.mktemp("models")
    saved = synth.save(root / "saved")
    older = root / "older"
    shutil.copytree(saved, older)
    weights = older / "generator.safetensors"
    save_file(load_file(str(weights)), str(weights))  # the same tensors, no metadata
    return {True: saved, False: older}


@pytest.fixture(scope="session")
def table_files(small_table, tmp_path_factory) -> tuple[Path, Path]:
    """The small table as a CSV file and its schema as a JSON file, as a user has them."""
    frame, schema = small_table
    root = tmp_path_factory.mktemp("table")
    frame.to_csv(root / "data.csv", index=False)
    (root / "schema.json").write_text(schema.to_json())
    return root / "data.csv", root / "schema.json"
