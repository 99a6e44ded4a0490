"""Images and series: array records, anchored on class moments or random-feature embeddings.

:class:`ArrayKind` checks :class:`ArrayData` against an :class:`ArraySchema`.
:class:`MomentAnchoring` (images' default) releases a principal subspace and per-class moments
in it and builds the class-conditional Gaussian generator from them in closed form;
:class:`EmbeddingAnchoring` (series' default) releases per-class mean embeddings in public
random features and trains the generator to match them (:mod:`dpforge.statistics.array_anchor`).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from dpforge.data.array_encoder import ArrayEncoder
from dpforge.data.arrays import ArrayData, keep_released_records, validate_arrays
from dpforge.errors import DataError, PrivacyError
from dpforge.kinds.base import Anchoring, Measured, chose
from dpforge.kinds.feature_defaults import kind_views
from dpforge.privacy.ledger import PrivacyLedger
from dpforge.privacy.noise import make_generator
from dpforge.privacy.resume import data_fingerprint
from dpforge.schema.array import TIMESERIES, ArraySchema
from dpforge.statistics import array_anchor
from dpforge.statistics.features import FeatureAnchorConfig, MeasuredEmbedding
from dpforge.statistics.metadata import MetadataBudget, complete_array_schema
from dpforge.statistics.moments import ClassMoments, Subspace
from dpforge.statistics.particles import SampleRelease
from dpforge.statistics.perceptual import MomentLoss


class ArrayKind:
    """Images and time series: :class:`ArrayData` checked against an :class:`ArraySchema`."""

    name = "array"
    encodes_cells = False

    @staticmethod
    def kind_name(schema: ArraySchema) -> str:
        return schema.kind  # "image" or "timeseries"

    @staticmethod
    def moved_by_default(schema: ArraySchema) -> bool:
        """Whether samples are moved to the stored release unless asked otherwise: series
        yes (bench/results/series/move_public.md), images no."""
        return schema.kind == TIMESERIES

    @staticmethod
    def record_shape(schema: ArraySchema) -> tuple[int, ...]:
        return tuple(schema.shape)

    @staticmethod
    def incomplete(schema: ArraySchema) -> list[str]:
        """The channels without declared ranges, and a label without declared classes."""
        names = [c.name for c in schema.incomplete_channels]
        unlisted = schema.label is not None and schema.classes is None
        return names + ([schema.label] if unlisted else [])

    @staticmethod
    def fingerprint(records: ArrayData) -> str:
        """SHA-256 of the validated arrays and labels (private: the checkpoint folder only)."""
        labels = None if records.labels is None else np.asarray(records.labels, dtype=str)
        digest = data_fingerprint(np.asarray(records.values), labels)
        return hashlib.sha256(digest.encode()).hexdigest()

    @staticmethod
    def validate(data: Any, schema: ArraySchema, out_of_bounds: str) -> ArrayData:
        if isinstance(data, np.ndarray):
            data = ArrayData(data)
        if not isinstance(data, ArrayData):
            raise DataError(
                f"a {schema.kind} schema needs ArrayData (see dpforge.data.images / "
                f"dpforge.data.series), got {type(data).__name__}"
            )
        return validate_arrays(data, schema, out_of_bounds)

    @staticmethod
    def validate_bounded(data: Any, schema: ArraySchema, out_of_bounds: str, unit, rng) -> Any:
        """Refused: an image or a series is one record per person here."""
        raise PrivacyError(
            "a privacy unit applies to tables only (images and series are one record per "
            "person): leave out privacy_unit (--privacy-unit)"
        )

    @staticmethod
    def complete(data, schema, budget: MetadataBudget, ledger: PrivacyLedger, rng):
        return complete_array_schema(data, schema, budget, ledger, rng)

    @staticmethod
    def released(data: ArrayData, schema: ArraySchema) -> ArrayData:
        """The records whose class was released (see ``keep_released_records``)."""
        return keep_released_records(data, schema)

    @staticmethod
    def may_clip(schema: ArraySchema, out_of_bounds: str) -> bool:
        """Whether the encoder may clip values, decided from public settings only."""
        return out_of_bounds == "clip" or any(not c.is_complete for c in schema.channels)

    @staticmethod
    def encoder(schema: ArraySchema) -> ArrayEncoder:
        return ArrayEncoder(schema)

    @staticmethod
    def label(schema: ArraySchema) -> tuple[str | None, tuple[str, ...]]:
        return schema.label, tuple(schema.classes or ())

    @staticmethod
    def condition_columns(schema: ArraySchema) -> dict[str, Any]:
        """No column but the label conditions an image or a series (:mod:`dpforge.conditions`):
        a record is an array, not a row of named values."""
        return {}


@dataclass
class MeasuredArrays(Measured):
    """The feature anchoring's releases: an embedding, or a subspace and moments in it."""

    embedding: MeasuredEmbedding | None = None
    feature_seed: int = 0  # the seed of the public random feature map
    subspace: Subspace | None = None
    moments: ClassMoments | None = None
    perceptual: MeasuredEmbedding | None = None  # public perceptual features' embedding

    def to_dict(self) -> dict[str, Any]:
        return {
            "embedding": None if self.embedding is None else self.embedding.to_dict(),
            "feature_seed": self.feature_seed,
            "subspace": None if self.subspace is None else self.subspace.to_dict(),
            "moments": None if self.moments is None else self.moments.to_dict(),
            "perceptual": None if self.perceptual is None else self.perceptual.to_dict(),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> MeasuredArrays:
        def read(key: str, kind: Any) -> Any:
            return None if d.get(key) is None else kind.from_dict(d[key])

        return cls(
            read("embedding", MeasuredEmbedding),
            int(d.get("feature_seed", 0)),
            read("subspace", Subspace),
            read("moments", ClassMoments),
            read("perceptual", MeasuredEmbedding),
        )

    @property
    def fitted(self) -> bool:
        return self.embedding is not None or self.moments is not None


class _FeatureAnchoring(Anchoring):
    """What both array anchorings share: the budget target and the public feature seed."""

    label = "random-feature anchoring"
    alone_note = (
        "noise_multiplier and epochs set the discriminator's steps, but this run "
        "anchors on random-feature embeddings alone (FeatureAnchorConfig share 1.0, the default "
        "for images and series): pass anchor=None for the discriminator alone, or a "
        "FeatureAnchorConfig with share between 0 and 1 to refine with it"
    )

    def __init__(self, config: FeatureAnchorConfig) -> None:
        self.config = config

    def measured_from_dict(self, d: dict[str, Any]) -> MeasuredArrays:
        return MeasuredArrays.from_dict(d)

    def set_refine_anchor(self, model: Any, loss: Any) -> None:
        """The anchor loss the generator keeps during refinement: ``refine_weight`` times
        ``loss`` on the releases (post-processing, free), on batches of the anchor's size;
        none at weight 0."""
        weight = self.config.refine_weight
        model.anchor = None if weight == 0 else (loss, weight)
        model.anchor_batch = self.config.batch_size

    def measure(
        self, run, schema, records, ledger, rng, n_public: int, prior=None
    ) -> MeasuredArrays:
        """Plan the release(s) into the ledger, then run them on the encoded records (the
        features' release does not depend on N or the prior)."""
        target = array_anchor.anchor_target(run.epsilon, run.delta, self.config.share, ledger)
        feature_seed = int(rng.integers(2**62))  # public: drawn from the run's seed, not data
        encoder = ArrayKind.encoder(schema)
        return self._release(encoder, records, target, ledger, (feature_seed, rng))


class MomentAnchoring(_FeatureAnchoring):
    """Images: class-conditional Gaussians in a DP principal subspace."""

    def method_config(self, config: Any, default_options: bool, schema: Any) -> Any:
        """The subspace Gaussian, whatever the method's options, unless they name another
        generator."""
        if config.generator_net not in ("auto", "gaussian"):
            raise PrivacyError(
                f"moment anchoring builds its own generator ('gaussian'), but the method options "
                f"ask for '{config.generator_net}': leave generator_net at 'auto', or anchor "
                "with FeatureAnchorConfig(statistic='embedding')"
            )
        return array_anchor.anchored_config(config, self.config, schema.shape)

    def _release(self, encoder, records, target, ledger, seeds) -> MeasuredArrays:
        subspace, moments = array_anchor.measure_moments_for_run(
            self.config, encoder, records, target, ledger, seeds[1]
        )
        return MeasuredArrays(feature_seed=seeds[0], subspace=subspace, moments=moments)

    def fit(self, run: Any, setup: Any, model: Any, resumed: bool) -> None:
        """Build the Gaussian from the released moments (post-processing), unless resuming;
        a private discriminator (if any) then refines the Gaussian's parameters, keeping
        them near the released moments by ``refine_weight``."""
        measured = setup.measured
        self.set_refine_anchor(model, MomentLoss(measured.subspace, measured.moments))
        if resumed:
            return
        run.init_generator(model)
        array_anchor.set_gaussian(model.generator, measured.subspace, measured.moments)


class EmbeddingAnchoring(_FeatureAnchoring):
    """Images or series: per-class mean embeddings in public random Fourier features."""

    def method_config(self, config: Any, default_options: bool, schema: Any) -> Any:
        """The anchor's generator unless the caller chose a network (or its widths)."""
        if config.generator_net != "auto":
            return config
        anchored = array_anchor.anchored_config(config, self.config, schema.shape)
        if default_options or not chose(config, "generator_hidden"):
            return anchored
        return replace(anchored, generator_hidden=config.generator_hidden)

    def _release(self, encoder, records, target, ledger, seeds) -> MeasuredArrays:
        views = kind_views(encoder.layout.kind)
        embedding = array_anchor.measure_for_run(
            self.config, views, encoder, records, target, ledger, seeds
        )
        return MeasuredArrays(embedding=embedding, feature_seed=seeds[0])

    def fit(self, run: Any, setup: Any, model: Any, resumed: bool) -> None:
        """Train the generator on the released embedding (free), unless resuming."""
        layout = setup.encoder.layout
        features = array_anchor.feature_map(
            kind_views(layout.kind), layout.shape, self.config, setup.measured.feature_seed
        )
        loss = array_anchor.EmbeddingLoss(setup.measured.embedding, features)
        self.set_refine_anchor(model, loss)
        if resumed:
            return
        run.init_generator(model)
        rng = make_generator(run.seed_sequence(3), run.device)
        array_anchor.fit_generator(model.generator, loss, setup.encoder.n_classes, self.config, rng)

    def sample_release(self, setup: Any) -> SampleRelease:
        """The release and its public feature parameters, for moving samples at sample time."""
        layout = setup.encoder.layout
        return SampleRelease(
            setup.measured.embedding, setup.measured.feature_seed, kind_views(layout.kind),
            tuple(layout.shape), self.config.n_features, tuple(self.config.bandwidths),
            self.config.count_weight, tuple(self.config.views),
        )  # fmt: skip
