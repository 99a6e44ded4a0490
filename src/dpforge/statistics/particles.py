"""Moved samples: generated records moved, at sample time, to match the released embedding.

The generator is trained to match the released per-class mean embedding on average over many
batches; a given set of N samples still clumps (1-NN needs coverage, not only sharpness).
Moving the N samples themselves, jointly, a few hundred Adam steps on the same loss (the squared
distance between their per-class mean embedding and the release: kernel herding, a set whose
mean embedding matches spreads over the distribution) is post-processing of two public things:
the DP release (already in the ledger) and the public random feature map (rebuilt from its
seed). It reads no record and costs nothing (bench/results/series/italy_trials.md, rows 19-20;
the library's figures in bench/results/series/italy_moved.md).

:class:`SampleRelease` is what moving needs and what the model folder stores for it:
``release.safetensors`` (the noisy per-class sums and counts, exactly the release) and
``model.json``'s ``release`` (the feature seed, the map's parameters, the noise multiplier).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from dpforge.statistics.array_anchor import EmbeddingLoss, feature_map
from dpforge.statistics.feature_views import KindViews
from dpforge.statistics.features import FeatureAnchorConfig, MeasuredEmbedding

__all__ = ["Draw", "MoveSettings", "SampleRelease", "drawn_moved", "move_samples"]

RELEASE_TENSORS = ("noisy_sums", "noisy_counts")


# Adam steps on the samples (through tanh, so they stay in [-1, 1]) and their step size.
# Chosen on PUBLIC series only: sktime's offline UCR sets GunPoint, ArrowHead and OSULeaf (never
# ItalyPowerDemand) at its noise-to-signal, the best mean 1-NN DTW of a 3 x 3 grid (100, 300,
# 1,000 steps; 0.003, 0.01, 0.03) and no moving (bench/results/series/move_public.md; the trial
# script is in docs/research/bench-trials.md).
MOVE_STEPS = 100
MOVE_LR = 0.03

# Draws ``count`` generated records (encoded, in [-1, 1]) for ``labels`` (None: unlabelled).
Draw = Callable[["torch.Tensor | None", int], torch.Tensor]


@dataclass(frozen=True)
class MoveSettings:
    """How generated samples are moved (public settings).

    chunk: samples moved together; each chunk matches the release on its own, so memory stays
        bounded (a chunk's features: chunk x feature dimension floats).
    """

    chunk: int = 2048

    def __post_init__(self) -> None:
        if isinstance(self.chunk, bool) or not isinstance(self.chunk, int) or self.chunk < 1:
            raise ValueError(f"MoveSettings.chunk must be a whole number >= 1, got {self.chunk!r}")


@dataclass(frozen=True)
class SampleRelease:
    """The released embedding and the public parameters of its feature map (``kind``: the
    views its kind takes, and its name)."""

    embedding: MeasuredEmbedding
    feature_seed: int
    kind: KindViews
    shape: tuple[int, ...]
    n_features: int
    bandwidths: tuple[float, ...]
    count_weight: float | None = None  # None: a folder saved before dpforge stored it
    views: tuple[str, ...] = ()  # empty: the kind's legacy views (folders that name none)

    @property
    def map_views(self) -> tuple[str, ...]:
        """The views the release's feature map was drawn with."""
        return self.kind.of(self.views)

    def loss(self) -> EmbeddingLoss:
        """The anchor's loss, rebuilt from the release and the public seed."""
        config = FeatureAnchorConfig(
            n_features=self.n_features, bandwidths=self.bandwidths, views=self.map_views
        )
        features = feature_map(self.kind, self.shape, config, self.feature_seed)
        return EmbeddingLoss(self.embedding, features)

    def to_json(self) -> dict[str, Any]:
        """The public parameters (model.json's ``release``); ``views`` only where they are
        not the kind's legacy ones (a folder without them is read with those)."""
        return (
            {
                "feature_seed": int(self.feature_seed),
                "kind": self.kind.kind,
                "shape": list(self.shape),
                "n_features": int(self.n_features),
                "bandwidths": [float(b) for b in self.bandwidths],
                "noise_multiplier": float(self.embedding.noise_multiplier),
            }
            | ({} if self.count_weight is None else {"count_weight": float(self.count_weight)})
            | ({} if self.map_views == self.kind.legacy else {"views": list(self.map_views)})
        )

    def tensors(self) -> dict[str, torch.Tensor]:
        """The release itself (release.safetensors), in float64 as it was released."""
        e = self.embedding
        return {
            "noisy_sums": torch.as_tensor(e.noisy_sums, dtype=torch.float64),
            "noisy_counts": torch.as_tensor(e.noisy_counts, dtype=torch.float64),
        }

    @classmethod
    def from_parts(
        cls, info: dict[str, Any], tensors: dict[str, torch.Tensor], kind: KindViews
    ) -> SampleRelease:
        """Rebuild from model.json's ``release`` and the tensors of release.safetensors
        (``kind``: the views of the kind the release names)."""
        embedding = MeasuredEmbedding(
            tensors["noisy_sums"].double().numpy(),
            tensors["noisy_counts"].double().numpy(),
            float(info["noise_multiplier"]),
        )
        return cls(
            embedding, int(info["feature_seed"]), kind,
            tuple(int(s) for s in info["shape"]), int(info["n_features"]),
            tuple(float(b) for b in info["bandwidths"]),
            None if "count_weight" not in info else float(info["count_weight"]),
            tuple(str(v) for v in info.get("views", ())),
        )  # fmt: skip


def release_shapes(
    info: dict[str, Any], schema: Any, kind: KindViews
) -> dict[str, tuple[int, ...]]:
    """The tensor shapes that model.json's ``release`` and ``schema`` imply (checked on load;
    ``kind``: the views of the kind the release names)."""
    views = kind.of(info.get("views", ()))
    dim = 2 * int(info["n_features"]) * len(views)
    classes = getattr(schema, "classes", None) or ()
    k = len(classes) if getattr(schema, "label", None) is not None else 1
    return {"noisy_sums": (max(1, k), dim), "noisy_counts": (max(1, k),)}


def move_samples(
    x: torch.Tensor, labels: torch.Tensor | None, loss: EmbeddingLoss, settings: MoveSettings
) -> torch.Tensor:
    """``x`` (n, *shape) in [-1, 1] moved ``MOVE_STEPS`` Adam steps on ``loss``, chunk by
    chunk; deterministic given ``x`` (the randomness is the generator's draw of ``x``)."""
    out = []
    for start in range(0, x.shape[0], settings.chunk):
        part = slice(start, start + settings.chunk)
        out.append(_move_chunk(x[part], None if labels is None else labels[part], loss))
    return torch.cat(out)


def drawn_moved(
    draw: Draw, labels: torch.Tensor | None, n: int, loss: EmbeddingLoss, settings: MoveSettings
) -> torch.Tensor:
    """``n`` records for ``labels``, drawn, then moved (:func:`move_samples`). Reads only
    ``loss`` (the release and the public feature map) and the generator's draws."""
    return move_samples(draw(labels, n), labels, loss, settings)


def _move_chunk(x, labels, loss: EmbeddingLoss) -> torch.Tensor:
    """One chunk, parameterised through tanh so every value stays in [-1, 1]."""
    with torch.enable_grad():
        p = torch.atanh(x.detach().float().clamp(-0.999, 0.999)).requires_grad_(True)
        opt = torch.optim.Adam([p], lr=MOVE_LR)
        for _ in range(MOVE_STEPS):
            value = loss(torch.tanh(p), labels)
            opt.zero_grad()
            value.backward()
            opt.step()
    return torch.tanh(p).detach().to(x.dtype)


def embedding_gap(x: torch.Tensor, labels: torch.Tensor | None, loss: EmbeddingLoss) -> float:
    """The loss of ``x`` (the squared distance to the release), for reports and tests."""
    with torch.no_grad():
        return float(loss(x.float(), labels))


def release_tensor_error(tensors: dict[str, torch.Tensor], shapes: dict[str, tuple]) -> str:
    """What is wrong with release.safetensors' tensors ('' when nothing)."""
    if set(tensors) != set(RELEASE_TENSORS):
        return f"holds {sorted(tensors)}, expected {list(RELEASE_TENSORS)}"
    for name, shape in shapes.items():
        if tuple(tensors[name].shape) != shape:
            return f"{name} has shape {tuple(tensors[name].shape)}, expected {shape}"
        if not np.isfinite(tensors[name].double().numpy()).all():
            return f"{name} holds NaN or infinite values"
    return ""
