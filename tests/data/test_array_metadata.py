"""The DP completion of an image/series schema: which releases, what they cost, what they give."""

from __future__ import annotations

import numpy as np

from dpforge.data.arrays import ArrayData
from dpforge.privacy.ledger import PrivacyLedger
from dpforge.schema.array import ArraySchema, Channel
from dpforge.statistics.dp_stats import histogram_event, noise_multiplier_for
from dpforge.statistics.metadata import MetadataBudget, array_releases_needed, complete_array_schema


def series(n: int = 800, seed: int = 0) -> tuple[ArrayData, ArraySchema]:
    g = np.random.default_rng(seed)
    values = g.normal(0.5, 1.0, size=(n, 1, 24))
    labels = g.choice(["a", "b"], size=n)
    schema = ArraySchema(
        kind="timeseries", shape=(1, 24), channels=(Channel("demand"),), label="class",
        classes=("a", "b"), label_prior="uniform",
    )  # fmt: skip
    return ArrayData(values, labels), schema


def test_a_channel_range_is_two_single_histograms_within_the_metadata_budget():
    data, schema = series()
    assert array_releases_needed(schema) == (2, 0)
    ledger = PrivacyLedger()
    budget = MetadataBudget(epsilon=0.3, delta=1e-5)
    completed, prior = complete_array_schema(data, schema, budget, ledger, np.random.default_rng(1))
    sigma = noise_multiplier_for(0.3, 0.5e-5, 2)
    assert [entry.event for entry in ledger.entries] == [histogram_event(sigma)] * 2
    assert ledger.epsilon(1e-5) <= 0.3 + 1e-3
    channel = completed.channels[0]
    plane = data.values.ravel()
    assert channel.lower < np.quantile(plane, 0.005) and channel.upper > np.quantile(plane, 0.995)
    assert channel.upper - channel.lower < 2.0 * (plane.max() - plane.min())
    np.testing.assert_allclose(prior, [0.5, 0.5])


def test_the_non_private_baseline_records_non_private_events():
    data, schema = series()
    ledger = PrivacyLedger()
    budget = MetadataBudget(epsilon=0.0, delta=0.0, non_private=True)
    completed, _ = complete_array_schema(data, schema, budget, ledger, np.random.default_rng(1))
    assert [type(e.event).__name__ for e in ledger.entries] == ["NonPrivateDpEvent"] * 2
    plane = data.values.ravel()
    assert completed.channels[0].lower <= np.quantile(plane, 0.01)
    assert completed.channels[0].upper >= np.quantile(plane, 0.99)


def test_every_metadata_event_is_in_the_ledger_before_its_estimate_runs(monkeypatch):
    import pandas as pd

    from dpforge.privacy.person import PrivacyUnit
    from dpforge.schema.table import Column, Schema
    from dpforge.statistics import metadata

    g = np.random.default_rng(3)
    table = pd.DataFrame({"x": g.normal(50, 10, 2000), "c": g.choice(["a", "b"], 2000),
                          "y": g.choice(["p", "q"], 2000)})  # fmt: skip
    schema = Schema(
        columns=(Column("x", "continuous"), Column("c", "categorical"),
                 Column("y", "categorical", categories=("p", "q"))),
        label="y", label_prior="dp",
    )  # fmt: skip
    ledger, seen = PrivacyLedger(), []
    for name in ("dp_bounds", "dp_categories", "dp_label_prior"):
        real = getattr(metadata, name)

        def spy(*args, _real=real, **kwargs):
            recorded = len(ledger.entries)
            estimate = _real(*args, **kwargs)
            seen.append((recorded, estimate.event, estimate.extra_delta))
            return estimate

        monkeypatch.setattr(metadata, name, spy)
    unit = PrivacyUnit("person", 2)
    budget = MetadataBudget(epsilon=1.0, delta=1e-5, unit=unit)
    metadata.complete_schema(table, schema, budget, ledger, np.random.default_rng(4))
    assert [n for n, _, _ in seen] == [1, 2, 3]  # each estimate ran after its entry
    entries = [(e.event, e.extra_delta) for e in ledger.entries]
    assert entries == [(event, extra) for _, event, extra in seen]
    sigma = noise_multiplier_for(1.0, 0.5e-5, 4, rows=2)
    assert ledger.entries[2].event == histogram_event(sigma, 2)
    assert ledger.epsilon(1e-5) <= 1.0 + 1e-3  # the share, by the accountant of its events
