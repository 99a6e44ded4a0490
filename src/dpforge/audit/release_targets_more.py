"""The table statistics' other releases, set up for the many-runs audit (issue 43.5).

As in :mod:`dpforge.audit.release_targets`: the package's REAL function (looked up on its
module at every call, so that a planted defect reaches it) runs with and without a canary
record, and each run's release becomes one number in units of the CLAIMED noise (the
sensitivity each module's docstring states, written out here). Three designs:

* a noisy vector (code histograms): the projection onto the canary's exact contribution, as
  in :func:`~dpforge.audit.release_targets.projector`;
* white box (bounds, date ranges, categories): the function's output is post-processing of
  noisy histograms, and the ledger event describes those histograms, so the statistic reads the
  histograms the real function drew (:func:`observed` records what the module's own histogram
  function returned); the canary shares its category with the other records, so both sides
  draw the same bins;
* a choice (pair selection): the release is which pair wins; the canary moves the two scores
  apart by their claimed sensitivity and the others place the winner's threshold at
  ``PAIR_Z`` claimed standard deviations; the statistic is 1 when the canary's pair wins.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import pandas as pd

from dpforge.audit.release_targets import (
    ReleaseTarget,
    marginal_frames,
    projected,
)
from dpforge.privacy import person
from dpforge.privacy.release_noise import count_event, table_event
from dpforge.schema.table import Column
from dpforge.statistics import (
    bounds_estimate,
    categories_estimate,
    codes,
    marginals,
    rounds,
    selection,
    time_bounds,
)

__all__ = ["MORE_TARGETS", "observed", "swapped"]

PAIR_Z = 1.25  # the pair scores' threshold without the canary, in claimed standard deviations
ROWS = 4  # a person's most rows in the k-rows audit
BOUNDS_RECORDS = 400  # enough for dp_bounds' fine histogram at sigma <= 1 (N >= 70 sigma)


@contextmanager
def swapped(owner: Any, attribute: str, value: Any) -> Iterator[None]:
    """``owner.attribute`` is ``value`` while the block runs."""
    real = getattr(owner, attribute)
    setattr(owner, attribute, value)
    try:
        yield
    finally:
        setattr(owner, attribute, real)


@contextmanager
def observed(owner: Any, attribute: str) -> Iterator[list]:
    """Record what ``owner.attribute`` returns while the block runs (white box): the function
    in place (a planted defect included) still computes every value."""
    real, seen = getattr(owner, attribute), []

    def spy(*args: Any, **kwargs: Any) -> Any:
        out = real(*args, **kwargs)
        seen.append((args, out))
        return out

    with swapped(owner, attribute, spy):
        yield seen


def _white_box(run: Callable[[bool, float, np.random.Generator], None], owner, attribute,
               sigma: float) -> Callable[[bool, np.random.Generator], float]:  # fmt: skip
    """The statistic of a run whose histograms (the same bins on both sides) are observed:
    the projection of every histogram drawn onto the canary's exact contribution."""

    def drawn(with_canary: bool, noise: float, rng: np.random.Generator) -> np.ndarray:
        with observed(owner, attribute) as seen:
            run(with_canary, noise, rng)
        return np.concatenate([np.ravel(out) for _, out in seen])

    return projected(drawn, sigma, sigma)


def _bounds_statistic(values: dict[bool, np.ndarray], run, sigma: float):
    """dp_bounds' two histograms: the fine one's edges follow the coarse release, so the
    exact counts (the others', and the canary's Δ) are taken on each run's own edges."""
    unused = np.random.default_rng(0)  # noise 0: the exact counts

    def count(v: np.ndarray, edges: np.ndarray) -> np.ndarray:
        return bounds_estimate._noisy_histogram(v, edges, 0.0, unused)

    def statistic(with_canary: bool, rng: np.random.Generator) -> float:
        with observed(bounds_estimate, "_noisy_histogram") as seen:
            run(values[with_canary], sigma, rng)
        total, norm = 0.0, 0.0
        for args, noisy in seen:
            base = count(values[False], args[1])
            delta = count(values[True], args[1]) - base
            total, norm = total + float(delta @ (noisy - base)), norm + float(delta @ delta)
        return total / (sigma * math.sqrt(norm))

    return statistic


def _bounds_target(sigma: float, records: int) -> ReleaseTarget:
    """dp_bounds (a numeric column, two histograms, each of L2 sensitivity 1)."""
    others = np.full(max(records, BOUNDS_RECORDS), 0.75)
    values = {False: others, True: np.append(others, 3.0)}
    run = lambda v, s, rng: bounds_estimate.dp_bounds(v, s, rng)  # noqa: E731
    statistic = _bounds_statistic(values, run, sigma)
    return ReleaseTarget("DP bounds", bounds_estimate.bounds_event(sigma), statistic)


