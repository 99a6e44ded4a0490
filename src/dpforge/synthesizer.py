"""The facade: ``Synthesizer(schema, method=..., epsilon=..., ...).fit(data)``, then sample/save.

``fit`` runs the whole private pipeline in order, each step in its own module: check the data
(``data.tables``), estimate undeclared metadata under DP (``data.metadata``), encode
(``data.encoder``), plan the number of steps that fits the budget (``privacy.accounting``),
train (``training``), and record every DP event in one ledger (``privacy.ledger``).
"""

from __future__ import annotations

import math
import numbers
import warnings
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field, is_dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

from dpforge import options as run_options
from dpforge.data.arrays import ArrayData
from dpforge.data.encoder import TableEncoder
from dpforge.data.kinds import CLIP_NOTE, kind_of
from dpforge.data.metadata import MetadataBudget
from dpforge.data.tables import canonical_text
from dpforge.errors import DataError, PrivacyError
from dpforge.methods import METHODS
from dpforge.methods.base import GanMethod
from dpforge.model_io import read_model, restore, save_model
from dpforge.nets.init import initialise
from dpforge.privacy.accounting import PrivacyReport
from dpforge.privacy.budget import RunCharge
from dpforge.privacy.calibration import noise_for_target, steps_for_target
from dpforge.privacy.ledger import PrivacyLedger
from dpforge.privacy.noise import make_generator
from dpforge.privacy.resume import (
    DATA_KEY,
    SETTINGS_KEY,
    check_resume,
    data_fingerprint,
    flat_settings,
)
from dpforge.schema.array import ArraySchema, schema_from_dict
from dpforge.schema.table import Schema, refuse_draft
from dpforge.statistics import array_anchor
from dpforge.statistics.anchor import AnchorConfig
from dpforge.statistics.cells import (
    adaptive_columns,
    bins_from_edges,
    measure_fine_histograms,
    quantile_bins,
)
from dpforge.statistics.features import (
    MOMENTS,
    FeatureAnchorConfig,
    MeasuredEmbedding,
    feature_anchor_defaults,
)
from dpforge.statistics.marginals import MeasuredMarginal, encoded_cells
from dpforge.statistics.moments import ClassMoments, Subspace
from dpforge.statistics.rounds import (
    anchor_loss,
    fit_anchored_generator,
    measure_round_one,
    plan_anchoring,
)
from dpforge.training import (
    TrainingDivergedError,
    TrainingPlan,
    TrainingState,
    checkpoint_lock,
    has_checkpoint,
    load_checkpoint,
    read_checkpoint_info,
    reserved_steps,
    save_checkpoint,
    train,
    write_ahead_ledger,
)

DEFAULT_EPOCHS = 50.0
SAMPLE_CHUNK_ROWS = 20_000  # rows generated and decoded at once when streaming
MIN_STEPS = 100
_ANCHOR_ONLY_NOTE = {
    False: "noise_multiplier and epochs set the discriminator's steps, but this run "
    "anchors on marginals alone (AnchorConfig share 1.0, the default for tables): "
    "set the anchor share to 0 (anchor=None, --anchor-share 0) for the "
    "discriminator alone, or between 0 and 1 to refine with it",
    True: "noise_multiplier and epochs set the discriminator's steps, but this run "
    "anchors on random-feature embeddings alone (FeatureAnchorConfig share 1.0, the default "
    "for images and series): pass anchor=None for the discriminator alone, or a "
    "FeatureAnchorConfig with share between 0 and 1 to refine with it",
}


