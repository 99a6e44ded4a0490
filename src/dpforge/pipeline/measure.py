"""The measure stage: check the records, then run the planned releases on them.

With :mod:`dpforge.pipeline.refine`, the only stage that reads private records, and only
through the engine. Each release is recorded in the ledger before it runs (the kind's
anchoring plans its own); the releases are the metadata estimates of the schema's undeclared
parts, then the anchoring's measurements, then (tables) the adaptive pair selection.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dpforge import options as run_options
from dpforge.engines.base import MEASURE, Engine
from dpforge.errors import PrivacyError
from dpforge.kinds import Measured
from dpforge.pipeline.checkpoints import bounding_seed, check_resumable, save_measured
from dpforge.pipeline.plan import metadata_budget, size_noise
from dpforge.pipeline.run import RunSettings, RunSetup
from dpforge.privacy.ledger import PrivacyLedger
from dpforge.privacy.person import PER_RECORD, PrivacyUnit, person_codes
from dpforge.privacy.release_noise import (
    count_event,
    noise_generator,
    noisy_counts,
    release_event,
)

COUNT_ENTRY = "record count (sizes the sampling rate, cells and totals)"
PERSON_COUNT_ENTRY = "person count (sizes the discriminator's sampling rate over persons)"


def check_records(run: RunSettings, engine: Engine) -> int | None:
    """Check every record against the schema (bad input is refused, naming the record), then,
    with a privacy unit, keep at most k rows per person (random stream 6); returns the number
    of records kept (private: it sizes nothing that is released), or None from an engine that
    never learns it (federated sites release it with noise)."""
    data = engine.read(MEASURE)
    if run.unit.per_person:
        if not engine.bounds_persons:
            raise PrivacyError(
                "a privacy unit (rows per person) is not supported on this engine: a person's "
                "rows may sit at several sites; leave out --privacy-unit"
            )
        rng = np.random.default_rng(bounding_seed(run))
        records = run.kind.validate_bounded(data, run.schema, run.out_of_bounds, run.unit, rng)
    else:
        records = run.kind.validate(data, run.schema, run.out_of_bounds)
    engine.replace(records)
    return engine.size(MEASURE)


def release_size(
    run: RunSettings, n_records: int | None, ledger: PrivacyLedger, engine: Engine | None = None
) -> float:
    """The N that sizes q, the numeric cells and the marginals' totals, so that no exact size
    reaches what is released (design.md rule 10): the caller's public ``record_count`` (a
    declared N, or one released before, as the hyperparameter search does), else a release
    (noised by ``engine``'s parties when it never learns N: ``n_records`` None)."""
    if run.record_count is not None:
        return float(run.record_count)
    sigma = size_noise(run.epsilon, run.delta)
    if n_records is None:
        ledger.record(COUNT_ENTRY, release_event(sigma))  # the sites' continuous shares: zCDP
        return max(1.0, round(engine.noisy_size(MEASURE, sigma)))
    rng = noise_generator(run.seed_sequence(5))
    return release_count(n_records, sigma, ledger, rng, run.unit)


def release_count(
    n_records: int,
    sigma: float,
    ledger: PrivacyLedger,
    rng: np.random.Generator,
    unit: PrivacyUnit = PER_RECORD,
) -> float:
    """The record count released with the Gaussian mechanism, recorded in ``ledger`` before it
    runs; 0 noise: non-private. One record moves it by 1 under add/remove; one person, whose
    rows were bounded to k, by k: the noise std is ``sigma * unit.rows``."""
    ledger.record(unit.entry(COUNT_ENTRY), count_event(sigma, rows=unit.rows))
    noisy = float(noisy_counts(np.array([n_records]), sigma * unit.rows, rng)[0])
    return max(1.0, round(noisy))  # rounding and the floor are post-processing


def sampled_count(run: RunSettings, records: Any, ledger: PrivacyLedger, n_public: float) -> float:
    """What DP-SGD samples from, as released under DP: the record count, or, with a privacy
    unit and discriminator steps, the number of persons (its own release, sensitivity 1, at
    the record count's noise multiplier; random stream 7), so that q = B / P never uses an
    exact size."""
    if not run.unit.per_person or run.anchoring.alone:
        return n_public
    persons = person_codes(records, run.unit)
    n_persons = int(persons.max()) + 1 if persons.size else 0
    sigma = size_noise(run.epsilon, run.delta)
    ledger.record(run.unit.count_entry(PERSON_COUNT_ENTRY), count_event(sigma))
    rng = noise_generator(run.seed_sequence(7))
    noisy = float(noisy_counts(np.array([n_persons]), sigma, rng)[0])
    released = max(1.0, round(noisy))  # post-processing
    run_options.check_against_size(run.config, round(released), "persons")
    return released


def measure(
    run: RunSettings, engine: Engine, n_public: float, ledger: PrivacyLedger
) -> tuple[Any, np.ndarray | None, Measured, float]:
    """A new run's releases into ``ledger`` (which holds the record count's, ``n_public``):
    the metadata, then the anchoring's measurements, then (a privacy unit with discriminator
    steps) the person count. Returns the completed schema, the label prior, the anchoring's
    measurements and the count DP-SGD samples from (the pipeline plans the steps on it)."""
    rng = noise_generator(run.seed_sequence(0))
    records = engine.read(MEASURE)
    schema, prior = run.kind.complete(records, run.schema, metadata_budget(run), ledger, rng)
    released = run.kind.released(records, schema)
    measured = run.anchoring.measure(run, schema, released, ledger, rng, n_public, prior)
    return schema, prior, measured, sampled_count(run, records, ledger, n_public)


def keep_released(run: RunSettings, engine: Engine, setup: RunSetup) -> None:
    """Drop the records of categories or classes the DP threshold did not release; N, which set
    q and the plan, stays the number of records read (see ``keep_released_rows``)."""
    engine.replace(run.kind.released(engine.read(MEASURE), setup.schema))


def check_resumed(run: RunSettings, engine: Engine, setup: RunSetup, n_records: int) -> None:
    """Refuse to resume a saved stage on other records or settings."""
    check_resumable(run, setup, n_records, engine.read(MEASURE))


def save(run: RunSettings, engine: Engine, setup: RunSetup) -> None:
    """Save this stage's output, when the run has a checkpoint folder (resume per stage)."""
    if run.checkpoint_dir is not None:
        save_measured(run, setup, engine.read(MEASURE))


def measure_adaptive(run: RunSettings, setup: RunSetup, engine: Engine) -> None:
    """Releases chosen from the earlier noisy ones (tables: pair selection and round 2,
    scored against the consistent estimate of round 1)."""
    run.anchoring.measure_adaptive(run, setup, lambda: engine.read(MEASURE))
