"""Images anchored on perceptual features of a public network, with the moments
(:mod:`dpforge.statistics.perceptual`): the anchoring a declared public image set selects.

Three Gaussian releases with one noise multiplier, all three recorded in the ledger before the
first runs: the principal subspace, the per-class moments in it (as :class:`MomentAnchoring`)
and the per-class mean embeddings of the public extractor's features. The public set trains
the extractor in this process; it never goes through the engine that holds the private
records, and nothing about it is charged.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import torch

__all__ = ["PerceptualAnchoring", "plan_releases"]

from dpforge.errors import PrivacyError
from dpforge.kinds.arrays import MeasuredArrays, _FeatureAnchoring
from dpforge.methods.public_start import warm_start_on_public
from dpforge.privacy.ledger import PrivacyLedger
from dpforge.privacy.noise import make_generator
from dpforge.statistics import array_anchor, perceptual
from dpforge.statistics.features import FeatureAnchorConfig, measure_embedding
from dpforge.statistics.moments import class_moments, principal_subspace


class PerceptualAnchoring(_FeatureAnchoring):
    """Images: a convolutional generator fitted to public perceptual features and moments."""

    def __init__(self, config: FeatureAnchorConfig, public: perceptual.PublicImages) -> None:
        super().__init__(config)
        self.public = public
        self._extractors: dict[int, perceptual.Extractor] = {}
        self.device = "cpu"  # the run's, set when it measures or fits

    def method_config(self, config: Any, default_options: bool, schema: Any) -> Any:
        """The convolutional generator (``upconv``: its nearest-neighbour upsampling variant,
        when the method's options name it); any other family is refused."""
        if config.generator_net not in ("auto", "conv", "upconv"):
            raise PrivacyError(
                f"perceptual anchoring trains the convolutional generator, but the method "
                f"options ask for '{config.generator_net}': leave generator_net at 'auto' "
                "(or 'upconv' for nearest-neighbour upsampling)"
            )
        anchored = array_anchor.anchored_config(config, self.config, schema.shape)
        if config.generator_net == "upconv":
            return replace(anchored, generator_net="upconv")
        return anchored

    def extractor(self, seed: int) -> perceptual.Extractor:
        """The public extractor of a run, trained on the public set from the run's seed."""
        if seed not in self._extractors:
            rng = torch.Generator().manual_seed(int(seed))
            extractor = perceptual.train_extractor(self.public, rng, self.device)
            self._extractors[seed] = extractor
        return self._extractors[seed]

    def measure(
        self, run, schema, records, ledger, rng, n_public: int, prior=None
    ) -> MeasuredArrays:
        """As every feature anchoring, with the extractor on the run's device."""
        self.device = run.device
        return super().measure(run, schema, records, ledger, rng, n_public, prior)

    def _release(self, encoder, records, target, ledger, seeds) -> MeasuredArrays:
        x, labels = encoder.transform(records)
        shape, k = encoder.layout.shape, encoder.n_classes
        self.public.check(tuple(shape))
        sigma = plan_releases(k, target, ledger)  # all three in the ledger first
        c, rng = self.config.count_weight, seeds[1]
        rank = array_anchor.subspace_rank(self.config, shape)
        subspace = principal_subspace(x, k, rank, sigma, c, rng)
        moments = class_moments(x, labels, k, subspace, sigma, c, rng)
        features = perceptual.PerceptualFeatures(self.extractor(seeds[0]), tuple(shape))
        embedding = measure_embedding(features, x, labels, k, sigma, c, rng)
        return MeasuredArrays(None, seeds[0], subspace, moments, embedding)

    def fit(self, run: Any, setup: Any, model: Any, resumed: bool) -> None:
        """Train the generator on the three releases (free), unless resuming."""
        measured, layout = setup.measured, setup.encoder.layout
        self.device = run.device
        features = perceptual.PerceptualFeatures(
            self.extractor(measured.feature_seed), tuple(layout.shape)
        )
        embedding = array_anchor.EmbeddingLoss(measured.perceptual, features)
        moments = perceptual.MomentLoss(measured.subspace, measured.moments)
        self.set_refine_anchor(model, perceptual.AnchorLoss(embedding, moments))
        if resumed:
            return
        run.init_generator(model)
        rng = make_generator(run.seed_sequence(3), run.device)
        perceptual.fit_perceptual(
            model.generator, (embedding, moments), setup.encoder.n_classes, self.config, rng
        )

    def before_refining(self, run: Any, refiner: Any) -> None:
        """The refiner's non-private discriminator steps on the public set against the anchored
        generator (dpforge.methods.public_start), when its options ask for them: free, no
        private record read."""
        steps = getattr(refiner.config, "public_warm_start_steps", 0)
        if steps:
            rng = make_generator(run.seed_sequence(8), run.device)  # a stream of its own
            warm_start_on_public(refiner, self.public, steps, rng)


def plan_releases(
    n_classes: int, target: tuple[float, float] | None, ledger: PrivacyLedger
) -> float:
    """One noise multiplier for the three releases, each recorded in ``ledger`` ahead."""
    what = "class" if n_classes <= 1 else f"{n_classes} classes"
    names = [
        "anchor: principal subspace (second moments, mean and count of the records)",
        f"anchor: mean and covariance in that subspace per {what} (and class counts)",
        perceptual.PERCEPTUAL_RELEASE.format(what=what),
    ]
    return array_anchor.plan_gaussian_releases(names, target, ledger)
