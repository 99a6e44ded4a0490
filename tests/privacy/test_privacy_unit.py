"""Several rows per person (issue 21.6): contribution bounding and the sensitivities it fixes.

A person is every row sharing a key of the unit column; at most k of them are kept, at random.
After that, neighbouring tables differ by at most k rows of one person, and every release of the
table path adds k times its per-record noise under the same dp-accounting event. These tests
check the bounding, each statistic's scaled noise (pinned to the per-record noise of the same
draws), and numerically that one person's k rows move each exact aggregate by at most the
stated sensitivity (and can reach it).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from dpforge.data.encoder import TableEncoder
from dpforge.data.tables import validate_table
from dpforge.errors import DataError, PrivacyError, SchemaError
from dpforge.pipeline.measure import release_count
from dpforge.privacy import release_noise
from dpforge.privacy.ledger import PrivacyLedger
from dpforge.privacy.person import PrivacyUnit, frame_keys, kept_rows, person_unit, row_priority
from dpforge.privacy.release_noise import count_event, release_event
from dpforge.schema.table import Column, Schema
from dpforge.statistics.cells import measure_fine_histograms
from dpforge.statistics.dp_stats import bounds_event, dp_bounds, dp_categories, dp_label_prior
from dpforge.statistics.marginals import (
    count_tables,
    default_marginals,
    encoded_cells,
    measure_marginals,
)
from dpforge.statistics.selection import candidate_pairs, pair_scores, select_pairs

K = 3


# -- bounding ----------------------------------------------------------------------------------
def _keys(rng: np.random.Generator, n: int = 2000, units: int = 300) -> np.ndarray:
    return np.array([f"p{i}" for i in rng.zipf(1.6, n) % units], dtype=object)


def test_bounding_keeps_at_most_k_rows_per_person_and_every_row_of_a_small_one():
    keys = _keys(np.random.default_rng(0))
    kept = kept_rows(keys, K, np.random.default_rng(1).random(keys.size))
    before = pd.Series(keys).value_counts()
    after = pd.Series(keys[kept]).value_counts()
    assert after.max() == K and (after == before.clip(upper=K)[after.index]).all()
    assert set(after.index) == set(before.index)  # nobody is dropped whole
    assert np.all(np.diff(kept) > 0)  # original order kept


def test_bounding_follows_the_seed_and_is_uniform_within_a_person():
    keys = np.array(["a"] * 10 + ["b"] * 2, dtype=object)
    records = pd.DataFrame({"x": np.arange(12), "c": list("uvwxyzuvwxyz")})
    same = [kept_rows(keys, K, row_priority(records, 5)) for _ in range(2)]
    assert np.array_equal(*same)
    draws = np.stack([kept_rows(keys, K, row_priority(records, s)) for s in range(2000)])
    counts = np.bincount(draws.ravel(), minlength=12)
    assert np.allclose(counts[:10] / 2000, K / 10, atol=0.04)  # each of a's rows: 3 / 10
    assert (counts[10:] == 2000).all()  # b has 2 <= k rows: always both


def test_a_rows_priority_follows_its_values_not_its_position_or_types():
    records = pd.DataFrame({"n": pd.array([1, None, 3], dtype="Int64"), "c": ["a", None, "b"]})
    as_spark = pd.DataFrame({"c": ["b", "a", None], "n": [3.0, 1.0, np.nan]})  # reordered
    assert np.array_equal(row_priority(records, 7)[[2, 0, 1]], row_priority(as_spark, 7))
    assert not np.array_equal(row_priority(records, 7), row_priority(records, 8))


# -- options and bad input ---------------------------------------------------------------------
SCHEMA = Schema(
    (
        Column("person", "drop"),
        Column("colour", "categorical", categories=("red", "green", "blue")),
        Column("size", "continuous", lower=0.0, upper=10.0),
        Column("y", "categorical", categories=("no", "yes")),
    ),
    label="y",
)


@pytest.mark.parametrize(
    ("column", "k", "message"),
    [
        ("person", 0, "max_rows_per_unit must be a whole number >= 1, got 0"),
        ("person", 2.5, "whole number >= 1, got 2.5"),
        ("person", True, "whole number >= 1, got True"),
        ("person", None, "privacy_unit 'person' needs max_rows_per_unit"),
        (None, 2, "max_rows_per_unit=2 needs a privacy unit"),
    ],
)
def test_bad_unit_options_are_refused_with_what_to_pass(column, k, message):
    with pytest.raises(PrivacyError, match=message):
        person_unit(column, k)


def test_the_unit_column_must_be_an_identifier_column_of_the_schema():
    with pytest.raises(SchemaError, match="no column 'persn' \\(did you mean 'person'\\?\\)"):
        PrivacyUnit("persn", 2).check_schema(SCHEMA)
    with pytest.raises(PrivacyError, match="privacy unit 'colour' is declared categorical.*drop"):
        PrivacyUnit("colour", 2).check_schema(SCHEMA)
    PrivacyUnit("person", 2).check_schema(SCHEMA)  # drop: accepted


def test_a_missing_key_or_a_missing_unit_column_is_refused_naming_column_and_row():
    frame = pd.DataFrame({"person": ["a", "b", " ", "c"], "colour": ["red"] * 4})
    with pytest.raises(DataError, match="column 'person' \\(the privacy unit\\), row 3: missing"):
        frame_keys(frame, "person")
    with pytest.raises(DataError, match="privacy unit 'id' is not a column of the data"):
        frame_keys(frame, "id")


# -- every statistic adds k times its per-record noise, same event -----------------------------
def _encoded(frame: pd.DataFrame):
    schema = Schema(SCHEMA.columns[1:], label="y")
    encoder = TableEncoder(schema, n_bins=8)
    cells = encoded_cells(encoder, validate_table(frame, schema), "y")
    return encoder, cells


def _frame(rng: np.random.Generator, n: int) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "colour": rng.choice(["red", "green", "blue"], n),
            "size": np.round(rng.uniform(0, 10, n), 2),
            "y": rng.choice(["no", "yes"], n),
        }
    )


@pytest.fixture
def count_stds(monkeypatch) -> list[float]:
    """The scale of every discrete Gaussian a seeded count release asks for (noise 0 drawn)."""
    stds: list[float] = []

    def record(sigma, shape, rng):
        stds.append(float(sigma))
        return np.zeros(shape)

    monkeypatch.setattr(release_noise, "discrete_gaussian", record)
    return stds


def test_marginals_fine_histograms_and_pair_scores_add_k_times_the_noise(count_stds):
    encoder, cells = _encoded(_frame(np.random.default_rng(0), 200))
    marginals = default_marginals(encoder.spans, "y")
    for rows in (1, K):
        measure_marginals(cells, marginals, 0.7, np.random.default_rng(3), 200.0, rows)
    one = 0.7 * math.sqrt(len(marginals))
    assert count_stds == [pytest.approx(one)] * len(marginals) + [pytest.approx(K * one)] * len(
        marginals
    )
    column = SCHEMA.column("size")
    frame = pd.DataFrame({"size": np.linspace(0, 10, 50)})
    count_stds.clear()
    for rows in (1, K):
        measure_fine_histograms(frame, [column], 0.5, np.random.default_rng(4), rows)
    assert count_stds == [pytest.approx(0.5), pytest.approx(K * 0.5)]
    model = {p: np.full((3, 8), 1 / 24) for p in candidate_pairs(encoder.spans)}
    count_stds.clear()  # the scores, whole counts, get the discrete Gaussian
    select_pairs(cells, model, 1, 0.9, 1.0, np.random.default_rng(5), 200.0, rows=K)
    assert count_stds == [pytest.approx(0.9 * K * math.sqrt(len(model)))]


def test_metadata_estimates_add_k_times_the_noise_and_record_its_zcdp(count_stds):
    values = np.random.default_rng(0).normal(50, 10, 3000)
    one = dp_bounds(values, 2.0 * K, np.random.default_rng(6))
    k = dp_bounds(values, 2.0, np.random.default_rng(6), sensitivity=K)
    assert k.value == one.value  # the same draws, scaled by k: what sigma * k gives
    assert k.event == bounds_event(2.0, rows=K)  # a person's rows may fall in several bins
    assert k.event.events[0] == release_event(2.0)
    labels = np.array(["a"] * 700 + ["b"] * 300, dtype=object)
    prior_k = dp_label_prior(labels, ["a", "b"], 5.0, np.random.default_rng(7), sensitivity=K)
    prior_one = dp_label_prior(labels, ["a", "b"], 5.0 * K, np.random.default_rng(7))
    assert np.allclose(prior_k.value, prior_one.value)
    assert prior_k.event == release_event(5.0)
    assert set(count_stds) == {2.0 * K, 5.0 * K}  # every histogram drawn at sigma * k
    count_stds.clear()
    ledger, rng = PrivacyLedger(), np.random.default_rng(8)
    release_count(10_000, 40.0, ledger, rng, PrivacyUnit("person", K))
    release_count(10_000, 40.0, PrivacyLedger(), np.random.default_rng(8))
    assert count_stds == [pytest.approx(K * 40.0), pytest.approx(40.0)]
    assert ledger.entries[0].event == count_event(40.0, rows=K)  # sensitivity K, noise K x 40
    assert ledger.entries[0].name.endswith("per person (3 rows): L2 sensitivity x3")


def test_category_threshold_covers_a_person_with_k_rows_in_new_categories():
    """A person's own category has count <= k: at sigma 0 the threshold is k itself."""
    values = np.array(["a"] * 3 + ["b"] * 2 + ["c"], dtype=object)
    released = dp_categories(values, 0.0, 1e-6, np.random.default_rng(0), max_rows=K).value
    assert released == ["a"]  # count 3 = k passes; 2 and 1 could be one person's rows
    assert dp_categories(values, 0.0, 1e-6, np.random.default_rng(0)).value == ["a", "b", "c"]
    sigma, delta = 2.0, 1e-6
    tau = K + sigma * K * -_inv_normal(delta / K)
    # each of k new categories (count <= k) is released with probability <= delta / k
    assert _tail((tau - K) / (sigma * K)) * K == pytest.approx(delta)


