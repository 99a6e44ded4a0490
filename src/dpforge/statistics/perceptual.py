"""Perceptual-feature anchoring of images: DP mean embeddings of a PUBLIC network's features.

The idea of DP-MEPF (Harder et al., TMLR 2023) in this project's measure / anchor frame:

* **The extractor is public.** A small convolutional network is trained on a declared public
  image set (:class:`PublicImages`: another data set of the same shape, for example
  Fashion-MNIST for MNIST). With labels it learns to classify them; without, it learns to tell
  which of four rotations an image was turned by (self-supervised, no label needed). It never
  sees a private record, and it is not released (the model folder holds the generator only).
* **Bounded features.** A record's features are the activations of ``len(POOLS)`` layers,
  each average-pooled to a small grid, flattened and scaled to L2 norm 1 (a layer that is all
  zero stays 0), and the layers joined with weight ``1/sqrt(L)``: every record's feature vector
  has norm at most 1, whatever its pixels.
* **One release.** Per-class sums of these vectors and the class counts weighted by ``c``, the
  same statistic as :mod:`dpforge.statistics.features`: adding or removing one record moves it
  by at most ``sqrt(1 + c^2)`` in L2 norm (the derivation there applies word for word, with
  "norm at most 1" for "norm exactly 1"). Gaussian noise of std ``sigma * sqrt(1 + c^2)``
  per coordinate (drawn as there); one ``ZCDpEvent(1 / 2 sigma^2)`` in the ledger, recorded
  before it runs.
* **The fit is post-processing.** A convolutional generator matches the noisy per-class mean
  embeddings together with the per-class moments that moment anchoring releases in its DP
  principal subspace (:class:`MomentLoss`); everything it reads is a release.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

from dpforge.errors import DataError
from dpforge.nets.init import initialise
from dpforge.statistics.anchor import train_anchor
from dpforge.statistics.moments import ClassMoments, Subspace

__all__ = [
    "MomentLoss",
    "PerceptualFeatures",
    "PublicImages",
    "train_extractor",
]

ROTATIONS = 4  # the self-supervised task of an unlabelled public set
POOLS = (4, 2, 1)  # the pooled grid of each layer's activations (4x4, 2x2, global)
EXTRACTOR_WIDTHS = (16, 32, 32)  # channels of the three convolution blocks
FEATURE_DIM = sum(w * g * g for w, g in zip(EXTRACTOR_WIDTHS, POOLS, strict=True))  # 416
EXTRACTOR_STEPS = 200
EXTRACTOR_BATCH = 128
MOMENT_WEIGHT = 1.0  # of the relative moment loss (0, 0.1, 1 in bench/results/images/perceptual.md)


@dataclass(frozen=True)
class PublicImages:
    """A declared PUBLIC image set: ``values`` (n, channels, H, W) scaled to [-1, 1] and
    optional integer ``labels``. Public means: it may be published as it is (its records are
    no one's private data); it costs no privacy budget and is never mixed with the private
    records nor read through the private engine."""

    values: np.ndarray
    labels: np.ndarray | None = None

    def check(self, shape: tuple[int, ...]) -> None:
        """Refuse a public set that cannot train an extractor for records of ``shape``."""
        if self.values.ndim != 4 or tuple(self.values.shape[1:]) != tuple(shape):
            raise DataError(
                f"the public images have shape {tuple(self.values.shape[1:])}, the private "
                f"records {tuple(shape)}: pass a public set of the same shape (resize it first)"
            )
        if len(self.values) < EXTRACTOR_BATCH:
            raise DataError(
                f"the public set has {len(self.values)} images; pass at least "
                f"{EXTRACTOR_BATCH} to train a feature extractor on it"
            )
        if not np.isfinite(self.values).all() or np.abs(self.values).max() > 1.0:
            raise DataError("the public images must be finite and scaled to [-1, 1]")


class Extractor(nn.Module):
    """Three 3x3 convolution blocks (no normalisation layer) and a linear head for training."""

    def __init__(self, channels: int, n_outputs: int, widths: tuple[int, ...] = EXTRACTOR_WIDTHS):
        super().__init__()
        blocks, c_in = [], channels
        for i, width in enumerate(widths):
            pool = [nn.MaxPool2d(2)] if i < len(widths) - 1 else []
            blocks.append(nn.Sequential(nn.Conv2d(c_in, width, 3, padding=1), nn.ReLU(), *pool))
            c_in = width
        self.blocks = nn.ModuleList(blocks)
        self.head = nn.Linear(c_in, n_outputs)

    def layers(self, x: torch.Tensor) -> list[torch.Tensor]:
        out = []
        for block in self.blocks:
            x = block(x)
            out.append(x)
        return out

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.layers(x)[-1].mean(dim=(2, 3)))


def _rotated(x: torch.Tensor, rng: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """Each image turned by a random multiple of 90 degrees (of 180 if it is not square), and
    that multiple (the target)."""
    step = 1 if x.shape[2] == x.shape[3] else 2
    turns = torch.randint(ROTATIONS // step, (x.shape[0],), generator=rng)
    out = x.clone()
    for k in range(1, ROTATIONS // step):
        chosen = turns == k
        out[chosen] = torch.rot90(x[chosen], k * step, dims=(2, 3))
    return out, turns


def train_extractor(
    public: PublicImages, rng: torch.Generator, device: str | torch.device = "cpu"
) -> Extractor:
    """The public extractor: classification of the public labels, or of four rotations
    (batches drawn on the CPU from ``rng``, trained on ``device``)."""
    x_all = torch.as_tensor(public.values, dtype=torch.float32)
    labelled = public.labels is not None
    y_all = torch.as_tensor(public.labels, dtype=torch.long) if labelled else None
    n_out = int(y_all.max()) + 1 if labelled else ROTATIONS
    net = Extractor(x_all.shape[1], n_out)
    initialise(net, rng)  # from the run's generator, never torch's global one
    net.to(device)
    optimizer = torch.optim.Adam(net.parameters(), lr=2e-3)
    for _ in range(EXTRACTOR_STEPS):
        idx = torch.randint(len(x_all), (EXTRACTOR_BATCH,), generator=rng)
        x = x_all[idx]
        x, y = (x, y_all[idx]) if labelled else _rotated(x, rng)
        loss = nn.functional.cross_entropy(net(x.to(device)), y.to(device))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
    net.eval()
    for param in net.parameters():
        param.requires_grad_(False)
    return net


class PerceptualFeatures:
    """The extractor's pooled layer activations, each layer of norm 1: rows of norm <= 1."""

    def __init__(self, extractor: Extractor, shape: tuple[int, ...]) -> None:
        self.extractor = extractor
        with torch.no_grad():
            self.dim = int(self(torch.zeros(1, *shape)).shape[1])

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        """(n, *shape) images in [-1, 1] -> (n, dim) features (on ``x``'s device; computed on
        the extractor's)."""
        device = next(self.extractor.parameters()).device
        layers = self.extractor.layers(x.to(device))
        parts = []
        for act, grid in zip(layers, POOLS, strict=True):
            pooled = nn.functional.adaptive_avg_pool2d(act, grid).flatten(1)
            norm = pooled.norm(dim=1, keepdim=True)
            parts.append(pooled / norm.clamp_min(1e-12))
        return (torch.cat(parts, dim=1) / math.sqrt(len(parts))).to(x.device)


class MomentLoss:
    """Relative squared distance between the generated and the released per-class first and
    second moments in the released principal subspace (classes weighted equally): each term
    divided by the squared norm of its target, so that it weighs like the embedding loss."""

    def __init__(self, subspace: Subspace, moments: ClassMoments, min_count: float = 10.0):
        counts = np.maximum(moments.counts, min_count)
        self.basis = torch.as_tensor(subspace.basis, dtype=torch.float32)
        self.means = torch.as_tensor(moments.sums / counts[:, None], dtype=torch.float32)
        second = moments.second / counts[:, None, None]
        self.second = torch.as_tensor(second, dtype=torch.float32)

    def __call__(self, x: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        flat = x.flatten(1)
        z = (flat / math.sqrt(flat.shape[1])) @ self.basis.to(flat)
        member = nn.functional.one_hot(labels, self.means.shape[0]).to(z).T  # (K, n)
        sizes = member.sum(dim=1).clamp_min(1.0)
        means = member @ z / sizes[:, None]
        second = torch.einsum("kn,ni,nj->kij", member, z, z) / sizes[:, None, None]
        present = (member.sum(dim=1) > 0).to(z)
        t_mean, t_second = self.means.to(z), self.second.to(z)
        gap = ((means - t_mean) ** 2).sum(1) / (t_mean**2).sum(1).clamp_min(1e-12)
        gap = gap + ((second - t_second) ** 2).sum((1, 2)) / (t_second**2).sum((1, 2)).clamp_min(
            1e-12
        )
        return (present * gap).sum() / present.sum().clamp_min(1.0)


PERCEPTUAL_RELEASE = (
    "anchor: mean embeddings of public perceptual features per {what} (and class counts)"
)


def public_images(data: Any, schema: Any) -> PublicImages:
    """A public :class:`ArrayData` of images as :class:`PublicImages`: scaled to [-1, 1] by
    the schema's DECLARED channel ranges (public settings), labels coded by the public set's
    own classes (they need not be the private classes)."""
    if getattr(schema, "kind", None) != "image" or not hasattr(data, "values"):
        raise DataError(
            "a public set (public_data; [data] public_data of dpforge fit) is for images: pass "
            "ArrayData images with an image schema, or drop it"
        )
    missing = [c.name for c in schema.channels if not c.is_complete]
    if missing:
        raise DataError(
            f"a public set is scaled by the declared channel ranges; declare 'lower' and "
            f"'upper' of {missing} in the schema (for example 0 and 255 for 8-bit pixels)"
        )
    scaled = np.array(data.values, dtype=np.float32)  # one copy, scaled in place
    lower = np.array([c.lower for c in schema.channels]).reshape(1, -1, 1, 1)
    upper = np.array([c.upper for c in schema.channels]).reshape(1, -1, 1, 1)
    if scaled.ndim != 4 or scaled.shape[1] != lower.shape[1]:
        raise DataError(
            f"the public images have shape {tuple(scaled.shape[1:])}, the private records "
            f"{tuple(schema.shape)}: pass a public set of the same shape (resize it first)"
        )
    scaled -= lower
    scaled *= 2.0 / (upper - lower)
    scaled -= 1.0
    np.clip(scaled, -1.0, 1.0, out=scaled)
    labels = None
    if data.labels is not None:
        labels = np.unique(np.asarray(data.labels).astype(str), return_inverse=True)[1]
    public = PublicImages(scaled, labels)
    public.check(tuple(schema.shape))
    return public


def fit_perceptual(
    generator: torch.nn.Module,
    losses: tuple[Callable, Callable],
    n_classes: int,
    config: Any,
    rng: torch.Generator,
) -> float:
    """Adam on the generator against the embedding loss plus the moment loss (post-processing
    of the releases; lr decaying linearly to 0); returns the last loss value (public)."""
    generator.train()
    loss = AnchorLoss(*losses)
    return train_anchor(generator, loss, n_classes, config, rng, betas=(0.5, 0.999))


class AnchorLoss:
    """The perceptual anchor's loss: the embedding loss plus ``MOMENT_WEIGHT`` times the
    moment loss (what the anchor phase fits, and what refinement keeps the generator near)."""

    def __init__(self, embedding: Callable, moments: Callable) -> None:
        self.embedding, self.moments = embedding, moments

    def __call__(self, x: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return self.embedding(x, labels) + MOMENT_WEIGHT * self.moments(x, labels)
