"""The plan stage: what the run may release, fixed before the releases run.

Metadata and anchoring releases are planned by the kind's anchoring, each into the ledger just
before it runs (their noise follows from the budget). This module plans the rest: it checks the
privacy request, sets the discriminator's steps and noise so the whole ledger reaches the target
(the accountant decides, :mod:`dpforge.privacy.calibration`), and reserves the run's whole target
in the data set's budget file before the first release, and settles it with the planned ledger
once the releases ran (:mod:`dpforge.privacy.budget`).
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import dp_accounting

from dpforge import options as run_options
from dpforge.errors import PrivacyError
from dpforge.methods import METHODS
from dpforge.pipeline.run import RunSettings, RunSetup
from dpforge.privacy.budget import (
    RunCharge,
    charge_before_release,
    gaussian_bound,
    settle_charge,
)
from dpforge.privacy.calibration import noise_for_target, steps_for_target
from dpforge.privacy.ledger import PrivacyLedger
from dpforge.privacy.release_noise import count_event
from dpforge.statistics.metadata import MetadataBudget
from dpforge.training import TrainingPlan

SIZE_SHARE = 0.05  # of the run's budget, for the record count N that sizes q, cells and totals
DEFAULT_EPOCHS = 50.0
MIN_STEPS = 100


def check_delta(run: RunSettings, n_public: int) -> None:
    """Refuse delta >= 1/N, N the record count released under DP or declared public (issue
    43.9: checked on the exact N, the refusal itself told N's order of magnitude). A DP
    outcome: the count's release is spent. The message suggests a delta, never N."""
    if run.delta >= 1.0 / n_public and math.isfinite(run.epsilon):
        raise PrivacyError(
            f"delta = {run.delta:g} is not below 1/N for the N records counted under DP: such "
            f"a delta allows publishing a whole record; choose delta well below 1/N "
            f"(e.g. {_suggest_delta(n_public):g})"
        )


def check_request(run: RunSettings) -> None:
    """Refuse a privacy request whose options contradict each other."""
    if run.noise_multiplier is not None and run.epochs is not None and math.isfinite(run.epsilon):
        raise PrivacyError("give noise_multiplier or epochs, not both: the other is calibrated")
    alone = run.anchoring.alone
    if alone and (run.noise_multiplier is not None or run.epochs is not None):
        raise PrivacyError(run.anchoring.alone_note)
    if not math.isfinite(run.epsilon) and run.epochs is None and not alone:
        raise PrivacyError("a non-private run (epsilon = inf) needs epochs")


def size_noise(epsilon: float, delta: float) -> float:
    """The noise multiplier of the record count's release: ``SIZE_SHARE`` of an (epsilon,
    delta) budget in the zCDP sense (a Gaussian's cost grows as 1 / sigma^2), from the sigma
    of one discrete Gaussian count that spends the whole budget (by PLD, as it is reported); 0
    without one."""
    if not math.isfinite(epsilon):
        return 0.0
    whole = noise_for_target(count_event, epsilon, delta)
    return whole / math.sqrt(SIZE_SHARE)


def metadata_budget(run: RunSettings) -> MetadataBudget:
    """The part of the budget set aside for DP estimates of undeclared metadata."""
    if not math.isfinite(run.epsilon):
        return MetadataBudget(epsilon=0.0, delta=0.0, non_private=True, unit=run.unit)
    share = run.metadata_share
    return MetadataBudget(run.epsilon * share, run.delta * share, unit=run.unit)


def sample_rate(run: RunSettings, n_public: float) -> float:
    """The discriminator's Poisson sampling rate q = B / N, N the count released under DP."""
    return METHODS[run.method][0].sample_rate(run.config, n_public)


def refiner_config(run: RunSettings) -> Any:
    """The refiner's config: the run's, without clipping for the non-private baseline."""
    if math.isfinite(run.epsilon):
        return run.config
    return replace(run.config, clip_norm=math.inf)


def plan_training(run: RunSettings, n_public: float, ledger: PrivacyLedger) -> TrainingPlan:
    """The discriminator's steps and noise: none when the measurements are the whole run, else
    what the budget left after ``ledger`` allows."""
    if run.anchoring.alone:  # no private step samples anything: no rate (and no batch check)
        return TrainingPlan(0, 0.0, 0.0, run.checkpoint_every)
    q = sample_rate(run, n_public)
    if not math.isfinite(run.epsilon):
        steps = run_options.check_steps(max(1, round(run.epochs / q)), f"epochs={run.epochs:g}")
        return TrainingPlan(steps, q, 0.0, run.checkpoint_every)
    sigma, steps = _calibrate(run, q, ledger)
    if steps < MIN_STEPS:
        raise PrivacyError(
            f"the budget epsilon = {run.epsilon:g} allows only {steps} training steps at "
            f"noise multiplier {sigma:.3g} (at least {MIN_STEPS} are needed to learn "
            "anything): raise epsilon, lower the noise multiplier or the batch size"
        )
    return TrainingPlan(steps, q, sigma, run.checkpoint_every)


def _calibrate(run: RunSettings, q: float, ledger: PrivacyLedger) -> tuple[float, int]:
    """(noise multiplier, steps): the one not given, calibrated to reach the target."""
    method_cls = METHODS[run.method][0]
    delta, base = run.delta - ledger.extra_delta(), ledger.event()

    def event(sigma: float, steps: int):
        return method_cls.training_event(run.config, q, sigma, steps)

    if run.noise_multiplier is None:
        epochs = DEFAULT_EPOCHS if run.epochs is None else run.epochs
        steps = run_options.check_steps(max(1, round(epochs / q)), f"epochs={epochs:g}")
        sigma = noise_for_target(lambda s: event(s, steps), run.epsilon, delta, base_event=base)
        return sigma, steps
    sigma = run.noise_multiplier
    steps = steps_for_target(
        lambda n: event(sigma, n), run.epsilon, delta, base_event=base,
        max_steps=run_options.MAX_STEPS + 1,
    )  # fmt: skip
    run_options.check_steps(steps, f"noise multiplier {sigma:g} at epsilon {run.epsilon:g}")
    return sigma, steps


def planned_ledger(run: RunSettings, setup: RunSetup) -> PrivacyLedger:
    """The ledger this run will have: the releases so far and the planned discriminator steps."""
    planned = PrivacyLedger(setup.ledger.entries)
    if setup.plan.steps:
        planned.record(
            run.unit.sgd_entry(f"{run.method}: {setup.plan.steps} discriminator steps"),
            refiner_event(run, setup.plan, setup.plan.steps),
        )
    return planned


def refiner_event(run: RunSettings, plan: TrainingPlan, steps: int) -> dp_accounting.DpEvent:
    """The DP event of ``steps`` of the planned refiner's steps (no refiner built)."""
    method_cls = METHODS[run.method][0]
    return method_cls.event_of(refiner_config(run), plan.noise_multiplier, plan.sample_rate, steps)


def reserve_budget(run: RunSettings, budget: RunCharge | None, resume_of: str | None) -> Any:
    """Charge the data set's budget file before the first release, through the one charging
    path (:func:`~dpforge.privacy.budget.charge_before_release`); a resumed run finds its
    charge through the id its checkpoint recorded."""
    return charge_before_release(
        budget,
        epsilon=run.epsilon,
        delta=run.delta,
        description=f"{run_label(run)}, target epsilon {run.epsilon:g}, delta {run.delta:g}",
        bound=release_bound(run.epsilon, run.delta, run.metadata_share),
        checkpoint=run.checkpoint_dir,
        resume_of=resume_of,
    )


def release_bound(epsilon: float, delta: float, metadata_share: float) -> PrivacyLedger:
    """What a fit may release before its plan settles the charge: the record and person
    counts, the metadata and the measurements, all Gaussian mechanisms within the run's
    (epsilon, delta), plus the thresholded categories' delta (half the metadata's): one
    Gaussian at the run's target dominates them (:func:`gaussian_bound`)."""
    return gaussian_bound(epsilon, delta, extra_delta=delta * metadata_share / 2)


def run_label(run: RunSettings) -> str:
    """What ran, as ``budget show`` lists it: the anchoring, the discriminator, or both."""
    anchoring = run.anchoring.label
    if run.anchor is None:
        return f"{run.method} discriminator"
    if run.anchoring.alone:
        return anchoring
    return f"{anchoring} + {run.method} discriminator"


def settle_budget(budget: RunCharge | None, record: Any, ledger: PrivacyLedger) -> Any:
    """Replace the reservation by ``ledger`` (the events that ran and those planned)."""
    return settle_charge(budget, record, ledger)


def _suggest_delta(n_public: float) -> float:
    return 10.0 ** math.floor(math.log10(1.0 / (10 * n_public)))
