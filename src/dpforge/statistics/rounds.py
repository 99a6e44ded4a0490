"""The anchoring of one run: its budget, written to the ledger ahead, then its rounds.

Round 1 measures every 1-way marginal and label x column. With pair selection, the consistent
estimate of round 1 (:mod:`dpforge.statistics.estimate`) is scored against the data on every
other column pair (one Gaussian release of the scores), and the best ``k`` pairs are measured
in round 2. All noise multipliers are fixed
before the first measurement from one calibrated ``sigma``: release ``i`` gets the weight
``w_i`` of the budget (noise ``sigma / sqrt(w_i)``, i.e. a share ``w_i`` of the zCDP rho), and
all events are recorded in the ledger before any of them runs, so an interrupted run can waste
budget but never hide it. With a privacy unit (:mod:`dpforge.privacy.person`) the plan keeps
the events' noise multipliers and ``rows`` (a person's most rows): every release adds ``rows``
times the noise, as its L2 sensitivity is ``rows`` times the per-record one.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace

import dp_accounting
import numpy as np

from dpforge.data.encoder import SOFTMAX, Span
from dpforge.engines.aggregates import noise_factor
from dpforge.privacy.accounting import reporting_accountant
from dpforge.privacy.calibration import bounded_epsilon, noise_for_target
from dpforge.privacy.ledger import PrivacyLedger
from dpforge.privacy.person import PER_RECORD, PrivacyUnit
from dpforge.privacy.release_noise import count_event, release_event, table_event
from dpforge.statistics.anchor import AnchorConfig, AnchorLoss
from dpforge.statistics.estimate import pair_distributions
from dpforge.statistics.marginals import (
    MeasuredMarginal,
    default_marginals,
    measure_marginals,
)
from dpforge.statistics.selection import candidate_pairs, pairs_to_measure, select_pairs

__all__ = [
    "AnchorPlan",
    "anchor_loss",
    "measure_round_one",
    "measure_selected_pairs",
    "plan_anchoring",
    "planned_cell_std",
    "round_one_cell_std",
]

# Budget weights of the three releases (round 1, pair scores, round 2) when selecting pairs.
WEIGHTS_WITH_SELECTION = (0.5, 0.1, 0.4)
# Part of the budget for the fine histograms that place the numeric cells, when there are any.
CELLS_WEIGHT = 0.1
# A long code list's histogram is its only fine 1-way measurement (statistics/codes.py): the
# release gets 1/k more of the budget per code list (k first-round marginals), CODES_WEIGHT
# at most.
CODES_WEIGHT = 0.4


@dataclass(frozen=True)
class AnchorPlan:
    """The fixed noise of each release (0: non-private) and how many pairs round 2 measures."""

    round_one_noise: float
    score_noise: float = 0.0
    pair_noise: float = 0.0
    pairs: int = 0
    cells_noise: float = 0.0  # fine histograms of the columns whose cells follow the data
    rows: int = 1  # a person's most rows (1: per record): every release's noise std x rows

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> AnchorPlan:
        return cls(**d)


def _weights(config: AnchorConfig, spans: Sequence[Span], adaptive: bool, codes: float = 0.0):
    """(weights of the releases, the round 1 marginals, candidate pairs, k): the public plan.
    ``codes``: the cells' release's extra share for long code lists' histograms."""
    first = default_marginals(spans, None)
    candidates = candidate_pairs(spans) if config.pairs_per_column != 0 else []
    n_columns = sum(1 for s in spans if s.activation == SOFTMAX)
    per_column = 1.0 if config.pairs_per_column is None else config.pairs_per_column
    k = pairs_to_measure(len(candidates), n_columns, per_column) if candidates else 0
    weights = list(WEIGHTS_WITH_SELECTION if k else (1.0,))
    if adaptive:
        cells = CELLS_WEIGHT + codes
        weights = [w * (1 - cells) for w in weights] + [cells]
    return weights, first, candidates, k


def planned_cell_std(
    config: AnchorConfig,
    spans: Sequence[Span],
    label_name: str | None,
    target: tuple[float, float] | None,
    ledger: PrivacyLedger,
) -> float:
    """About the noise std of each cell of round 1 (0 without noise), for sizing the numeric
    cells before the plan is fixed (``cells.cells_for_noise``). Public: epsilon, delta, what
    the ledger already holds and the plan's rules. The budget's releases compose like one
    Gaussian of multiplier ``sigma`` (their weights sum to 1), whose ``sigma`` the RDP
    accountant gives quickly and a little conservatively; the exact calibration is the plan's.
    """
    if target is None:
        return 0.0
    weights, _, _, _ = _weights(config, spans, adaptive=True)
    sigma = noise_for_target(release_event, target[0], target[1], "rdp", ledger.event())
    n_marginals = len(default_marginals(spans, label_name))
    return sigma / math.sqrt(weights[0]) * math.sqrt(n_marginals)


