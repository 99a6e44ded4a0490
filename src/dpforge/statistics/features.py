"""DP feature anchoring for images and series: per-class mean embeddings in public random features.

The idea of DP-MERF (Harder et al., AISTATS 2021), in this project's measure / anchor / refine
frame (design.md section 1):

* **The feature map is public.** Random Fourier features of a Gaussian kernel, drawn from a
  generator seeded by the run (never from the data). A record ``x`` (scaled to [-1, 1]) is cut
  into *views* (images: the pixels; series: by default the values and their first differences,
  so the shape of a curve counts, not only its level; :mod:`dpforge.statistics.feature_views`
  lists the others); view ``v`` with ``m`` frequencies ``W`` maps to
  ``[cos(W x_v), sin(W x_v)] / sqrt(m)``, whose L2 norm is exactly 1, and the views are joined
  with weight ``1/sqrt(V)``: every record's feature vector has norm exactly 1.
* **One release.** The statistic is the vector ``(S_1, ..., S_K, c * n_1, ..., c * n_K)``: the
  per-class SUMS of feature vectors and the class counts weighted by the public ``c``
  (``count_weight``). Adding or removing one record of class ``k`` changes ``S_k`` by its feature
  vector (norm 1) and ``c * n_k`` by ``c``: the L2 sensitivity is exactly ``sqrt(1 + c^2)``.
  Adding noise of std ``sigma * sqrt(1 + c^2)`` to every coordinate on a power-of-two grid
  (the discrete Gaussian, floating-point safe: :func:`dpforge.privacy.release_noise.noisy_values`)
  is the Gaussian mechanism with noise multiplier ``sigma``, the grid's rounding included: one
  ``ZCDpEvent((1/sigma + 2^-20)^2 / 2)`` in the ledger
  (:func:`dpforge.privacy.release_noise.grid_event`).
* **The anchor is post-processing.** Noisy per-class means ``S_k / n_k`` (counts from the same
  release) are the targets; a generator is trained to match them (the squared distance between
  mean embeddings: an MMD under the random-feature kernel). Everything it reads is the release.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import dp_accounting
import numpy as np
import torch

from dpforge.privacy.release_noise import grid_event, noisy_values
from dpforge.statistics.feature_views import VIEWS, RandomFeatures

__all__ = [
    "FeatureAnchorConfig",
    "MeasuredEmbedding",
    "RandomFeatures",
    "embedding_event",
    "embedding_sensitivity",
    "measure_embedding",
    "noise_optimal_count_weight",
]

AUTO, MOMENTS, EMBEDDING, PERCEPTUAL = "auto", "moments", "embedding", "perceptual"
STATISTICS = (AUTO, MOMENTS, EMBEDDING, PERCEPTUAL)


@dataclass(frozen=True)
class FeatureAnchorConfig:
    """Settings of the feature anchoring for images and series (all public).

    statistic: what is released. ``"moments"``: per-class means and covariances in a DP
        principal subspace of dimension ``rank`` (:mod:`dpforge.statistics.moments`), from
        which a class-conditional Gaussian generator is built in closed form (no training);
        ``"embedding"``: per-class mean embeddings of random Fourier features, matched by a
        trained generator; ``"perceptual"`` (images with a declared public set): the moments
        and per-class mean embeddings of a public network's features, matched together by a
        convolutional generator (:mod:`dpforge.statistics.perceptual`). ``"auto"``:
        perceptual for images with a public set, moments for images without, the embedding for
        series (whose data sets are small: at n = 767 the noise on a covariance drowns its
        signal).
    rank: the subspace dimension of ``"moments"`` (40 on MNIST: bench/results/images/moments.md).
    share: fraction of epsilon (after the metadata) spent on the anchor's releases; 1.0 uses
        the anchor alone (no discriminator steps), below 1 the private discriminator refines
        with the rest.
    n_features: random frequencies per view (each gives a cosine and a sine feature).
    bandwidths: Gaussian kernel bandwidths in units of ``sqrt(dimension of the view)`` of data
        scaled to [-1, 1]; the frequencies are split evenly among them (a mixture kernel).
    count_weight: ``c``, the weight of the class counts in the release (sensitivity
        ``sqrt(1 + c^2)``; the counts' noise std is ``sigma * sqrt(1 + c^2) / c``). Series use
        0.1 (:func:`noise_optimal_count_weight`: less noise on the sums that carry the
        embedding, enough on the counts at hundreds of records a class).
    steps, batch_size, lr: the anchor phase (Adam on the generator, lr decaying linearly to 0).
    refine_weight: lambda, the weight of the anchor loss on the already-released statistics
        added to the generator's adversarial loss during refinement (share < 1): the loss the
        anchor phase fitted (moments: the relative moment distance; embedding: the embedding
        distance; perceptual: both), computed on batches of ``batch_size``. Free: it reads
        only the releases. 0: the adversarial loss alone.
    views: what the random features look at (:mod:`dpforge.statistics.feature_views`); empty:
        the kind's own (images the pixels, series the values and first differences).
    generator_net, generator_hidden: the generator when the method's options are the defaults
        (a caller who passes ``method_options`` keeps theirs): an MLP, two to three times
        cheaper per step on a CPU than the convolutional (images) and LSTM (series) generators
        (bench/results/images/arrays_anchor.md).

    These field defaults are the images';
    :func:`~dpforge.kinds.feature_defaults.feature_anchor_defaults` gives the settings for each
    data type (what ``Synthesizer(anchor="auto")`` and the command line use).
    """

    statistic: str = "auto"
    rank: int = 40
    share: float = 1.0
    n_features: int = 2000
    bandwidths: tuple[float, ...] = (0.35, 0.7)
    count_weight: float = 0.5
    steps: int = 1500
    batch_size: int = 500
    lr: float = 2e-3
    refine_weight: float = 1.0
    views: tuple[str, ...] = ()
    generator_net: str = "mlp"
    generator_hidden: tuple[int, ...] = (256, 512)

    def validate(self) -> None:
        if self.statistic not in STATISTICS:
            raise ValueError(
                f"anchor statistic must be one of {list(STATISTICS)}, got {self.statistic!r}"
            )
        if isinstance(self.rank, bool) or not isinstance(self.rank, int) or self.rank < 1:
            raise ValueError(f"anchor rank must be a whole number >= 1, got {self.rank!r}")
        if not 0.0 <= self.share <= 1.0:
            raise ValueError(f"anchor share must be in [0, 1], got {self.share}")
        if self.n_features < 1 or not self.bandwidths or min(self.bandwidths) <= 0:
            raise ValueError(
                "n_features must be >= 1 and bandwidths positive, got "
                f"{self.n_features}, {self.bandwidths}"
            )
        views = tuple(self.views)
        if any(v not in VIEWS for v in views) or len(set(views)) != len(views):
            raise ValueError(
                f"anchor views must be distinct names out of {list(VIEWS)} (or empty: the "
                f"kind's own), got {list(views)}"
            )
        if not self.count_weight > 0:
            raise ValueError(f"count_weight must be > 0, got {self.count_weight}")
        if self.steps < 0 or self.batch_size < 1 or not self.lr > 0 or self.refine_weight < 0:
            raise ValueError(
                "anchor steps must be >= 0, batch_size >= 1, lr > 0 and refine_weight >= 0; "
                f"got {self.steps}, {self.batch_size}, {self.lr}, {self.refine_weight}"
            )


def noise_optimal_count_weight(dim: int, mean_sq_norm: float = 1.0) -> float:
    """The count weight ``c`` that minimises the expected squared error of a released class mean
    embedding, for a feature dimension ``dim`` and an exact mean of squared norm
    ``mean_sq_norm`` (at most 1: every feature vector has norm 1). Public quantities only.

    With noise multiplier ``sigma`` (fixed by the budget whatever ``c`` is), the release adds
    noise of std ``s = sigma * sqrt(1 + c^2)`` to each of the ``dim`` sums and to ``c n``, so the
    class mean ``(S + z) / (n + z' / c)`` has squared error about
    ``sigma^2 (1 + c^2) (dim + |mu|^2 / c^2) / n^2``, least
    at ``c = (|mu|^2 / dim)^(1/4)``.
    """
    if dim < 1 or not 0 < mean_sq_norm <= 1:
        raise ValueError(f"need dim >= 1 and 0 < mean_sq_norm <= 1, got {dim}, {mean_sq_norm}")
    return (mean_sq_norm / dim) ** 0.25


def embedding_sensitivity(count_weight: float) -> float:
    """L2 sensitivity of (per-class feature sums, weighted class counts): sqrt(1 + c^2)."""
    return math.sqrt(1.0 + count_weight**2)


def embedding_event(noise_multiplier: float) -> dp_accounting.DpEvent:
    """The ledger event of one release (non-private when the noise is 0)."""
    return grid_event(noise_multiplier)


@dataclass(frozen=True)
class MeasuredEmbedding:
    """The noisy release: per-class feature sums (K, D) and weighted class counts (K,)."""

    noisy_sums: np.ndarray
    noisy_counts: np.ndarray  # already divided by count_weight: estimates of the counts
    noise_multiplier: float

    def class_means(self, min_count: float = 1.0) -> np.ndarray:
        """Per-class mean embeddings S_k / max(n_k, min_count) (post-processing)."""
        counts = np.maximum(self.noisy_counts, min_count)
        return self.noisy_sums / counts[:, None]

    def class_prior(self) -> np.ndarray:
        """The class proportions from the released counts (clipped at 0, renormalised)."""
        counts = np.maximum(self.noisy_counts, 0.0)
        if counts.sum() <= 0:
            return np.full(len(counts), 1.0 / len(counts))
        return counts / counts.sum()

    def to_dict(self) -> dict:
        return {
            "noisy_sums": self.noisy_sums.tolist(),
            "noisy_counts": self.noisy_counts.tolist(),
            "noise_multiplier": self.noise_multiplier,
        }

    @classmethod
    def from_dict(cls, d: dict) -> MeasuredEmbedding:
        return cls(
            np.asarray(d["noisy_sums"], dtype=np.float64),
            np.asarray(d["noisy_counts"], dtype=np.float64),
            float(d["noise_multiplier"]),
        )


CHUNK_VALUES = 2048 * 28 * 28  # record values whose features are computed at a time


def chunk_records(shape: tuple[int, ...]) -> int:
    """Records per feature block: 2,048 MNIST images, fewer larger ones (bounded memory)."""
    return max(1, min(2048, CHUNK_VALUES // max(1, math.prod(shape))))


def exact_embedding(
    features: RandomFeatures,
    x: np.ndarray,
    labels: np.ndarray | None,
    n_classes: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Per-class sums of feature vectors (K, D) and class counts (K,): NOT private alone."""
    k = max(1, n_classes)
    chunk = chunk_records(tuple(np.shape(x)[1:]))
    y = np.zeros(len(x), dtype=np.int64) if labels is None else np.asarray(labels)
    sums = np.zeros((k, features.dim))
    with torch.no_grad():
        for start in range(0, len(x), chunk):
            block = torch.as_tensor(x[start : start + chunk], dtype=torch.float32)
            phi = features(block).double().cpu().numpy()
            np.add.at(sums, y[start : start + chunk], phi)
    counts = np.bincount(y, minlength=k).astype(np.float64)
    return sums, counts


def measure_embedding(
    features: RandomFeatures,
    x: np.ndarray,
    labels: np.ndarray | None,
    n_classes: int,
    noise_multiplier: float,
    count_weight: float,
    rng: np.random.Generator,
) -> MeasuredEmbedding:
    """The Gaussian mechanism on (per-class sums, c * counts); its event is
    ``embedding_event(noise_multiplier)`` (the caller records it in the ledger first)."""
    sums, counts = exact_embedding(features, x, labels, n_classes)
    std = noise_multiplier * embedding_sensitivity(count_weight)
    weighted = count_weight * counts
    noisy = noisy_values(np.concatenate([sums.ravel(), weighted.ravel()]), std, rng)
    noisy_sums = noisy[: sums.size].reshape(sums.shape)
    noisy_weighted = noisy[sums.size :].reshape(counts.shape)
    return MeasuredEmbedding(noisy_sums, noisy_weighted / count_weight, noise_multiplier)
