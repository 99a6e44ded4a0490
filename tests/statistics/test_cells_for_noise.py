"""Numeric cells sized to the noise (issue 22.1): how many follows from public inputs only."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import dpforge
from dpforge.engines.aggregates import NoisyCells
from dpforge.privacy.discrete_gaussian import DiscreteGaussianDpEvent
from dpforge.schema.table import Column, Schema
from dpforge.statistics.anchor import AnchorConfig
from dpforge.statistics.cells import MIN_CELLS, cells_for_noise
from dpforge.statistics.rounds import AnchorPlan, round_one_cell_std

NO_TRAINING = AnchorConfig(steps=0, batch_size=64)


def _fit(frame, schema, epsilon, anchor=NO_TRAINING):
    return dpforge.Synthesizer(
        schema, epsilon=epsilon, delta=1e-5, seed=0, progress=False, anchor=anchor
    ).fit(frame)


def _sizes(synth) -> dict[str, int]:
    return {name: bins.size for name, bins in synth.encoder_.bins.items()}


def test_the_rule_gives_fewer_cells_to_less_data_or_more_noise():
    assert cells_for_noise(10_000, 10.0, 2, 64, 2.0) == 64  # capped at n_bins
    assert cells_for_noise(2_000, 10.0, 2, 64, 2.0) == 50  # 2000 / (2 * 2 * 10)
    assert cells_for_noise(2_000, 20.0, 2, 64, 2.0) == 25  # twice the noise, half the cells
    assert cells_for_noise(2_000, 10.0, 4, 64, 2.0) == 25  # twice the classes, half the cells
    assert cells_for_noise(100, 10.0, 2, 64, 2.0) == MIN_CELLS  # never fewer
    assert MIN_CELLS == 16 and cells_for_noise(502, 36.0, 2, 64, 2.0) == 16  # psid, epsilon 1:
    # the noise alone would give 3 cells; the floor, a public constant, gives 16
    assert cells_for_noise(502, 36.0, 2, 8, 2.0) == 8  # n_bins still caps it
    assert cells_for_noise(100, 0.0, 2, 64, 2.0) == 64  # no noise: every cell
    assert cells_for_noise(100, 10.0, 2, 64, 0.0) == 64  # the rule off


def test_cells_depend_on_public_inputs_only_and_the_ledger_keeps_its_kind(cancer):
    frame, schema = cancer
    changed = frame.copy()
    changed.loc[0, "mean_radius"] = changed["mean_radius"].max()
    changed.loc[1, "mean_area"] = changed["mean_area"].min()
    one, two = _fit(frame, schema, 1.0), _fit(changed, schema, 1.0)
    assert _sizes(one) == _sizes(two)  # a private value changed: the cell counts did not
    assert max(_sizes(one).values()) < 64  # 569 records at epsilon 1: fewer than n_bins
    assert one.ledger_.to_dict() == two.ledger_.to_dict()
    names = [e.name.split(":")[0] for e in one.ledger_.entries]
    assert names[1:] == ["anchor"] * 4  # cells, round 1, pair scores, pairs: as before
    events = [getattr(e.event, "event", e.event) for e in one.ledger_.entries]
    assert all(isinstance(e, DiscreteGaussianDpEvent) for e in events)
    assert one.privacy_spent().epsilon <= 1.0
    large = _sizes(_fit(frame, schema, 8.0))
    assert all(k < large[name] for name, k in _sizes(one).items())  # more budget, more cells


def test_an_integer_column_with_many_values_gets_cells_placed_by_its_histogram():
    rng = np.random.default_rng(0)
    label = rng.integers(0, 2, 600)
    frame = pd.DataFrame(
        {
            "visits": np.minimum(rng.poisson(3 + 20 * label), 99),  # 100 public values
            "y": np.where(label == 1, "yes", "no"),
        }
    )
    schema = Schema(
        (Column("visits", "integer", 0, 99), Column("y", "categorical", categories=("no", "yes"))),
        label="y",
    )
    synth = _fit(frame, schema, 1.0)
    bins = synth.encoder_.bins["visits"]
    assert bins.values.size == 0 and MIN_CELLS <= bins.size < 100  # not one cell per value
    assert "fine histograms of 1 numeric columns" in synth.ledger_.entries[1].name
    rows = synth.sample(2000, seed=1)
    assert np.array_equal(rows["visits"], np.round(rows["visits"]))  # whole numbers
    assert rows["visits"].between(0, 99).all()


def test_an_isolated_fine_peak_decodes_on_its_roundest_number():
    from dpforge.statistics.bins import NumericBins

    fine = np.linspace(0.0, 6.0, 1025)  # 1,024 fine cells of width 6/1024: 1.0 and 5.5 inside
    mass = np.zeros(1024)
    one, half = np.searchsorted(fine, 1.0, "right") - 1, np.searchsorted(fine, 5.5, "right") - 1
    mass[one], mass[half] = 300.0, 100.0  # two heaped values, nothing around them
    mass[600:700] = 5.0  # and a spread part, drawn uniformly inside its fine cells
    edges = np.array([0.0, 1.1, 5.0, 6.0])
    bins = NumericBins("x", 0.0, 6.0, False, edges, np.zeros(0), fine, mass)
    values = bins.decode(np.array([1] * 500 + [2] * 500 + [3] * 500), np.random.default_rng(0))
    assert set(values[:500]) == {1.0}  # exactly the heaped value, not 0.998 or 1.003
    assert set(values[1000:]) == {5.5}
    spread = values[500:1000]
    assert spread.min() >= fine[600] and spread.max() <= fine[700] and len(set(spread)) > 400


def test_pooling_sized_to_the_noise_keeps_mass_where_the_records_are():
    from dpforge.statistics.cells import block_size, fine_mass

    assert block_size(0.0, 3000) == 1 and block_size(5.0, 100_000) == 1  # little noise
    assert block_size(45.0, 3000) == 16  # nmes at epsilon 1: (1024 * 45 / 3000)^2 > 16
    assert block_size(45.0, 3000, n_fine=150) == 8  # a short integer grid pools less
    counts = np.zeros(1026)
    counts[1:101] = 30.0  # 3,000 records in the first tenth of the range
    noisy = counts + np.random.default_rng(0).normal(0.0, 45.0, counts.size)
    outside = [fine_mass(noisy, 3000.0, b)[100:].sum() / 3000.0 for b in (1, 16)]
    assert outside[1] < 0.5 * outside[0]  # pooled: far less mass spread where nobody is


class _SiteNoisedCells(NoisyCells):
    """Counts noised where the records are, as a federated engine's: every site adds its own
    noise, so the sum carries ``noise_factor`` times the asked sd."""

    noise_factor = 3.0

    def noisy_counts(self, marginals, std):
        raise NotImplementedError

    def noisy_scores(self, model, std):
        raise NotImplementedError


def test_round_one_cell_noise_is_what_the_counts_carry_at_the_sites():
    plan = AnchorPlan(round_one_noise=5.0)
    here = round_one_cell_std(plan, 4, {"y": np.zeros(3, dtype=np.int64)})
    assert here == pytest.approx(5.0 * 2)  # noise x rows x sqrt(4 marginals released together)
    assert round_one_cell_std(plan, 4, _SiteNoisedCells()) == pytest.approx(3 * here)