def plan_anchoring(
    config: AnchorConfig,
    spans: Sequence[Span],
    label_name: str | None,
    target: tuple[float, float] | None,
    ledger: PrivacyLedger,
    adaptive: int = 0,
    codes: int = 0,
    unit: PrivacyUnit = PER_RECORD,
    at_source: bool = False,
) -> AnchorPlan:
    """Calibrate the noise so the ledger reaches ``target`` (epsilon, delta); None: no noise.

    ``adaptive`` columns get data-following cells (:mod:`dpforge.statistics.cells`), paid from
    ``CELLS_WEIGHT`` of the budget, with the code histograms of the ``codes`` long code lists
    (:mod:`dpforge.statistics.codes`) in the same release. Records every release in ``ledger``
    (ahead of running them), each named for ``unit``'s relation, whose ``rows`` the plan keeps.
    ``at_source``: the engine adds the noise where the records are (continuous shares), which
    changes the events recorded (:func:`dpforge.privacy.release_noise.table_event`).
    """
    what = f"{adaptive} numeric columns" + (f" and {codes} code lists" if codes else "")
    adaptive += codes
    first = default_marginals(spans, label_name)
    extra = min(CODES_WEIGHT, codes / len(first)) if codes else 0.0
    weights, _, candidates, k = _weights(config, spans, bool(adaptive), extra)
    releases = _releases(len(first), len(candidates), k, adaptive, (unit.rows, at_source))
    sigma = 0.0 if target is None else _calibrate(weights, releases, target, ledger)
    noises = [sigma / math.sqrt(w) for w in weights]
    events = [make(noise) for make, noise in zip(releases, noises, strict=True)]
    cells_noise = noises.pop() if adaptive else 0.0
    plan = AnchorPlan(noises[0], *(noises[1:] + [k])) if k else AnchorPlan(noises[0])
    plan = replace(plan, rows=unit.rows)
    if adaptive:
        plan = replace(plan, cells_noise=cells_noise)
        name = f"anchor: fine histograms of {what} (cells)"
        ledger.record(unit.entry(name), events[-1])
    kinds = "1-way, label x column"
    ledger.record(unit.entry(f"anchor: {len(first)} marginals ({kinds})"), events[0])
    if k:
        ledger.record(unit.entry(f"anchor: scores of {len(candidates)} column pairs"), events[1])
        ledger.record(unit.entry(f"anchor: {k} selected column pairs"), events[2])
    return plan


def _releases(first: int, candidates: int, k: int, adaptive: int, how: tuple[int, bool]) -> list:
    """Each release's event as a function of its noise multiplier, in the order of
    :func:`_weights`: round 1's tables, the pair scores and round 2's tables (with ``k``), the
    cells' histograms (with ``adaptive``). ``how``: (a person's most rows, noise at source)."""
    rows, at_source = how

    def tables(count: int):
        return lambda noise: table_event(noise, count, rows, at_source)

    def scores(noise: float) -> dp_accounting.DpEvent:  # integer scores, one per pair
        return release_event(noise) if at_source else count_event(noise, candidates, rows)

    releases = [tables(first)] + ([scores, tables(k)] if k else [])
    return releases + ([tables(adaptive)] if adaptive else [])


def _calibrate(weights, releases, target: tuple[float, float], ledger: PrivacyLedger) -> float:
    def composed(sigma: float) -> dp_accounting.DpEvent:
        parts = [make(sigma / math.sqrt(w)) for make, w in zip(releases, weights, strict=True)]
        return dp_accounting.ComposedDpEvent(parts)

    # The releases compose about like round 1's at the whole budget (their weights sum to 1):
    # calibrating that one event is several times faster; the composed events are then checked
    # with the same accountant, and calibrated themselves if discretisation puts them over,
    # searching from that σ (the answer is a little above it).
    base = ledger.event()
    single = noise_for_target(releases[0], target[0], target[1], None, base)
    event = dp_accounting.ComposedDpEvent([base, composed(single)])
    if bounded_epsilon(event, target[1], reporting_accountant(event)) <= target[0]:
        return single
    return noise_for_target(composed, target[0], target[1], base_event=base, near=single)


def measure_round_one(
    plan: AnchorPlan,
    blocks: Mapping[str, np.ndarray],
    spans: Sequence[Span],
    label_name: str | None,
    rng: np.random.Generator,
    total: float,
) -> list[MeasuredMarginal]:
    """The first round's release (already in the ledger); ``total`` is the public N."""
    chosen = default_marginals(spans, label_name)
    return measure_marginals(blocks, chosen, plan.round_one_noise, rng, total, plan.rows)


def round_one_cell_std(plan: AnchorPlan, n_marginals: int, blocks: Mapping) -> float:
    """The noise standard deviation one cell count of round 1 carries, from public inputs:
    the plan's noise, the sensitivity rows, the marginals released together, and the engine's
    factor (a federated release sums every site's noise, so it carries more than asked)."""
    return plan.round_one_noise * plan.rows * math.sqrt(n_marginals) * noise_factor(blocks)


def measure_selected_pairs(
    measured: list[MeasuredMarginal],
    plan: AnchorPlan,
    blocks: Mapping[str, np.ndarray],
    spans: Sequence[Span],
    domain: Mapping[str, int],
    rng: np.random.Generator,
) -> list[MeasuredMarginal]:
    """The adaptive releases, when planned: the consistent estimate of round 1
    (:mod:`dpforge.statistics.estimate`, over the public ``domain``) is compared with the
    data on every candidate pair, the noisy scores choose the pairs, and round 2 measures
    them. Returns round 1's measurements plus round 2's."""
    if not plan.pairs:
        return measured
    softmax = [s for s in spans if s.activation == SOFTMAX]
    total = measured[0].total
    cell_noise = plan.pair_noise * plan.rows * math.sqrt(plan.pairs)  # std per cell
    model = pair_distributions(measured, domain, candidate_pairs(softmax))
    chosen = select_pairs(
        blocks, model, plan.pairs, plan.score_noise, cell_noise, rng, total, rows=plan.rows
    )
    return measured + measure_marginals(blocks, chosen, plan.pair_noise, rng, total, plan.rows)


def anchor_loss(measured, spans, label_name, prior) -> AnchorLoss:
    """The L1 anchor loss on ``measured``."""
    return AnchorLoss(measured, spans, label_name, prior)
