"""Feature anchoring of an image or series generator: plan, measure once, train to match.

Two statistics (``FeatureAnchorConfig.statistic``). ``"moments"`` (images): per-class means and
covariances in a DP principal subspace, two Gaussian releases planned into the ledger by
:func:`plan_moments`, turned into a class-conditional Gaussian generator in closed form by
:func:`set_gaussian` (:mod:`dpforge.statistics.moments`). ``"embedding"`` (series), the run's
steps in the order the Synthesizer calls them:

1. :func:`plan_embedding` calibrates the noise multiplier so the ledger reaches the anchor's
   (epsilon, delta) and records the release in the ledger BEFORE it runs;
2. :func:`measure` draws the public feature map from the run's seed and releases the noisy
   per-class embedding (:mod:`dpforge.statistics.features`);
3. :func:`fit_generator` trains the generator on :class:`EmbeddingLoss` (post-processing).

The loss is also what the GAN's generator step adds during refinement (``GanMethod.anchor``).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import dp_accounting
import numpy as np
import torch

from dpforge.privacy.calibration import noise_for_target
from dpforge.privacy.ledger import PrivacyLedger
from dpforge.statistics.anchor import train_anchor
from dpforge.statistics.features import (
    MOMENTS,
    PERCEPTUAL,
    FeatureAnchorConfig,
    MeasuredEmbedding,
    RandomFeatures,
    embedding_event,
    measure_embedding,
)
from dpforge.statistics.feature_views import KindViews
from dpforge.statistics.moments import (
    ClassMoments,
    Subspace,
    class_moments,
    gaussian_parameters,
    principal_subspace,
)

__all__ = [
    "EmbeddingLoss",
    "fit_generator",
    "measure",
    "measure_moments_for_run",
    "plan_embedding",
    "plan_gaussian_releases",
    "plan_moments",
    "set_gaussian",
]


def plan_embedding(
    config: FeatureAnchorConfig,
    n_classes: int,
    target: tuple[float, float] | None,
    ledger: PrivacyLedger,
) -> float:
    """The release's noise multiplier (0 without privacy), recorded in ``ledger`` ahead."""
    what = _per_class(n_classes)
    names = [f"anchor: mean embeddings of random features per {what} (and class counts)"]
    return plan_gaussian_releases(names, target, ledger)


def _per_class(n_classes: int) -> str:
    return "class" if n_classes <= 1 else f"{n_classes} classes"


def plan_gaussian_releases(
    names: list[str], target: tuple[float, float] | None, ledger: PrivacyLedger
) -> float:
    """One noise multiplier for ``len(names)`` Gaussian releases that together bring the
    ledger to ``target`` (0 without privacy); each is recorded in ``ledger`` ahead of it."""
    sigma = 0.0
    if target is not None:
        sigma = noise_for_target(
            lambda s: dp_accounting.ComposedDpEvent([embedding_event(s)] * len(names)),
            target[0], target[1], base_event=ledger.event(),
        )  # fmt: skip
    for name in names:
        ledger.record(name, embedding_event(sigma))
    return sigma


def feature_map(
    views: KindViews, shape: tuple[int, ...], config: FeatureAnchorConfig, seed: int
) -> RandomFeatures:
    """The public feature map of a run, rebuilt identically from its stored ``seed``: the
    views ``config`` names (none: the kind's legacy ones), checked against the kind's."""
    named = views.of(config.views)
    views.check(named, tuple(shape))
    generator = torch.Generator().manual_seed(int(seed))
    return RandomFeatures(shape, named, config, generator)


def measure(
    features: RandomFeatures,
    x: np.ndarray,
    labels: np.ndarray | None,
    n_classes: int,
    sigma: float,
    config: FeatureAnchorConfig,
    rng: np.random.Generator,
) -> MeasuredEmbedding:
    """The one release (already in the ledger) on the encoded records ``x`` in [-1, 1]."""
    return measure_embedding(features, x, labels, n_classes, sigma, config.count_weight, rng)


class EmbeddingLoss:
    """Squared distance between generated and measured per-class mean embeddings.

    Classes count equally (a rare class keeps its features, as in the tables' anchor). With
    random Fourier features this is an estimate of the per-class MMD under the mixture kernel.
    """

    def __init__(self, measured: MeasuredEmbedding, features: RandomFeatures) -> None:
        self.features = features
        self.targets = torch.as_tensor(measured.class_means(), dtype=torch.float32)

    @property
    def n_classes(self) -> int:
        return self.targets.shape[0]

    def __call__(self, x: torch.Tensor, labels: torch.Tensor | None) -> torch.Tensor:
        """The loss of generated records ``x`` (n, *shape) drawn with ``labels``."""
        phi = self.features(x)
        k = self.n_classes
        if labels is None:
            labels = torch.zeros(x.shape[0], dtype=torch.long, device=x.device)
        member = torch.nn.functional.one_hot(labels, k).to(phi).T  # (K, n)
        means = member @ phi / member.sum(dim=1, keepdim=True).clamp_min(1.0)
        present = (member.sum(dim=1) > 0).to(phi)
        gap = ((means - self.targets.to(phi)) ** 2).sum(dim=1)
        return (present * gap).sum() / present.sum().clamp_min(1.0)