def _dates_target(sigma: float, records: int) -> ReleaseTarget:
    """time_bounds.time_range (a date column on its calendar grid: dp_bounds' event)."""
    column = Column("day", "date")
    others = np.full(max(records, BOUNDS_RECORDS), 15_000.0)  # 2011-01-26
    values = {False: others, True: np.append(others, 15_400.0)}  # 13 months later
    run = lambda v, s, rng: time_bounds.time_range(v, column, s, rng)  # noqa: E731
    statistic = _bounds_statistic(values, run, sigma)
    return ReleaseTarget("date range", bounds_estimate.bounds_event(sigma), statistic)


def _categories_target(sigma: float, records: int) -> ReleaseTarget:
    """dp_categories: a noisy count per observed value (L2 sensitivity 1), thresholded; the
    canary holds a value five other records hold (the Gaussian part of the claim)."""
    others = ["a"] * max(records - 5, 1) + ["b"] * 5
    values = {False: others, True: [*others, "b"]}

    def run(with_canary: bool, noise: float, rng: np.random.Generator) -> None:
        categories_estimate.dp_categories(values[with_canary], noise, 1e-3, rng)

    statistic = _white_box(run, categories_estimate, "gaussian_histogram", sigma)
    return ReleaseTarget("DP categories", categories_estimate.histogram_event(sigma), statistic)


def _codes_target(sigma: float, records: int) -> ReleaseTarget:
    """codes.measure_code_histograms: a long code list's histogram (L2 sensitivity 1), at the
    std its caller gives one histogram, sigma * rows * sqrt(m), here m = rows = 1."""
    names = tuple(f"C{i:02d}" for i in range(16))
    column = Column("code", "categorical", categories=names)
    others = pd.DataFrame({"code": [names[0]] * records})
    tables = {False: others, True: pd.concat([others, pd.DataFrame({"code": [names[9]]})])}

    def release(with_canary: bool, noise: float, rng: np.random.Generator) -> np.ndarray:
        return codes.measure_code_histograms(tables[with_canary], [column], noise, rng)["code"]

    statistic = projected(release, sigma, sigma)
    return ReleaseTarget("code histogram", table_event(sigma, 1), statistic)


def _pair_blocks(records: int, with_canary: bool) -> dict[str, marginals.CellColumn]:
    """Four 2-cell columns; every other record in cell 0 of each, the canary in cell 1."""
    index = np.zeros(records + int(with_canary), dtype=np.int32)
    index[records:] = 1
    return {name: marginals.CellColumn(index.copy(), 2) for name in "abcd"}


def _pairs_target(sigma: float, records: int) -> ReleaseTarget:
    """selection.select_pairs: C = 2 scores of L2 sensitivity sqrt(C), the best one chosen.
    The model of (a, b) is the others' table, so the canary raises its score by 1; that of
    (c, d) puts ``m`` records at (1, 1), so the canary lowers its score by 1; without the
    canary (c, d) leads by 2m, PAIR_Z standard deviations of the claimed difference 2 sigma."""
    m = max(PAIR_Z * sigma, 1.0)
    model = {
        ("a", "b"): np.array([[1.0, 0.0], [0.0, 0.0]]),
        ("c", "d"): np.array([[1.0 - m / records, 0.0], [0.0, m / records]]),
    }
    blocks = {c: _pair_blocks(records, c) for c in (False, True)}

    def statistic(with_canary: bool, rng: np.random.Generator) -> float:
        chosen = selection.select_pairs(blocks[with_canary], model, 1, sigma, 0.0, rng, records)
        return float(chosen[0] == ("a", "b"))

    event = count_event(sigma, len(model))  # C integer scores (selection.py)
    return ReleaseTarget("pair selection", event, statistic, (0.5,))


def _rows_target(sigma: float, records: int) -> ReleaseTarget:
    """A person of 2k rows as the canary, k = ROWS: the rows bounded to k per person
    (person.kept_rows), then round one's marginals at noise std sigma * k * sqrt(4)."""
    encoder, frames = marginal_frames(records, 2 * ROWS)
    persons = np.r_[np.arange(records).astype(str), ["canary"] * 2 * ROWS]
    keys = {False: persons[:records], True: persons}
    k = len(marginals.default_marginals(encoder.spans, "label"))

    def release(with_canary: bool, noise: float, rng: np.random.Generator) -> np.ndarray:
        frame = frames[with_canary]
        priority = person.row_priority(frame, int(rng.integers(2**31 - 1)))
        kept = frame.iloc[person.kept_rows(keys[with_canary], ROWS, priority)]
        blocks = marginals.encoded_cells(encoder, kept, "label")
        plan = rounds.AnchorPlan(noise, rows=ROWS)
        out = rounds.measure_round_one(plan, blocks, encoder.spans, "label", rng, float(records))
        return np.concatenate([m.noisy_counts for m in out])

    claimed = sigma * ROWS * math.sqrt(k)
    statistic = projected(release, sigma, claimed)
    return ReleaseTarget("k rows per person", table_event(sigma, k, ROWS), statistic)


MORE_TARGETS: dict[str, Callable[[float, int], ReleaseTarget]] = {
    "pair-scores": _pairs_target,
    "bounds": _bounds_target,
    "categories": _categories_target,
    "codes": _codes_target,
    "dates": _dates_target,
    "rows-per-person": _rows_target,
}
