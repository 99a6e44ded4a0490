"""One whole fit below the facade: ``FitRun(schema, ...).fit(data)``, then ``save(path)``.

A :class:`FitRun` holds a fit's options, checks them before any record is read
(:mod:`dpforge.options`), resolves them into the pipeline's :class:`RunSettings`, runs the
pipeline of named stages (:mod:`dpforge.pipeline`: plan, measure, fit, refine, release) on an
engine that holds the records (:mod:`dpforge.engines`), keeps what the release stage handed out,
and writes the model folder (:mod:`dpforge.model_io`). It never branches on the kind.

The user-facing facade (:class:`dpforge.synthesizer.Synthesizer`) is this plus sampling; the
hyperparameter search (:mod:`dpforge.tuning`) and the Flower server app
(:mod:`dpforge.engines.federated_app`) run whole fits through this module, so no module below
the command line imports the facade.
"""

from __future__ import annotations

import numbers
import warnings
from pathlib import Path
from typing import Any, TypeVar

import pandas as pd

from dpforge import options as run_options
from dpforge.data.arrays import ArrayData
from dpforge.distributed import current_reducer
from dpforge.engines import Engine, as_engine, check_refinable
from dpforge.errors import DataError, PrivacyError
from dpforge.generate import FittedModel
from dpforge.kinds import CLIP_NOTE, anchoring_for, kind_of, resolve_anchor
from dpforge.methods import METHODS
from dpforge.methods.public_start import refuse_without_public
from dpforge.model_io import save_model
from dpforge.pipeline import RunSettings, run_pipeline
from dpforge.pipeline.run import seed_sequence
from dpforge.privacy.accounting import PrivacyReport
from dpforge.privacy.budget import RunCharge
from dpforge.privacy.person import PrivacyUnit, person_unit
from dpforge.schema.array import ArraySchema
from dpforge.schema.table import Schema, refuse_draft
from dpforge.statistics.anchor import AnchorConfig
from dpforge.statistics.perceptual import PublicImages, public_images
from dpforge.training import checkpoint_lock

__all__ = ["DEFAULT_METHOD", "FitRun"]
DEFAULT_METHOD = "dpcgan"
_Fit = TypeVar("_Fit", bound="FitRun")
_FITTED = (
    "schema", "encoder", "ledger", "label_prior", "plan", "generator", "bayesian", "sample_release"
)  # fmt: skip


