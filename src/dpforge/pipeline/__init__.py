"""A fit is a pipeline of named stages (docs/architecture.md):

plan     what may be released, each release's dp-accounting event in the ledger before it
         runs, and the data set's budget file charged (:mod:`.plan`);
measure  the records checked, then the planned releases (:mod:`.measure`); the pipeline
         then plans the discriminator's steps on what the budget left;
fit      the kind's generator built and fitted to the noisy measurements: post-processing
         (:mod:`.fit`);
refine   only when the plan has steps: a refiner is handed the generator and trains it
         further with DP-SGD (:mod:`.refine`);
release  the ledger completed and checked, the generator handed out (:mod:`.release`).

Only ``measure`` and ``refine`` read records, through the run's engine
(:mod:`dpforge.engines`), which refuses any other stage. The data kind plugs in through its
anchoring (:mod:`dpforge.kinds`); nothing here branches on the kind. The stages go one way:
this module calls each in turn, and none calls back into a stage above it.
"""

from __future__ import annotations

from typing import Any

from dpforge import options as run_options
from dpforge.engines.base import Engine
from dpforge.errors import DpforgeError
from dpforge.kinds.generator import GeneratorConfig
from dpforge.methods import METHODS
from dpforge.pipeline import fit as fit_stage
from dpforge.pipeline import measure as measure_stage
from dpforge.pipeline import refine as refine_stage
from dpforge.pipeline import release as release_stage
from dpforge.pipeline.checkpoints import (
    checkpoint_budget_run,
    checkpoint_setup,
    is_resumed,
)
from dpforge.pipeline.plan import (
    check_delta,
    check_request,
    plan_training,
    planned_ledger,
    reserve_budget,
    settle_budget,
)
from dpforge.pipeline.release import Released
from dpforge.pipeline.run import RunSettings, RunSetup
from dpforge.privacy.budget import RunCharge
from dpforge.privacy.ledger import PrivacyLedger

__all__ = ["Released", "RunSettings", "RunSetup", "run_pipeline"]


def run_pipeline(
    run: RunSettings, engine: Engine, options: Any, budget: RunCharge | None
) -> tuple[Released, Any]:
    """Fit on ``engine``'s records; returns what is released and the budget file's record.

    ``options`` are the method options the caller gave (``run.config`` is resolved from them
    once the number of records is known).
    """
    if run.checkpoint_dir is not None and not engine.supports_checkpoints:
        raise DpforgeError(f"{type(engine).__name__} runs cannot resume: drop checkpoint_dir")
    n_records = measure_stage.check_records(run, engine)  # bad input: refused, nothing charged
    resume_of = checkpoint_budget_run(run)
    charged = reserve_budget(run, budget, resume_of)
    run.budget_run = getattr(charged, "run_id", None)
    ledger = PrivacyLedger()
    try:
        setup = _measure(run, engine, options, ledger, n_records)
    except DpforgeError:  # a DP outcome (or bad input) stopped it: what it recorded is spent
        if charged is not None and run.budget_run != resume_of:
            settle_budget(budget, charged, ledger)
        raise
    charged = settle_budget(budget, charged, planned_ledger(run, setup)) or charged
    if setup.measuring:  # measured now, not read from a checkpoint
        measure_stage.measure_adaptive(run, setup, engine)
        measure_stage.save(run, engine, setup)
    model = fit_stage.build_generator(run, setup)
    resumed = is_resumed(run, setup)
    fit_stage.fit(run, setup, model, resumed)
    refiner = refine_stage.build_refiner(run, setup, model, resumed)
    wasted = refine_stage.refine(run, setup, refiner, engine)
    return release_stage.release(run, setup, model, refiner, wasted), charged


def _measure(
    run: RunSettings, engine: Engine, options: Any, ledger: PrivacyLedger, n_records: int
) -> RunSetup:
    """Take the setup from the checkpoint or measure it anew (the record count first: every
    size used before noise is that DP release, never N itself)."""
    setup = checkpoint_setup(run)
    if setup is None:
        n_public = measure_stage.release_size(run, n_records, ledger, engine)
        check_delta(run, round(n_public))  # the released (or declared) N, never N itself
        _start(run, options, n_public)
        schema, prior, measured, n_sampled = measure_stage.measure(run, engine, n_public, ledger)
        plan = plan_training(run, n_sampled, ledger)  # the steps that fit what is left
        setup = RunSetup(schema, prior, ledger, plan, n_records, measured, n_public=n_public)
        setup.measuring = True
    else:
        _start(run, options, setup.n_public)
        measure_stage.check_resumed(run, engine, setup, n_records)
    measure_stage.keep_released(run, engine, setup)
    setup.encoder = run.anchoring.encoder(run.kind, setup.schema, setup.measured)
    return setup


def _start(run: RunSettings, options: Any, n_public: float) -> None:
    """Check the request and resolve the method's config for the released record count."""
    check_request(run)
    _resolve_config(run, options, round(n_public))


def _resolve_config(run: RunSettings, options: Any, n: int) -> None:
    """The run's config for ``n`` records, with the anchoring's generator: the kind's generator
    alone when the measurements are the whole run (no GAN config is built; the generator fields
    of ``options``, when given, are kept), else the refiner's config (``options``, or its
    defaults) holding it."""
    if run.anchoring.alone:  # no discriminator step uses a batch size (issue 21.8)
        config = GeneratorConfig() if options is None else GeneratorConfig.of(options)
    else:
        method_cls, config_cls = METHODS[run.method]
        config = method_cls.resolve_config(options or config_cls(), n)
        run_options.check_against_size(config, n)
    run.config = run.anchoring.method_config(config, run.default_options, run.schema)
