"""The anchored table synthesizer end to end: ledger, budget, public-only plan, conditioning."""

from __future__ import annotations

import math

import dp_accounting
import numpy as np
import pandas as pd
import pytest

import dpforge
from dpforge.evaluation.fidelity import discretize
from dpforge.methods.dpcgan import DPCGANConfig
from dpforge.privacy.discrete_gaussian import DiscreteGaussianDpEvent
from dpforge.statistics.anchor import AnchorConfig

FAST = AnchorConfig(steps=60, batch_size=256)


def _fit(frame, schema, **options):
    settings = dict(epsilon=3.0, delta=1e-5, seed=0, progress=False, anchor=FAST)
    settings.update(options)
    return dpforge.Synthesizer(schema, **settings).fit(frame)


@pytest.fixture(scope="module")
def fitted(cancer):
    frame, schema = cancer
    return _fit(frame, schema)


def test_every_measurement_is_charged_and_epsilon_stays_within_the_target(fitted):
    names = [e.name for e in fitted.ledger_.entries]
    assert names[0].startswith("record count")  # released first: it sizes the cells and totals
    names = names[1:]
    assert [n.split(":")[0] for n in names] == ["anchor"] * 4
    assert "fine histograms of 6 numeric columns" in names[0]
    assert "12 marginals" in names[1] and "15 column pairs" in names[2]
    assert "6 selected column pairs" in names[3]
    for entry in fitted.ledger_.entries:  # one discrete Gaussian per table, count or score
        assert isinstance(getattr(entry.event, "event", entry.event), DiscreteGaussianDpEvent)
    report = fitted.privacy_spent()
    assert report.accountant == "pld"
    assert 2.9 < report.epsilon <= 3.0  # the whole budget, never more
    assert fitted.plan_.steps == 0  # marginals only: no discriminator step


def test_the_plan_depends_on_public_quantities_only(cancer):
    frame, schema = cancer
    changed = frame.copy()
    changed.loc[0, "mean_radius"] = changed["mean_radius"].min()
    changed.loc[1, "diagnosis"] = "benign" if frame.loc[1, "diagnosis"] != "benign" else "malignant"
    one, two = _fit(frame, schema), _fit(changed, schema)
    assert one.anchor_plan_ == two.anchor_plan_
    assert one.ledger_.to_dict() == two.ledger_.to_dict()


def test_conditional_samples_follow_the_distribution_given_the_label(cancer):
    frame, schema = cancer
    synth = _fit(frame, schema, epsilon=math.inf, anchor=AnchorConfig(steps=300, batch_size=512))
    real = discretize(frame, schema, 8)
    for label in ("malignant", "benign"):
        rows = synth.sample(4000, conditions={"diagnosis": label}, seed=1)
        assert (rows["diagnosis"] == label).all()
        cells = discretize(rows, schema, 8)
        given = real[frame["diagnosis"] == label]
        tvd = (
            0.5
            * np.abs(
                cells["mean_radius"].value_counts(normalize=True).reindex(range(8), fill_value=0)
                - given["mean_radius"].value_counts(normalize=True).reindex(range(8), fill_value=0)
            ).sum()
        )
        assert tvd < 0.15, (label, tvd)
    other = real[frame["diagnosis"] == "benign"]["mean_radius"].mean()
    malignant = real[frame["diagnosis"] == "malignant"]["mean_radius"].mean()
    assert malignant > other + 1  # the real classes differ, so the check above has teeth


def test_the_non_private_baseline_records_non_private_events(cancer):
    frame, schema = cancer
    synth = _fit(frame, schema, epsilon=math.inf)
    assert all(e.event == dp_accounting.NonPrivateDpEvent() for e in synth.ledger_.entries)
    assert synth.privacy_spent().epsilon == math.inf


def test_marginals_and_discriminator_share_the_budget(cancer):
    frame, schema = cancer
    config = DPCGANConfig(batch_size=64, generator_hidden=(32,), discriminator_hidden=(32,))
    synth = _fit(
        frame, schema, anchor=AnchorConfig(share=0.5, steps=30, batch_size=256),
        method_options=config, epochs=12.0,
    )  # fmt: skip
    names = [e.name for e in synth.ledger_.entries]
    assert names[-1].startswith("dpcgan:") and synth.plan_.steps > 0
    assert synth.privacy_spent().epsilon <= 3.0


def test_discriminator_options_need_a_discriminator(cancer):
    frame, schema = cancer
    with pytest.raises(dpforge.errors.PrivacyError, match="anchor share to 0"):
        _fit(frame, schema, noise_multiplier=1.0)


def test_an_anchored_model_folder_samples_the_same_rows(fitted, tmp_path):
    path = fitted.save(tmp_path / "model")
    loaded = dpforge.load(path)
    pd.testing.assert_frame_equal(fitted.sample(50, seed=3), loaded.sample(50, seed=3))


def test_numeric_cells_follow_the_data_and_travel_with_the_model(fitted, cancer, tmp_path):
    frame, schema = cancer
    edges = fitted.encoder_.bins["mean_area"].edges
    public = np.linspace(schema.column("mean_area").lower, schema.column("mean_area").upper, 63)
    assert not np.allclose(edges[: len(public)], public[: len(edges)])  # DP-placed, not uniform
    loaded = dpforge.load(fitted.save(tmp_path / "cells"))
    np.testing.assert_array_equal(loaded.encoder_.bins["mean_area"].edges, edges)