class FitRun:
    """A fit's options and, once :meth:`fit` has run, what it released (the ``*_`` attributes).

    The parameters are the facade's (:class:`dpforge.synthesizer.Synthesizer` documents each).
    """

    def __init__(
        self,
        schema: Schema | ArraySchema,
        method: str | None = None,
        epsilon: float = 3.0,
        delta: float = 1e-5,
        *,
        noise_multiplier: float | None = None,
        epochs: float | None = None,
        metadata_share: float = 0.1,
        method_options: Any = None,
        out_of_bounds: str = "error",
        seed: int | None = None,
        device: str = "cpu",
        progress: bool = True,
        checkpoint_dir: str | Path | None = None,
        checkpoint_every: int = 500,
        record_count: int | None = None,
        anchor: AnchorConfig | str | None = "auto",
        privacy_unit: str | None = None,
        max_rows_per_unit: int | None = None,
        public_data: ArrayData | None = None,
    ) -> None:
        self.method_given = method is not None  # a named refiner gets part of the budget
        self.method = DEFAULT_METHOD if method is None else method
        self.schema, self.epsilon, self.delta = schema, epsilon, delta
        self.noise_multiplier, self.epochs = noise_multiplier, epochs
        self.metadata_share = metadata_share
        self.method_options = _method_options(self.method, method_options)
        self.default_method_options = method_options is None
        self.out_of_bounds = out_of_bounds
        self.seed = seed
        self.device = device
        self.progress = progress
        self.checkpoint_dir = None if checkpoint_dir is None else Path(checkpoint_dir)
        self.checkpoint_every = checkpoint_every
        self.anchor = anchor
        self.record_count = record_count
        self.privacy_unit, self.max_rows_per_unit = privacy_unit, max_rows_per_unit
        self.public_data = public_data

    # -- fit -----------------------------------------------------------------------------
    def fit(
        self: _Fit, data: pd.DataFrame | ArrayData | Engine, *, budget: RunCharge | None = None
    ) -> _Fit:
        """Train on the private ``data`` (a table, image / time-series records, or an engine
        that holds them); returns self.

        With ``checkpoint_dir``, an interrupted fit called again with the same data resumes:
        metadata estimates and the plan come from the checkpoint (never re-estimated, so never
        paid twice) and training continues from the last checkpointed step with the same random
        state. The checkpoint folder is locked for the whole fit: a second fit on it fails at
        once. Steps a kill wasted stay charged, so the resumed run trains for fewer steps rather
        than spend more than its plan (see ``dpforge.training``).

        With ``budget`` (the data set's :class:`dpforge.privacy.budget.DataBudget`), the run's
        planned events are added to the budget file before the first release, and a run that
        would take the data set past its declared total raises ``BudgetExceededError``.
        """
        self.check_options()
        with checkpoint_lock(self.checkpoint_dir):
            refuse_draft(self.schema)
            run = self._run_settings()
            engine, owned = as_engine(data)
            check_refinable(engine, run.anchoring.alone)
            try:
                released, self.budget_run_ = run_pipeline(run, engine, self.method_options, budget)
            finally:
                if owned:
                    engine.close()
        self.config_ = run.config
        self.anchor_plan_ = getattr(run.anchoring, "plan_", None)
        for name in _FITTED:
            setattr(self, f"{name}_", getattr(released, name))
        return self

    def _run_settings(self) -> RunSettings:
        """The options resolved for one run (public settings only: no record is read)."""
        kind = kind_of(self.schema)
        if kind.may_clip(self.schema, self.out_of_bounds):
            warnings.warn(CLIP_NOTE, stacklevel=4)  # public settings only, never a count
        public = self._public()
        self.anchor_ = self._resolved_anchor(public)
        return RunSettings(
            self.schema, self.method, self.epsilon, self.delta, self.noise_multiplier,
            self.epochs, self.metadata_share, self.method_options, self.default_method_options,
            self.anchor_, anchoring_for(self.anchor_, public), self.out_of_bounds, self.seed,
            self.device, self.progress, self.checkpoint_dir, self.checkpoint_every,
            record_count=self.record_count, unit=self.unit,
        )  # fmt: skip

    def _public(self) -> PublicImages | None:
        """The declared public images, scaled by the schema's declared ranges (never read
        through the engine, never charged)."""
        return None if self.public_data is None else public_images(self.public_data, self.schema)

    def _resolved_anchor(self, public: PublicImages | None) -> Any:
        """The run's anchoring: the kind's default for "auto", with a share for the refiner
        when one is named (:func:`dpforge.options.refined_anchor`)."""
        anchor = resolve_anchor(self.anchor, self.schema, public is not None)
        named = self.method if self.method_given else None
        return run_options.refined_anchor(anchor, isinstance(self.anchor, str), named)

    def _seed_sequence(self, stream: int) -> int | None:
        return seed_sequence(self.seed, stream)

    def check_options(self) -> None:
        """Refuse bad options before any record is read (:mod:`dpforge.options`); the command
        line calls it before reading the data file."""
        run_options.check_budget(self.epsilon, self.delta, self.metadata_share)
        run_options.check_noise_multiplier(self.noise_multiplier)
        run_options.check_epochs(self.epochs)
        run_options.check_seed(self.seed)
        run_options.check_device(self.device)
        if self.method_options is not None:
            run_options.check_method_config(self.method_options, self.epsilon)
        public = self._public()
        refuse_without_public(self.method_options, public)
        alone = anchoring_for(self._resolved_anchor(public), public).alone
        given = None if self.default_method_options else self.method_options
        run_options.check_method_options_used(alone, given)
        unit = self.unit
        unit.check_schema(self.schema)
        processes = current_reducer(self.device).world_size
        if not alone:
            unit.refuse_refinement(alone, self.method, self._refiner_options(), processes)
        if not isinstance(self.checkpoint_every, int) or self.checkpoint_every < 1:
            raise PrivacyError(
                f"checkpoint_every must be a whole number >= 1, got {self.checkpoint_every!r}"
            )
        count = self.record_count
        if count is not None and (not isinstance(count, numbers.Integral) or count < 1):
            raise PrivacyError(f"record_count must be a whole number >= 1, got {count!r}")

    def _refiner_options(self) -> Any:
        """The refiner's options as given, or its defaults (for a run that refines)."""
        return self.method_options or METHODS[self.method][1]()

    @property
    def unit(self) -> PrivacyUnit:
        """The neighbouring relation of the guarantee: one row, or one person's rows."""
        return person_unit(self.privacy_unit, self.max_rows_per_unit)

    # -- what the fit released -------------------------------------------------------------
    def privacy_spent(self) -> PrivacyReport:
        """epsilon under PLD (reported) and RDP, from the ledger of what the run actually did."""
        self._require_fitted()
        return self.ledger_.report(self.delta)

    def fitted_model(self) -> FittedModel:
        """What sampling reads of this fit (:mod:`dpforge.generate` never sees the facade)."""
        self._require_fitted()
        return FittedModel(
            self.schema_, self.encoder_, self.generator_, self.label_prior_, self.device,
            getattr(self, "sample_release_", None),
        )  # fmt: skip

    def _require_fitted(self) -> None:
        if not hasattr(self, "generator_"):
            raise DataError("this synthesizer is not fitted: call fit(data) or dpforge.load(path)")

    def save(self, path: str | Path, overwrite: bool = False) -> Path:
        """Write the model folder: generator weights (safetensors) and public JSON only."""
        self._require_fitted()
        return save_model(self, Path(path), overwrite=overwrite)


def _method_options(method: str, options: Any) -> Any:
    """The refiner's options, checked against the method (None: its defaults, built only by a
    run that refines)."""
    if method not in METHODS:
        raise PrivacyError(f"unknown method '{method}'; available: {sorted(METHODS)}")
    config_cls = METHODS[method][1]
    if options is not None and not isinstance(options, config_cls):
        raise PrivacyError(
            f"method '{method}' takes a {config_cls.__name__}, got {type(options).__name__}"
        )
    return options
