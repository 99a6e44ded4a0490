"""The refine stage: a private discriminator improves the kind's fitted generator with DP-SGD.

With :mod:`dpforge.pipeline.measure`, the only stage that reads private records (Poisson-
sampled batches, :mod:`dpforge.training`). Runs only when the plan has discriminator steps. The
ledger is written ahead of the steps into the checkpoint folder; a kill wastes budget, never
hides it, and a resumed run continues from the last checkpoint with the same random state.
"""

from __future__ import annotations

from typing import Any

import torch

from dpforge.distributed import check_replicas_agree, current_reducer, refuse_checkpoints
from dpforge.engines.base import REFINE, Engine
from dpforge.kinds.generator import KindGenerator
from dpforge.methods import METHODS
from dpforge.methods.base import GanMethod
from dpforge.pipeline.checkpoints import BUDGET_RUN_KEY, privacy_settings
from dpforge.pipeline.plan import refiner_config
from dpforge.pipeline.run import RunSettings, RunSetup
from dpforge.privacy.noise import make_generator
from dpforge.privacy.person import person_codes
from dpforge.privacy.resume import DATA_KEY, SETTINGS_KEY, check_resume, data_fingerprint
from dpforge.training import (
    TrainingState,
    has_checkpoint,
    load_checkpoint,
    read_checkpoint_info,
    reserved_steps,
    save_checkpoint,
    train,
    write_ahead_ledger,
)


def build_refiner(
    run: RunSettings, setup: RunSetup, model: KindGenerator, resumed: bool
) -> GanMethod | None:
    """The refiner the plan asks for, handed the kind's fitted generator; None when the plan
    has no discriminator steps (then no discriminator, GAN config or optimiser is built).
    Without measurements (the discriminator alone) the generator is initialised here first."""
    if not setup.plan.steps:
        return None
    if not setup.measured.fitted:
        run.init_generator(model)
    method_cls = METHODS[run.method][0]
    refiner = method_cls.refining(model, refiner_config(run), setup.plan.noise_multiplier)
    if not resumed:
        run.anchoring.before_refining(run, refiner)
    return refiner


def refine(run: RunSettings, setup: RunSetup, method: GanMethod | None, engine: Engine) -> int:
    """Train the planned discriminator steps (none: nothing runs, no record is read);
    returns the private steps a kill wasted (charged but not in the model)."""
    if method is None:
        return 0
    records = engine.read(REFINE)
    features, labels = setup.encoder.transform(records)
    persons = person_codes(records, run.unit)  # a privacy unit: per-person DP-SGD
    reducer = current_reducer(run.device)  # several processes: the torchrun group joined
    generator = make_generator(run.seed_sequence(1), run.device)
    x = torch.as_tensor(features, dtype=torch.float32, device=run.device)
    y = None if labels is None else torch.as_tensor(labels, device=run.device)
    check_replicas_agree(reducer, run.seed, [x, y])
    state, checkpoint, reserve = TrainingState(), None, None
    if run.checkpoint_dir is not None:
        refuse_checkpoints(reducer)
        fingerprint = data_fingerprint(features, labels)
        state, checkpoint, reserve = _checkpointing(run, setup, method, generator, fingerprint)
    train(  # advances ``state`` in place
        method, x, y, setup.plan, generator,
        state=state, checkpoint=checkpoint, reserve=reserve,
        progress=run.progress and reducer.is_main, reducer=reducer,
        persons=None if persons is None else torch.as_tensor(persons, device=run.device),
    )  # fmt: skip
    return state.spent - state.step


def _checkpointing(run: RunSettings, setup: RunSetup, method: Any, generator, fingerprint):
    """The state to start from (the checkpoint's, when resuming) and the two callbacks that
    save checkpoints and write the ledger ahead of the steps."""
    folder, state = run.checkpoint_dir, TrainingState()
    settings = privacy_settings(run, setup, setup.n_records)
    settings[DATA_KEY] = fingerprint
    run_info = {"setup": setup.to_dict(), SETTINGS_KEY: settings, BUDGET_RUN_KEY: run.budget_run}
    if has_checkpoint(folder):
        check_resume(read_checkpoint_info(folder).get(SETTINGS_KEY), settings, folder)
        state, _ = load_checkpoint(folder, method, generator)
        state.spent = max(state.spent, state.step, reserved_steps(folder))
    else:
        save_checkpoint(folder, method, state, generator, run_info)

    def checkpoint(s: TrainingState) -> None:
        save_checkpoint(folder, method, s, generator, run_info)

    def reserve(steps: int) -> None:
        event = method.step_event(setup.plan.sample_rate, steps)
        write_ahead_ledger(folder, setup.ledger, run.method, event, steps, run.delta)

    return state, checkpoint, reserve
