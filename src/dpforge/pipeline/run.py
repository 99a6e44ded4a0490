"""What every stage of a run shares: the settings (:class:`RunSettings`), and what the run has
decided so far (:class:`RunSetup`, the part a checkpoint stores)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from dpforge import options as run_options
from dpforge.kinds import Anchoring, Measured, kind_of
from dpforge.privacy.ledger import PrivacyLedger
from dpforge.privacy.noise import make_generator
from dpforge.privacy.person import PER_RECORD, PrivacyUnit
from dpforge.schema.array import ArraySchema, schema_from_dict
from dpforge.schema.table import Schema
from dpforge.training import TrainingPlan


@dataclass
class RunSettings:
    """The facade's options, resolved for one run: nothing here depends on the records."""

    schema: Schema | ArraySchema
    method: str
    epsilon: float
    delta: float
    noise_multiplier: float | None
    epochs: float | None
    metadata_share: float
    config: Any  # the method's config (resolved for the data size in the pipeline)
    default_options: bool  # whether the caller left the method's options at their defaults
    anchor: Any  # the resolved AnchorConfig / FeatureAnchorConfig / None
    anchoring: Anchoring
    out_of_bounds: str
    seed: int | None
    device: str
    progress: bool
    checkpoint_dir: Path | None
    checkpoint_every: int
    budget_run: str | None = None  # the run's id in the data set's budget file, if any
    record_count: float | None = None  # a public N (declared, or released before the run)
    unit: PrivacyUnit = PER_RECORD  # the neighbouring relation: one row, or one person's k rows

    @property
    def kind(self) -> Any:
        return kind_of(self.schema)

    def seed_sequence(self, stream: int) -> int | None:
        """The seed of random stream ``stream`` of this run (None: seeded from the OS)."""
        return seed_sequence(self.seed, stream)

    def init_generator(self, model: Any) -> None:
        """Initialise the kind's generator from the run's stream 2 (no global RNG); a refiner's
        discriminators continue from the same stream (:meth:`GanMethod.refining`)."""
        model.initialise(make_generator(self.seed_sequence(2)))


def seed_sequence(seed: int | None, stream: int) -> int | None:
    """modulo 2**63: every seed options.check_seed allows gives a valid torch seed."""
    return None if seed is None else (seed * 1000 + stream) % run_options.SEED_LIMIT


@dataclass
class RunSetup:
    """What a run decided before training: completed schema, prior, ledger so far, plan, and its
    anchoring's measurements. ``encoder`` is rebuilt from these, never stored."""

    schema: Schema | ArraySchema
    label_prior: np.ndarray | None
    ledger: PrivacyLedger
    plan: TrainingPlan
    n_records: int  # exact: kept in the private checkpoint only, to refuse other data
    measured: Measured = field(default_factory=Measured)
    encoder: Any = field(default=None, repr=False)
    n_public: float = 0.0  # the record count released under DP: what sizes every release
    measuring: bool = field(default=False, repr=False)  # measured in this process, not resumed

    def to_dict(self) -> dict[str, Any]:
        prior = None if self.label_prior is None else [float(p) for p in self.label_prior]
        return {
            "schema": self.schema.to_dict(),
            "label_prior": prior,
            "ledger": self.ledger.to_dict(),
            "plan": asdict(self.plan),
            "n_records": self.n_records,
            "n_public": self.n_public,
            **self.measured.to_dict(),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any], anchoring: Anchoring) -> RunSetup:
        """Read a checkpoint's setup (the keys of every dpforge version that wrote one)."""
        prior = d["label_prior"]
        return cls(
            schema_from_dict(d["schema"], allow_review=True),
            None if prior is None else np.asarray(prior, dtype=np.float64),
            PrivacyLedger.from_dict(d["ledger"]),
            TrainingPlan(**d["plan"]),
            int(d["n_records"]),
            anchoring.measured_from_dict(d),
            # checkpoints written before the count was released used the exact N
            n_public=float(d.get("n_public", d["n_records"])),
        )
