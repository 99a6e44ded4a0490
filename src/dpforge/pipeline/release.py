"""The release stage: the last checks, then what a fitted synthesizer holds.

The discriminator's steps enter the run's ledger as they ran (steps a kill wasted included);
nothing is released when the ledger exceeds the target or the generator holds NaN or infinite
weights. The model folder itself is written by :mod:`dpforge.model_io` from the result.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from dpforge.errors import PrivacyError
from dpforge.kinds.generator import KindGenerator
from dpforge.methods.base import GanMethod
from dpforge.pipeline.plan import refiner_event
from dpforge.pipeline.run import RunSettings, RunSetup
from dpforge.privacy.ledger import PrivacyLedger
from dpforge.training import TrainingDivergedError, TrainingPlan


@dataclass
class Released:
    """What a fit releases (the facade's fitted attributes, without their trailing ``_``)."""

    schema: Any
    encoder: Any
    ledger: PrivacyLedger
    label_prior: np.ndarray | None
    plan: TrainingPlan
    generator: torch.nn.Module
    bayesian: Any  # the data-dependent Bayesian bound: for the steward's eyes, never saved
    sample_release: Any = None  # a DP release sampling may read (moved samples), or None


def release(
    run: RunSettings,
    setup: RunSetup,
    model: KindGenerator,
    refiner: GanMethod | None,
    wasted: int,
) -> Released:
    """Complete the ledger with the steps that ran, check, and hand out the generator (the
    refiner's weight average when it keeps one)."""
    ledger, plan = setup.ledger, setup.plan
    if plan.steps:
        lost = f" ({wasted} of them lost to an interruption)" if wasted else ""
        ledger.record(
            run.unit.sgd_entry(f"{run.method}: {plan.steps} discriminator steps{lost}"),
            refiner_event(run, plan, plan.steps),
        )
    _check_spent(run, ledger)
    generator = model.generator if refiner is None else refiner.released_generator()
    if not all(torch.isfinite(p).all() for p in generator.parameters()):
        raise TrainingDivergedError(
            "the trained generator holds NaN or infinite weights, so nothing is released: "
            "lower clip_norm, gp_weight or the learning rates ([refine]) and run again"
        )
    bayesian = None if refiner is None else _bayesian_result(run, refiner, ledger)
    return Released(
        setup.schema, setup.encoder, ledger, setup.label_prior, plan, generator.eval(), bayesian,
        run.anchoring.sample_release(setup),
    )  # fmt: skip


def _check_spent(run: RunSettings, ledger: PrivacyLedger) -> None:
    """Refuse to release if the run spent more than the target (the plan prevents it)."""
    spent = ledger.report(run.delta).epsilon
    if math.isfinite(run.epsilon) and spent > run.epsilon * (1 + 1e-9):
        raise PrivacyError(
            f"internal error: the run spent epsilon = {spent:.4f}, more "
            f"than the target {run.epsilon}; nothing is released"
        )


def _bayesian_result(run: RunSettings, method: GanMethod, ledger: PrivacyLedger):
    """The data-dependent Bayesian bound, when asked for: computed from private gradients
    without noise, so never saved in the model folder; it stands NEXT TO the worst-case
    epsilon, never in its place."""
    accountant = getattr(method, "bayesian", None)
    if accountant is None or accountant.steps == 0:
        return None
    return accountant.result(run.delta, worst_case_epsilon=ledger.report(run.delta).epsilon)
