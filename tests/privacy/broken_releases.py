"""Planted defects on the releases audited since issue 43.5 (the audit tests and bench only).

Each breaks one release where its caller looks it up, in one of two ways, as in
``broken_parts.RELEASE_DEFECTS``: less noise than the ledger claims (a quarter, or 1/k where a
person's k rows are ignored), or a record that moves the release twice as far as the claimed
sensitivity (counted twice, a clip at 2C, a person's rows bounded at 2k).
"""

from __future__ import annotations

import dataclasses

import numpy as np
from broken_parts import NOISE_BY_4, SENSITIVITY_X2, Defect, _counted_twice, _noise_arg_divided

from dpforge.engines.federated_trust import Trust
from dpforge.methods import gswgan
from dpforge.pipeline import measure
from dpforge.privacy import person
from dpforge.privacy.ledger import PrivacyLedger
from dpforge.privacy.person import PER_RECORD
from dpforge.privacy.release_noise import count_event
from dpforge.statistics import (
    bounds_estimate,
    categories_estimate,
    codes,
    rounds,
    selection,
    time_bounds,
)

ROWS_IGNORED = "noise ÷ k (k rows ignored)"
ROWS_UNBOUNDED = "2k rows kept"


def _values_twice(real):
    def broken(values, edges, sigma, rng):
        return real(np.concatenate([values, values]), edges, sigma, rng)

    return broken


def _categories_twice(real):
    def broken(values):
        names, counts = real(values)
        return names, 2.0 * counts

    return broken


def _date_noise_by_4(real):
    """The date path passes a quarter of the noise and charges the full (its event σ's)."""

    def broken(values, sigma, rng, **options):
        estimate = real(values, sigma / 4.0, rng, **options)
        return dataclasses.replace(estimate, event=bounds_estimate.bounds_event(sigma))

    return broken


def _count_noise_by_4(real):
    def broken(n_records, sigma, ledger, rng, unit=PER_RECORD):
        released = real(n_records, sigma / 4.0, PrivacyLedger(), rng, unit)
        ledger.record(unit.entry(measure.COUNT_ENTRY), count_event(sigma, rows=unit.rows))
        return released

    return broken


def _count_twice(real):
    return lambda n_records, *rest: real(2 * n_records, *rest)


def _persons_claim_x4(real):
    """The person count's ledger claims four times the noise it adds."""
    return lambda sigma, *rest, **options: real(4.0 * sigma, *rest, **options)


def _persons_twice(real):
    return lambda records, unit: 2 * real(records, unit)


def _site_noise_by_4(real):
    """The site adds a quarter of its share and records the event of the full share."""
    return lambda self, exact, std, l2, *rest: real(self, exact, std / 4.0, l2 / 4.0, *rest)


def _site_counts_twice(real):
    return lambda self, exact, *rest: real(self, 2.0 * np.asarray(exact), *rest)


def _score_sensitivity_one(real):
    """The site derives its pair scores' sensitivity as 1 (the table alone), not 2."""
    return lambda self, grid: real(self, grid) / 2.0


def _quartered(real):
    return lambda *args: real(*args) / 4.0


def _rows_ignored(real):
    def broken(blocks, chosen, noise, rng, total, rows=1, *rest):
        return real(blocks, chosen, noise, rng, total, 1, *rest)

    return broken


MORE_RELEASE_DEFECTS = {
    "pair-scores": [
        Defect(NOISE_BY_4, selection, "select_pairs", _noise_arg_divided(3)),
        Defect(SENSITIVITY_X2, selection, "pair_scores", _counted_twice),
    ],
    "bounds": [
        Defect(NOISE_BY_4, bounds_estimate, "_noisy_histogram", _noise_arg_divided(2)),
        Defect(SENSITIVITY_X2, bounds_estimate, "_noisy_histogram", _values_twice),
    ],
    "categories": [
        Defect(NOISE_BY_4, categories_estimate, "gaussian_histogram", _noise_arg_divided(1)),
        Defect(SENSITIVITY_X2, categories_estimate, "_category_counts", _categories_twice),
    ],
    "codes": [
        Defect(NOISE_BY_4, codes, "measure_code_histograms", _noise_arg_divided(2)),
        Defect(SENSITIVITY_X2, codes, "_code_counts", _counted_twice),
    ],
    "dates": [
        Defect(NOISE_BY_4, time_bounds, "dp_bounds", _date_noise_by_4),
        Defect(SENSITIVITY_X2, bounds_estimate, "_noisy_histogram", _values_twice),
    ],
    "rows-per-person": [
        Defect(ROWS_IGNORED, rounds, "measure_marginals", _rows_ignored),
        Defect(ROWS_UNBOUNDED, person, "kept_rows", _noise_arg_divided(1, 0.5)),
    ],
    "record-count": [
        Defect(NOISE_BY_4, measure, "release_count", _count_noise_by_4),
        Defect(SENSITIVITY_X2, measure, "release_count", _count_twice),
    ],
    "person-count": [
        Defect(NOISE_BY_4, measure, "count_event", _persons_claim_x4),
        Defect(SENSITIVITY_X2, measure, "person_codes", _persons_twice),
    ],
    "federated-site": [
        Defect(NOISE_BY_4, Trust, "noisy", _site_noise_by_4),
        Defect(SENSITIVITY_X2, Trust, "noisy", _site_counts_twice),
    ],
    "federated-site-scores": [
        Defect(NOISE_BY_4, Trust, "noisy", _site_noise_by_4),
        Defect(SENSITIVITY_X2, Trust, "score_sensitivity", _score_sensitivity_one),
    ],
    "gswgan-sanitizer": [
        Defect(NOISE_BY_4, gswgan, "gswgan_noise_std", _quartered),
        Defect(SENSITIVITY_X2, gswgan, "clip_factors", _noise_arg_divided(1, 0.5)),
    ],
}