def _inv_normal(p: float) -> float:
    from statistics import NormalDist

    return NormalDist().inv_cdf(p)


def _tail(z: float) -> float:
    return 0.5 * math.erfc(z / math.sqrt(2))


# -- numeric sensitivity: one person's k rows move each exact aggregate by at most k ----------
def _neighbours(same_rows: bool) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A bounded table and the same table with one more person's k rows (identical rows when
    ``same_rows``: the worst case, all in one cell of every histogram)."""
    rng = np.random.default_rng(11)
    base = _frame(rng, 400)
    person = _frame(rng, 1).iloc[[0] * K] if same_rows else _frame(rng, K)
    return base, pd.concat([base, person], ignore_index=True)


@pytest.mark.parametrize("same_rows", [True, False])
def test_one_persons_rows_move_every_released_aggregate_by_at_most_the_stated_sensitivity(
    same_rows,
):
    small, large = _neighbours(same_rows)
    (encoder, a), (_, b) = _encoded(small), _encoded(large)
    marginals = default_marginals(encoder.spans, "y")
    tables = zip(count_tables(b, marginals), count_tables(a, marginals), strict=True)
    diff = [x - y for x, y in tables]
    each = [float(np.linalg.norm(d)) for d in diff]
    assert max(each) <= K and np.linalg.norm(np.concatenate([d.ravel() for d in diff])) <= (
        K * math.sqrt(len(marginals)) + 1e-9
    )
    pairs = candidate_pairs(encoder.spans)
    model = {p: np.full(tuple(s.dim for s in encoder.spans if s.column in p), 0.0) for p in pairs}
    scores = pair_scores(b, model, 400.0) - pair_scores(a, model, 400.0)
    assert np.abs(scores).max() <= K
    column = SCHEMA.column("size")
    fine = [measure_fine_histograms(t, [column], 0.0, None)["size"] for t in (small, large)]
    assert np.linalg.norm(fine[1] - fine[0]) <= K
    assert len(large) - len(small) == K  # the record count moves by k
    if same_rows:  # the bound is reached: k is not loose for these queries
        assert max(each) == pytest.approx(K) and np.abs(scores).max() == K


# -- refused combinations ------------------------------------------------------------------------
def test_per_row_dp_sgd_with_a_privacy_unit_is_refused_before_the_data_are_read():
    """dpcgan and dpwgan refine per person; GS-WGAN (records split among critics), the
    Bayesian bound and microbatches would stay per row: refused, saying what to pass."""
    from dpforge.methods.dpcgan import DPCGANConfig
    from dpforge.methods.dpwgan import DPWGANConfig
    from dpforge.statistics.anchor import AnchorConfig
    from dpforge.synthesizer import Synthesizer

    unit = {"privacy_unit": "person", "max_rows_per_unit": 2}
    for anchor in (AnchorConfig(share=0.5), None):
        for method in ("dpwgan", "dpcgan"):
            Synthesizer(SCHEMA, method=method, anchor=anchor, **unit).check_options()
        refused = [
            ({"method": "gswgan"}, "use --refine dpwgan or dpcgan"),
            ({"method": "dpwgan", "method_options": DPWGANConfig(bayesian_accounting=True)},
             "leave out bayesian_accounting"),
            ({"method": "dpcgan", "method_options": DPCGANConfig(microbatches=4)},
             "leave out microbatches"),
        ]  # fmt: skip
        for options, message in refused:
            synth = Synthesizer(SCHEMA, anchor=anchor, **options, **unit)
            with pytest.raises(PrivacyError, match=message):
                synth.check_options()
    Synthesizer(SCHEMA, **unit).check_options()  # anchor share 1: no discriminator at all


def test_the_hyperparameter_search_refuses_a_privacy_unit():
    from dpforge.synthesizer import Synthesizer
    from dpforge.tuning import PublicScore, Repetitions, tune

    synth = Synthesizer(SCHEMA, privacy_unit="person", max_rows_per_unit=2)
    score = PublicScore(lambda model: 0.0)
    with pytest.raises(PrivacyError, match="search without privacy_unit"):
        tune([synth], pd.DataFrame(), score, Repetitions(2.0), np.random.default_rng(0))


def test_an_unseeded_run_keeps_the_same_rows_when_it_resumes_from_its_checkpoint(tmp_path):
    """Without a seed the rows kept are drawn from the OS once per checkpoint folder and kept
    there, so that a resumed run reads the records its checkpoint's fingerprint was made on."""
    from dpforge.engines import LocalEngine
    from dpforge.kinds import TableKind
    from dpforge.pipeline.checkpoints import BOUNDING_SEED
    from dpforge.pipeline.measure import check_records
    from dpforge.synthesizer import Synthesizer

    frame = _frame(np.random.default_rng(2), 300)
    frame.insert(0, "person", [f"p{i % 40}" for i in range(300)])
    kept = []
    for _ in range(2):
        synth = Synthesizer(
            SCHEMA, privacy_unit="person", max_rows_per_unit=K, checkpoint_dir=tmp_path / "ck"
        )
        engine = LocalEngine(frame)
        assert check_records(synth._run_settings(), engine) == 40 * K
        kept.append(TableKind.fingerprint(engine.read("measure")))
    assert kept[0] == kept[1] and (tmp_path / "ck" / BOUNDING_SEED).is_file()


def test_images_and_series_refuse_a_privacy_unit():
    from dpforge.kinds.arrays import ArrayKind
    from dpforge.schema.array import ArraySchema

    with pytest.raises(PrivacyError, match="applies to tables only"):
        PrivacyUnit("person", 2).check_schema(object.__new__(ArraySchema))
    with pytest.raises(PrivacyError, match="applies to tables only"):
        ArrayKind.validate_bounded(None, None, "error", PrivacyUnit("person", 2), None)