@dataclass
class RunSetup:
    """What a run decided before training: completed schema, prior, ledger so far, plan."""

    schema: Schema | ArraySchema
    label_prior: np.ndarray | None
    ledger: PrivacyLedger
    plan: TrainingPlan
    n_records: int
    marginals: tuple[MeasuredMarginal, ...] = ()
    cell_edges: dict[str, list[float]] = field(default_factory=dict)  # DP-placed numeric cells
    embedding: MeasuredEmbedding | None = None  # arrays: the feature anchoring's release
    feature_seed: int = 0  # arrays: the seed of the public random feature map
    subspace: Subspace | None = None  # images: the moment anchoring's first release
    moments: ClassMoments | None = None  # images: its second release

    @property
    def array_anchored(self) -> bool:
        """Whether an image or series generator is anchored (embedding or moments)."""
        return self.embedding is not None or self.moments is not None

    def to_dict(self) -> dict[str, Any]:
        prior = None if self.label_prior is None else [float(p) for p in self.label_prior]
        return {
            "schema": self.schema.to_dict(),
            "label_prior": prior,
            "ledger": self.ledger.to_dict(),
            "plan": asdict(self.plan),
            "n_records": self.n_records,
            "marginals": [m.to_dict() for m in self.marginals],
            "cell_edges": self.cell_edges,
            "embedding": None if self.embedding is None else self.embedding.to_dict(),
            "feature_seed": self.feature_seed,
            "subspace": None if self.subspace is None else self.subspace.to_dict(),
            "moments": None if self.moments is None else self.moments.to_dict(),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> RunSetup:
        prior = d["label_prior"]
        return cls(
            schema_from_dict(d["schema"], allow_review=True),
            None if prior is None else np.asarray(prior, dtype=np.float64),
            PrivacyLedger.from_dict(d["ledger"]),
            TrainingPlan(**d["plan"]),
            int(d["n_records"]),
            tuple(MeasuredMarginal.from_dict(m) for m in d.get("marginals", [])),
            dict(d.get("cell_edges", {})),
            None if d.get("embedding") is None else MeasuredEmbedding.from_dict(d["embedding"]),
            int(d.get("feature_seed", 0)),
            None if d.get("subspace") is None else Subspace.from_dict(d["subspace"]),
            None if d.get("moments") is None else ClassMoments.from_dict(d["moments"]),
        )


class Synthesizer:
    """Differentially private synthetic tables, images and time series.

    Parameters
    ----------
    schema: the public metadata: a :class:`dpforge.schema.table.Schema` (tables, fit on a DataFrame)
        or an :class:`dpforge.schema.array.ArraySchema` (images or time series, fit on
        :class:`dpforge.data.arrays.ArrayData`).
    method: "dpcgan", "dpwgan" or "gswgan": the private discriminator that trains (or, with
        anchoring, refines) the generator.
    epsilon, delta: the total privacy budget, metadata included. ``epsilon=math.inf`` trains
        the non-private baseline of the same code path (sigma = 0, C = inf); it needs ``epochs``.
    noise_multiplier, epochs: give at most one to fix it; the other is calibrated by the
        accountant. With neither, 50 epochs and the noise multiplier that fits the budget.
    metadata_share: fraction of epsilon and delta for DP estimates of undeclared metadata.
    anchor: marginal anchoring for tables (:class:`dpforge.statistics.anchor.AnchorConfig`):
        1-way marginals and label x column marginals measured once with the Gaussian mechanism
        (charged to the budget) and matched by the generator, numeric columns on public cells.
        For images and series, feature anchoring
        (:class:`dpforge.statistics.features.FeatureAnchorConfig`): per-class mean embeddings
        in public random Fourier features (series: values and first differences) and the class
        counts, one Gaussian release charged to the budget, matched by the generator.
        "auto" (default) anchors tables on marginals and arrays on features; None turns it off
        (the discriminator alone, numeric columns scaled to [-1, 1]). ``share`` is the part of
        the budget after the metadata that the measurements get; 1.0 (default) trains on them
        alone, without discriminator steps.
    method_options: the method's config (``DPCGANConfig``, ``DPWGANConfig``,
        ``GSWGANConfig``): batch size, C, networks, optimizers.
    seed: None (noise seeded from the OS: use for releases) or an int (reproducible runs).
    checkpoint_dir, checkpoint_every: where and how often to write a private, resumable
        checkpoint (it holds the discriminator: keep it with the data, never publish it).
    """

    def __init__(
        self,
        schema: Schema | ArraySchema,
        method: str = "dpcgan",
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
        anchor: AnchorConfig | str | None = "auto",
    ) -> None:
        if method not in METHODS:
            raise PrivacyError(f"unknown method '{method}'; available: {sorted(METHODS)}")
        self.schema = schema
        self.method = method
        self.epsilon = epsilon
        self.delta = delta
        self.noise_multiplier = noise_multiplier
        self.epochs = epochs
        self.metadata_share = metadata_share
        config_cls = METHODS[method][1]
        if method_options is not None and not isinstance(method_options, config_cls):
            raise PrivacyError(
                f"method '{method}' takes a {config_cls.__name__}, got "
                f"{type(method_options).__name__}"
            )
        self.method_options = method_options or config_cls()
        self.default_method_options = method_options is None
        self.out_of_bounds = out_of_bounds
        self.seed = seed
        self.device = device
        self.progress = progress
        self.checkpoint_dir = None if checkpoint_dir is None else Path(checkpoint_dir)
        self.checkpoint_every = checkpoint_every
        self.anchor = anchor

    # -- fit -----------------------------------------------------------------------------
    def fit(
        self, data: pd.DataFrame | ArrayData, *, budget: RunCharge | None = None
    ) -> Synthesizer:
        """Train on the private ``data`` (a table, or image / time-series records); returns self.

        With ``checkpoint_dir``, an interrupted fit called again with the same data resumes:
        metadata estimates and the plan come from the checkpoint (never re-estimated, so never
        paid twice) and training continues from the last checkpointed step with the same random
        state (replaying exactly what the uninterrupted run would have done when no step ran
        after that checkpoint). The checkpoint
        folder is locked for the whole fit: a second fit on it fails at once. Steps a kill
        wasted (run after the last checkpoint) stay charged, so the resumed run trains for
        fewer steps rather than spend more than its plan (see ``dpforge.training``).

        With ``budget`` (the data set's :class:`dpforge.privacy.budget.DataBudget`), the run's
        planned events are added to the budget file before training (a resumed run is not
        charged twice), and a run that would take the data set past its declared total raises
        ``BudgetExceededError`` before it trains.
        """
        self.check_options()
        with checkpoint_lock(self.checkpoint_dir):
            return self._fit(data, budget)

    def _fit(self, data: pd.DataFrame | ArrayData, budget: RunCharge | None) -> Synthesizer:
        refuse_draft(self.schema)
        kind = kind_of(self.schema)
        records = kind.validate(data, self.schema, self.out_of_bounds)
        if kind.may_clip(self.schema, self.out_of_bounds):
            warnings.warn(CLIP_NOTE, stacklevel=3)  # public settings only, never a count
        self.anchor_ = resolve_anchor(self.anchor, self.schema)
        self._check_privacy_request(len(records))
        self.config_ = METHODS[self.method][0].resolve_config(self.method_options, len(records))
        run_options.check_against_size(self.config_, len(records))
        if isinstance(self.anchor_, AnchorConfig) and self.default_method_options:
            # the anchored generator's widths, unless the caller chose the method's options
            self.config_ = replace(self.config_, generator_hidden=self.anchor_.generator_hidden)
        if isinstance(self.anchor_, FeatureAnchorConfig):
            self.config_ = self._array_anchor_config(self.config_)
        setup = self._resumed_setup(len(records)) or self._new_setup(records)
        # Records of categories or classes the DP threshold did not release are dropped; N,
        # which set q and the plan, stays the number of records read (see keep_released_rows).
        records = kind.released(records, setup.schema)
        encoder = self._encoder(setup.schema, setup.cell_edges)
        method = self._build_method(encoder, setup.label_prior, setup.plan.noise_multiplier)
        self.budget_run_ = self._charge_budget(budget, setup, method)
        self._anchor_generator(method, encoder, setup, records)
        wasted = 0
        if setup.plan.steps:  # the dense encoding only when a discriminator trains on it
            features, labels = encoder.transform(records)
            wasted = self._train(method, features, labels, setup)
        ledger, plan = setup.ledger, setup.plan
        if plan.steps:
            lost = f" ({wasted} of them lost to an interruption)" if wasted else ""
            ledger.record(
                f"{self.method}: {plan.steps} discriminator steps{lost}",
                method.step_event(plan.sample_rate, plan.steps),
            )
        self._check_spent(ledger)
        if not all(torch.isfinite(p).all() for p in method.released_generator().parameters()):
            raise TrainingDivergedError(
                "the trained generator holds NaN or infinite weights, so nothing is released: "
                "lower --clip-norm, --gp-weight or the learning rates and run again"
            )
        self.bayesian_ = self._bayesian_result(method, ledger)
        self.schema_, self.encoder_, self.ledger_ = setup.schema, encoder, ledger
        self.label_prior_, self.plan_ = setup.label_prior, plan
        self.generator_ = method.released_generator().eval()
        return self

    def _array_anchor_config(self, config: Any) -> Any:
        """The anchored generator: the subspace Gaussian for moments (whatever the method's
        options, unless they name another generator), the anchor's choice by default."""
        moments = self.anchor_.statistic == MOMENTS
        if moments and config.generator_net not in ("auto", "gaussian"):
            raise PrivacyError(
                f"moment anchoring builds its own generator ('gaussian'), but the method options "
                f"ask for '{config.generator_net}': leave generator_net at 'auto', or anchor "
                "with FeatureAnchorConfig(statistic='embedding')"
            )
        if moments or self.default_method_options:
            return array_anchor.anchored_config(config, self.anchor_, self.schema.shape)
        return config

    def _charge_budget(self, budget: RunCharge | None, setup: RunSetup, method: GanMethod) -> Any:
        """Write this run's planned events into the data set's budget file (write-ahead)."""
        if budget is None:
            return None
        planned = PrivacyLedger(setup.ledger.entries)
        if setup.plan.steps:
            planned.record(
                f"{self.method}: {setup.plan.steps} discriminator steps",
                method.step_event(setup.plan.sample_rate, setup.plan.steps),
            )
        return budget.charge(
            planned,
            epsilon=self.epsilon,
            delta=self.delta,
            description=f"{self.method} fit, target epsilon {self.epsilon:g}, delta {self.delta:g}",
            checkpoint=self.checkpoint_dir,
        )

    def _new_setup(self, records: Any) -> RunSetup:
        """Pay for the metadata, then plan the steps that fit the rest of the budget."""
        ledger = PrivacyLedger()
        rng = np.random.default_rng(self._seed_sequence(0))
        schema, prior = kind_of(self.schema).complete(
            records, self.schema, self._metadata_budget(), ledger, rng
        )
        released = kind_of(self.schema).released(records, schema)
        if isinstance(self.anchor_, FeatureAnchorConfig):
            return self._new_array_setup(released, len(records), schema, prior, ledger, rng)
        marginals, edges = self._measure_marginals(released, len(records), schema, ledger, rng)
        if self.anchor_ is not None and self.anchor_.share >= 1.0:
            q = METHODS[self.method][0].sample_rate(self.config_, len(records))
            plan = TrainingPlan(0, q, 0.0, self.checkpoint_every)
        else:
            plan = self._plan_budget(len(records), ledger)
        return RunSetup(schema, prior, ledger, plan, len(records), marginals, edges)

    def _new_array_setup(self, records, n_public, schema, prior, ledger, rng) -> RunSetup:
        """Images and series with feature anchoring: the embedding release, then the plan."""
        config = self.anchor_
        target = array_anchor.anchor_target(self.epsilon, self.delta, config.share, ledger)
        feature_seed = int(rng.integers(2**62))  # public: drawn from the run's seed, not data
        encoder = kind_of(schema).encoder(schema)
        embedding = subspace = moments = None
        if config.statistic == MOMENTS:
            subspace, moments = array_anchor.measure_moments_for_run(
                config, encoder, records, target, ledger, rng
            )
        else:
            embedding = array_anchor.measure_for_run(
                config, encoder, records, target, ledger, (feature_seed, rng)
            )
        if config.share >= 1.0:
            q = METHODS[self.method][0].sample_rate(self.config_, n_public)
            plan = TrainingPlan(0, q, 0.0, self.checkpoint_every)
        else:
            plan = self._plan_budget(n_public, ledger)
        return RunSetup(
            schema, prior, ledger, plan, n_public, embedding=embedding,
            feature_seed=feature_seed, subspace=subspace, moments=moments,
        )  # fmt: skip

    def _encoder(self, schema: Schema | ArraySchema, edges: dict | None = None) -> Any:
        if not isinstance(self.anchor_, AnchorConfig):
            return kind_of(schema).encoder(schema)
        cells = bins_from_edges(schema.feature_columns, edges or {})
        return TableEncoder(schema, n_bins=self.anchor_.n_bins, cells=cells)

    def _measure_marginals(self, records, n_public: int, schema, ledger: PrivacyLedger, rng):
        """Plan the anchoring (its releases go into the ledger now) and run its first round."""
        if self.anchor_ is None or self.anchor_.share == 0:
            return (), {}
        public = self._encoder(schema)
        label = schema.label_column
        adaptive = adaptive_columns(schema.feature_columns, self.anchor_.n_bins)
        plan = plan_anchoring(
            self.anchor_, public.spans, label and label.name, self._anchor_target(ledger),
            ledger, adaptive=len(adaptive),
        )  # fmt: skip
        self.anchor_plan_ = plan
        fine = measure_fine_histograms(records, adaptive, plan.cells_noise, rng)
        edges = {
            c.name: quantile_bins(c, fine[c.name], n_public, self.anchor_.n_bins).edges.tolist()
            for c in adaptive
        }
        encoder = self._encoder(schema, edges)
        label_name, blocks = self._blocks(encoder, records)
        measured = measure_round_one(plan, blocks, encoder.spans, label_name, rng, n_public)
        return tuple(measured), edges

    def _blocks(self, encoder: TableEncoder, records: pd.DataFrame):
        """The label's name and every column's cell indices (encoded a chunk at a time)."""
        label = encoder.schema.label_column
        label_name = None if label is None else label.name
        return label_name, encoded_cells(encoder, records, label_name)

    def _anchor_target(self, ledger: PrivacyLedger) -> tuple[float, float] | None:
        """(epsilon, delta) the ledger may reach after the anchoring (all of it without a
        discriminator); None for the non-private baseline."""
        if not math.isfinite(self.epsilon):
            return None
        spent_share = min(1.0, self.metadata_share + (1 - self.metadata_share) * self.anchor_.share)
        return self.epsilon * spent_share, self.delta * spent_share - ledger.extra_delta()

    def _anchor_generator(self, method: GanMethod, encoder: Any, setup: RunSetup, records) -> None:
        """Train the generator on the measured marginals (free), unless resuming a GAN run."""
        if setup.array_anchored:
            self._anchor_array_generator(method, encoder, setup)
            return
        if not setup.marginals:
            return
        prior = None
        if setup.label_prior is not None:
            prior = torch.as_tensor(setup.label_prior, dtype=torch.float32)
        label_name, blocks = self._blocks(encoder, records)
        if setup.plan.steps and has_checkpoint(self.checkpoint_dir):
            loss = anchor_loss(setup.marginals, encoder.spans, label_name, prior, self.anchor_)
            method.anchor = (loss, self.anchor_.weight)
            return  # the checkpoint holds the anchored generator and every measurement
        torch_generator_init(method, self._seed_sequence(2))
        rngs = (
            np.random.default_rng(self._seed_sequence(4)),
            make_generator(self._seed_sequence(3)),
        )
        measured, loss = fit_anchored_generator(
            method.generator, list(setup.marginals), self.anchor_plan_, blocks, encoder.spans,
            label_name, prior, self.anchor_, rngs,
        )  # fmt: skip
        setup.marginals = tuple(measured)
        method.anchor = (loss, self.anchor_.weight)
        method.generator_average.load_state_dict(method.generator.state_dict())

    def _anchor_array_generator(self, method: GanMethod, encoder: Any, setup: RunSetup) -> None:
        """Train the generator on the released embedding, or build it from the released moments
        (post-processing), unless resuming."""
        if setup.moments is not None:
            if not (setup.plan.steps and has_checkpoint(self.checkpoint_dir)):
                torch_generator_init(method, self._seed_sequence(2))  # the discriminator's
                array_anchor.set_gaussian(method.generator, setup.subspace, setup.moments)
                method.generator_average.load_state_dict(method.generator.state_dict())
            return  # the private discriminator (if any) refines the Gaussian's parameters
        layout = encoder.layout
        features = array_anchor.feature_map(
            layout.kind, layout.shape, self.anchor_, setup.feature_seed
        )
        loss = array_anchor.EmbeddingLoss(setup.embedding, features)
        method.anchor = (loss, self.anchor_.weight)
        if setup.plan.steps and has_checkpoint(self.checkpoint_dir):
            return  # the checkpoint holds the anchored generator
        torch_generator_init(method, self._seed_sequence(2))
        rng = make_generator(self._seed_sequence(3))
        array_anchor.fit_generator(method.generator, loss, encoder.n_classes, self.anchor_, rng)
        method.generator_average.load_state_dict(method.generator.state_dict())

    def _resumed_setup(self, n_records: int) -> RunSetup | None:
        """The checkpoint's setup, if there is one and it was made with this run's settings."""
        if not has_checkpoint(self.checkpoint_dir):
            return None
        info = read_checkpoint_info(self.checkpoint_dir)
        setup = RunSetup.from_dict(info["setup"])
        if setup.n_records != n_records:
            raise PrivacyError(
                f"the checkpoint in {self.checkpoint_dir} was made on {setup.n_records} records, "
                f"not {n_records}: use another --checkpoint-dir or delete it"
            )
        stored = info.get(SETTINGS_KEY) or {}
        options = {k: v for k, v in stored.items() if k != DATA_KEY}
        check_resume(options, self._privacy_settings(n_records), self.checkpoint_dir)
        return setup

    def _privacy_settings(self, n_records: int) -> dict[str, Any]:
        """Every setting that fixes this run's accounting, as its checkpoint stores them."""
        anchor = getattr(self, "anchor_", None)
        return flat_settings(
            {
                "method": self.method,
                "epsilon": self.epsilon,
                "delta": self.delta,
                "noise_multiplier": self.noise_multiplier,
                "epochs": self.epochs,
                "metadata_share": self.metadata_share,
                "out_of_bounds": self.out_of_bounds,
                "n_records": n_records,
                "sample_rate": METHODS[self.method][0].sample_rate(self.config_, n_records),
                "method_options": asdict(self.config_),
                "anchor": asdict(anchor) if is_dataclass(anchor) else anchor,
                "schema": self.schema.to_dict(),
            }
        )

    def _seed_sequence(self, stream: int) -> int | None:
        # modulo 2**63: every seed options.check_seed allows gives a valid torch seed
        return None if self.seed is None else (self.seed * 1000 + stream) % run_options.SEED_LIMIT

    def check_options(self) -> None:
        """Refuse bad options before any record is read (:mod:`dpforge.options`); the command
        line calls it before reading the data file."""
        run_options.check_budget(self.epsilon, self.delta, self.metadata_share)
        run_options.check_noise_multiplier(self.noise_multiplier)
        run_options.check_epochs(self.epochs)
        run_options.check_seed(self.seed)
        run_options.check_method_config(self.method_options, self.epsilon)
        if not isinstance(self.checkpoint_every, int) or self.checkpoint_every < 1:
            raise PrivacyError(
                f"checkpoint_every must be a whole number >= 1, got {self.checkpoint_every!r}"
            )

    def _check_privacy_request(self, n_records: int) -> None:
        if self.delta >= 1.0 / n_records and math.isfinite(self.epsilon):
            raise PrivacyError(
                f"delta = {self.delta:g} is not below 1/N = {1 / n_records:.3g} for N = "
                f"{n_records} records: such a delta allows publishing a whole record; choose "
                f"delta well below 1/N (e.g. {_suggest_delta(n_records):g})"
            )
        if (
            self.noise_multiplier is not None
            and self.epochs is not None
            and math.isfinite(self.epsilon)
        ):
            raise PrivacyError("give noise_multiplier or epochs, not both: the other is calibrated")
        marginals_only = self.anchor_ is not None and self.anchor_.share >= 1.0
        if marginals_only and (self.noise_multiplier is not None or self.epochs is not None):
            raise PrivacyError(_ANCHOR_ONLY_NOTE[isinstance(self.anchor_, FeatureAnchorConfig)])
        if not math.isfinite(self.epsilon) and self.epochs is None and not marginals_only:
            raise PrivacyError("a non-private run (epsilon = inf) needs epochs")

    def _metadata_budget(self) -> MetadataBudget:
        if not math.isfinite(self.epsilon):
            return MetadataBudget(epsilon=0.0, delta=0.0, non_private=True)
        return MetadataBudget(self.epsilon * self.metadata_share, self.delta * self.metadata_share)

    def _plan_budget(self, n_records: int, ledger: PrivacyLedger) -> TrainingPlan:
        method_cls = METHODS[self.method][0]
        q = method_cls.sample_rate(self.config_, n_records)
        if not math.isfinite(self.epsilon):
            steps = run_options.check_steps(
                max(1, round(self.epochs / q)), f"epochs={self.epochs:g}"
            )
            return TrainingPlan(steps, q, 0.0, self.checkpoint_every)
        delta = self.delta - ledger.extra_delta()
        base = ledger.event()

        def event(sigma: float, steps: int):
            return method_cls.training_event(self.config_, q, sigma, steps)

        if self.noise_multiplier is None:
            epochs = DEFAULT_EPOCHS if self.epochs is None else self.epochs
            steps = run_options.check_steps(max(1, round(epochs / q)), f"epochs={epochs:g}")
            sigma = noise_for_target(
                lambda s: event(s, steps), self.epsilon, delta, base_event=base
            )
        else:
            sigma = self.noise_multiplier
            steps = steps_for_target(
                lambda n: event(sigma, n), self.epsilon, delta, base_event=base,
                max_steps=run_options.MAX_STEPS + 1,
            )  # fmt: skip
            run_options.check_steps(
                steps, f"noise multiplier {sigma:g} at epsilon {self.epsilon:g}"
            )
        if steps < MIN_STEPS:
            raise PrivacyError(
                f"the budget epsilon = {self.epsilon:g} allows only {steps} training steps at "
                f"noise multiplier {sigma:.3g} (at least {MIN_STEPS} are needed to learn "
                "anything): raise epsilon, lower the noise multiplier or the batch size"
            )
        return TrainingPlan(steps, q, sigma, self.checkpoint_every)

    def _build_method(self, encoder: Any, prior, sigma: float) -> GanMethod:
        method_cls, _ = METHODS[self.method]
        options = self.config_
        if not math.isfinite(self.epsilon):
            options = type(options)(**{**asdict(options), "clip_norm": math.inf})
        prior_t = None if prior is None else torch.as_tensor(prior, dtype=torch.float32)
        return method_cls(options, encoder.layout, encoder.n_classes, prior_t, sigma, self.device)

    def _train(self, method, features, labels, setup: RunSetup) -> int:
        """Train from scratch or from the checkpoint; returns the private steps a kill wasted
        (charged but not in the model)."""
        generator = make_generator(self._seed_sequence(1), self.device)
        if not setup.marginals and not setup.array_anchored:
            torch_generator_init(method, self._seed_sequence(2))
        x = torch.as_tensor(features, dtype=torch.float32, device=self.device)
        y = None if labels is None else torch.as_tensor(labels, device=self.device)
        state, checkpoint, reserve = TrainingState(), None, None
        if self.checkpoint_dir is not None:
            settings = self._privacy_settings(setup.n_records)
            settings[DATA_KEY] = data_fingerprint(features, labels)
            folder = self.checkpoint_dir
            run_info = {"setup": setup.to_dict(), SETTINGS_KEY: settings}
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
                write_ahead_ledger(folder, setup.ledger, self.method, event, steps, self.delta)

        train(  # advances ``state`` in place
            method,
            x,
            y,
            setup.plan,
            generator,
            state=state,
            checkpoint=checkpoint,
            reserve=reserve,
            progress=self.progress,
        )
        return state.spent - state.step

    def _bayesian_result(self, method: GanMethod, ledger: PrivacyLedger):
        """The data-dependent Bayesian bound, when asked for: for the steward's eyes only.

        It is computed from private gradients without noise, so it is never saved in the model
        folder; it stands NEXT TO the worst-case epsilon, never in its place.
        """
        accountant = getattr(method, "bayesian", None)
        if accountant is None or accountant.steps == 0:
            return None
        return accountant.result(self.delta, worst_case_epsilon=ledger.report(self.delta).epsilon)

    def _check_spent(self, ledger: PrivacyLedger) -> None:
        """Refuse to release if the run spent more than the target (the plan prevents it)."""
        spent = ledger.report(self.delta).epsilon
        if math.isfinite(self.epsilon) and spent > self.epsilon * (1 + 1e-9):
            raise PrivacyError(
                f"internal error: the run spent epsilon = {spent:.4f}, more "
                f"than the target {self.epsilon}; nothing is released"
            )

    # -- use -------------------------------------------------------------------------------------
    def privacy_spent(self) -> PrivacyReport:
        """epsilon under PLD (reported) and RDP, from the ledger of what the run actually did."""
        self._require_fitted()
        return self.ledger_.report(self.delta)

    def sample(
        self, n: int, conditions: dict[str, Any] | None = None, seed: int | None = None
    ) -> pd.DataFrame | ArrayData:
        """``n`` synthetic records: a table with the schema's columns, or :class:`ArrayData`
        for images and time series. ``conditions={label: value}`` fixes the label; without it
        labels are drawn from the (uniform, declared or DP) label prior."""
        self._check_sample_request(n, seed)
        return self._sample_batch(n, conditions or {}, make_generator(seed, self.device))

    def sample_chunks(
        self,
        n: int,
        conditions: dict[str, Any] | None = None,
        seed: int | None = None,
        chunk_rows: int = SAMPLE_CHUNK_ROWS,
    ) -> Iterator[pd.DataFrame | ArrayData]:
        """``n`` synthetic records as consecutive chunks of at most ``chunk_rows`` each, so
        that memory stays bounded however large ``n`` is (the command line streams them to the
        output file). One random stream runs through the chunks: the same seed and chunk size
        give the same records."""
        self._check_sample_request(n, seed)
        if isinstance(chunk_rows, bool) or not isinstance(chunk_rows, int) or chunk_rows < 1:
            raise DataError(f"chunk_rows must be a whole number >= 1, got {chunk_rows!r}")
        generator = make_generator(seed, self.device)
        for start in range(0, n, chunk_rows):
            yield self._sample_batch(min(chunk_rows, n - start), conditions or {}, generator)

    def _check_sample_request(self, n: Any, seed: Any) -> None:
        self._require_fitted()
        if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 1:
            raise DataError(f"the number of rows to sample must be a whole number >= 1, got {n}")
        run_options.check_seed(seed)

    def _sample_batch(
        self, n: int, conditions: dict[str, Any], generator: torch.Generator
    ) -> pd.DataFrame | ArrayData:
        labels = self._condition_labels(n, conditions, generator)
        with torch.no_grad():
            z = self.generator_.sample_latent(n, generator)
            rows = self.generator_(z, labels)
        features = rows.cpu().numpy()
        del rows, z
        labels_np = None if labels is None else labels.cpu().numpy()
        if getattr(self.encoder_, "n_bins", None) is None:
            return self.encoder_.inverse_transform(features, labels_np)
        seed = int(torch.randint(2**62, (1,), generator=generator))
        return self.encoder_.inverse_transform(features, labels_np, np.random.default_rng(seed))

    def _condition_labels(
        self, n: int, conditions: dict[str, Any], generator
    ) -> torch.Tensor | None:
        name, classes = kind_of(self.schema_).label(self.schema_)
        unknown = [k for k in conditions if name is None or k != name]
        if unknown:
            raise DataError(
                f"can only condition on the label ({name or 'this model has none'}); got {unknown}"
            )
        if name is None:
            return None
        if conditions:
            value = canonical_text(conditions[name])
            if value not in classes:
                raise DataError(
                    f"condition {name}={value!r}: not a class of '{name}'; choose one of "
                    f"{list(classes)}"
                )
            return torch.full((n,), classes.index(value), dtype=torch.long, device=self.device)
        prior = torch.as_tensor(self.label_prior_, dtype=torch.float32, device=self.device)
        return torch.multinomial(prior, n, replacement=True, generator=generator)

    def _require_fitted(self) -> None:
        if not hasattr(self, "generator_"):
            raise DataError("this synthesizer is not fitted: call fit(data) or dpforge.load(path)")

    def save(self, path: str | Path, overwrite: bool = False) -> Path:
        """Write the model folder: generator weights (safetensors) and public JSON only."""
        self._require_fitted()
        return save_model(self, Path(path), overwrite=overwrite)


def load(path: str | Path) -> Synthesizer:
    """Load a model folder written by :meth:`Synthesizer.save`; the result samples, not trains."""
    return restore(Synthesizer, *read_model(path))


def torch_generator_init(method: GanMethod, seed: int | None) -> None:
    """Initialise network weights from a run-owned generator (no global RNG)."""
    generator = make_generator(seed)
    for module in method.trained_networks():
        initialise(module, generator)
    method.generator_average.load_state_dict(method.generator.state_dict())


def resolve_anchor(
    anchor: AnchorConfig | FeatureAnchorConfig | str | None, schema: Any
) -> AnchorConfig | FeatureAnchorConfig | None:
    """The anchoring of this run: "auto" anchors tables on marginals, images on moments in a
    principal subspace and series on random-feature embeddings."""
    if anchor == "auto":
        anchor = (
            AnchorConfig() if isinstance(schema, Schema) else feature_anchor_defaults(schema.kind)
        )
    if anchor is None:
        return None
    if not isinstance(anchor, AnchorConfig | FeatureAnchorConfig):
        raise PrivacyError(
            f"anchor must be 'auto', None, an AnchorConfig (tables) or a FeatureAnchorConfig "
            f"(images, series), got {anchor!r}"
        )
    if isinstance(anchor, AnchorConfig) and not isinstance(schema, Schema):
        raise PrivacyError(
            "marginal anchoring (AnchorConfig) is for tables; images and series take a "
            "FeatureAnchorConfig, or anchor=None"
        )
    if isinstance(anchor, FeatureAnchorConfig) and isinstance(schema, Schema):
        raise PrivacyError(
            "feature anchoring (FeatureAnchorConfig) is for images and series; tables take an "
            "AnchorConfig, or anchor=None"
        )
    try:
        anchor.validate()
    except ValueError as exc:
        raise PrivacyError(str(exc)) from None
    if isinstance(anchor, FeatureAnchorConfig) and anchor.share == 0:
        return None  # no embedding release: the discriminator alone, with its own generator
    if isinstance(anchor, FeatureAnchorConfig):
        return array_anchor.resolve_statistic(anchor, schema.kind)
    return anchor


def _suggest_delta(n_records: int) -> float:
    return 10.0 ** math.floor(math.log10(1.0 / (10 * n_records)))