def fit_generator(
    generator: torch.nn.Module,
    loss: EmbeddingLoss,
    n_classes: int,
    config: FeatureAnchorConfig,
    rng: torch.Generator,
) -> float:
    """Adam on the generator alone against ``loss`` (lr decaying linearly to 0); the final
    loss value (public: it reads only the release and generated records)."""
    generator.train()
    return train_anchor(
        generator, loss, n_classes, config, rng, betas=(0.5, 0.999), one_thread=False
    )


def anchor_target(
    epsilon: float, delta: float, share: float, ledger: PrivacyLedger
) -> tuple[float, float] | None:
    """(epsilon, delta) the ledger may reach after the release; None without privacy.

    The release gets ``share`` of the budget the metadata left: what the metadata releases
    actually spent (read from the ledger by the accountant), not the share set aside for them.
    """
    if not np.isfinite(epsilon):
        return None
    spent = ledger.report(delta).epsilon if len(ledger) else 0.0
    left = max(0.0, epsilon - spent)
    return spent + share * left, delta - ledger.extra_delta()


def measure_for_run(
    config: FeatureAnchorConfig,
    views: KindViews,
    encoder,
    records,
    target: tuple[float, float] | None,
    ledger: PrivacyLedger,
    seeds: tuple[int, np.random.Generator],
) -> MeasuredEmbedding:
    """Plan (into the ledger), draw the public map (of the kind's ``views``) from
    ``seeds[0]``, release once."""
    x, labels = encoder.transform(records)
    sigma = plan_embedding(config, encoder.n_classes, target, ledger)
    features = feature_map(views, encoder.layout.shape, config, seeds[0])
    return measure(features, x, labels, encoder.n_classes, sigma, config, seeds[1])


def anchored_config(method_config: Any, config: FeatureAnchorConfig, shape: tuple[int, ...]) -> Any:
    """The method's default config with the anchored generator (``FeatureAnchorConfig``): the
    subspace Gaussian (latent size = rank) for moments, else ``config.generator_net``."""
    if config.statistic == MOMENTS:
        rank = subspace_rank(config, shape)
        return replace(method_config, generator_net="gaussian", latent_dim=rank)
    if config.statistic == PERCEPTUAL:
        return replace(method_config, generator_net="conv")
    return replace(
        method_config, generator_net=config.generator_net, generator_hidden=config.generator_hidden
    )


def subspace_rank(config: FeatureAnchorConfig, shape: tuple[int, ...]) -> int:
    """The subspace dimension: ``config.rank``, at most the record's size."""
    return min(config.rank, int(np.prod(shape)))


def plan_moments(
    n_classes: int, target: tuple[float, float] | None, ledger: PrivacyLedger
) -> float:
    """The noise multiplier of both moment releases, recorded in ``ledger`` ahead of them."""
    names = [
        "anchor: principal subspace (second moments, mean and count of the records)",
        f"anchor: mean and covariance in that subspace per {_per_class(n_classes)} "
        "(and class counts)",
    ]
    return plan_gaussian_releases(names, target, ledger)


def measure_moments_for_run(
    config: FeatureAnchorConfig,
    encoder,
    records,
    target: tuple[float, float] | None,
    ledger: PrivacyLedger,
    rng: np.random.Generator,
) -> tuple[Subspace, ClassMoments]:
    """Plan both releases (into the ledger), then run them on the encoded records."""
    x, labels = encoder.transform(records)
    sigma = plan_moments(encoder.n_classes, target, ledger)
    rank = subspace_rank(config, encoder.layout.shape)
    subspace = principal_subspace(x, encoder.n_classes, rank, sigma, config.count_weight, rng)
    moments = class_moments(x, labels, encoder.n_classes, subspace, sigma, config.count_weight, rng)
    return subspace, moments


def set_gaussian(generator: torch.nn.Module, subspace: Subspace, moments: ClassMoments) -> None:
    """Build the subspace Gaussian generator from the releases (post-processing)."""
    means, factors = gaussian_parameters(moments)
    generator.set_release(subspace.basis, subspace.mean, means, factors)
