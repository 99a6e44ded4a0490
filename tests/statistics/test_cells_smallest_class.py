"""Cells sized for the smallest class (issue 22, nmes): the count follows the label prior as
released or declared, never the records."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import dpforge
from dpforge.schema.table import Column, Schema
from dpforge.statistics.anchor import AnchorConfig
from dpforge.statistics.cells import class_count


def _table(n: int = 3000) -> tuple[pd.DataFrame, Schema]:
    rng = np.random.default_rng(0)
    label = rng.random(n) < 0.2
    frame = pd.DataFrame(
        {"income": rng.gamma(2.0, 2.0 + 3.0 * label), "y": np.where(label, "no", "yes")}
    )
    columns = (
        Column("income", "continuous", 0.0, 60.0),
        Column("y", "categorical", categories=("no", "yes")),
    )
    return frame, Schema(columns, label="y", label_prior={"no": 0.2, "yes": 0.8})


def _fit(frame, schema, rule: str):
    anchor = AnchorConfig(steps=0, scout_steps=0, batch_size=64, cells_class=rule)
    return dpforge.Synthesizer(
        schema, epsilon=0.3, delta=1e-5, seed=0, progress=False, anchor=anchor
    ).fit(frame)


def test_class_count_reads_the_prior_and_n_only():
    prior = np.array([0.25, 0.75])
    assert class_count(2000.0, prior, 2, "mean") == 1000.0  # N / K, the prior unused
    assert class_count(2000.0, prior, 2, "smallest") == 500.0  # N times the smallest share
    assert class_count(2000.0, None, 0, "smallest") == 2000.0  # no label: all records
    with pytest.raises(ValueError, match="cells_class"):
        AnchorConfig(cells_class="median").validate()


def test_smallest_class_gets_fewer_cells_from_public_inputs_only():
    frame, schema = _table()
    mean, small = _fit(frame, schema, "mean"), _fit(frame, schema, "smallest")
    k_mean, k_small = mean.encoder_.bins["income"].size, small.encoder_.bins["income"].size
    assert 16 <= k_small < k_mean  # 600 of 3,000 records in the smaller class: wider cells
    assert mean.ledger_.to_dict() == small.ledger_.to_dict()  # no new release, same noise
    changed = frame.copy()
    changed.loc[0, "income"] = 59.0  # a private value, and the label counts, changed
    changed.loc[1, "y"] = "no" if changed.loc[1, "y"] == "yes" else "yes"
    again = _fit(changed, schema, "smallest")
    assert again.encoder_.bins["income"].size == k_small
    assert again.ledger_.to_dict() == small.ledger_.to_dict()
    uniform = _fit(frame, schema.with_label_prior("uniform"), "smallest")
    assert uniform.encoder_.bins["income"].size == k_mean  # a uniform prior: N / K again
