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

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from dpforge.statistics.array_anchor import EmbeddingLoss, feature_map
from dpforge.statistics.feature_views import legacy_views
from dpforge.statistics.features import FeatureAnchorConfig, MeasuredEmbedding
from dpforge.statistics.herding import SELECTIONS, Draw, select_samples

__all__ = ["MoveSettings", "SampleRelease", "drawn_moved", "move_samples"]

RELEASE_TENSORS = ("noisy_sums", "noisy_counts")


@dataclass(frozen=True)
class MoveSettings:
    """How generated samples are moved (public settings).

    steps, lr: Adam steps on the samples (through tanh, so they stay in [-1, 1]) and their
        step size. Chosen on PUBLIC series only: sktime's offline UCR sets GunPoint, ArrowHead
        and OSULeaf (never ItalyPowerDemand) at its noise-to-signal, the best mean 1-NN DTW of
        a 3 x 3 grid (100, 300, 1,000 steps; 0.003, 0.01, 0.03) and no moving
        (bench/results/series/move_public.md).
    chunk: samples moved together; each chunk matches the release on its own, so memory stays
        bounded (a chunk's features: chunk x feature dimension floats).
    stop_at_noise: stop a chunk's moving (before ``steps``) once its loss is at or below the
        distance the release's noise alone puts between the exact per-class mean embedding and
        the released one (:meth:`SampleRelease.noise_levels`, averaged over the chunk's
        classes): closer than that, the samples fit the noise. No tuned number: the level comes
        from the release's public noise multiplier, count weight and released counts. Off by
        default: on the public sets it stops after a few steps and scores below moving 100
        steps on 5 of 6 runs (mean 1-NN DTW 0.594 against 0.686; not moved 0.566:
        bench/results/series/italy_stop.md).
    pool: draw ``pool`` times as many records as asked, per chunk and class, and keep those
        that kernel herding picks to match the release (:mod:`dpforge.statistics.herding`)
        before moving them; 1 keeps the draws as they come. Memory: pool x chunk x feature
        dimension floats.
    select: how a pool is selected from: "herding" (the set whose mean embedding matches the
        release) or "margin" (the draws furthest on their own class's side of the release;
        two classes or more).
    """

    steps: int = 100
    lr: float = 0.03
    chunk: int = 2048
    stop_at_noise: bool = False
    pool: int = 1
    select: str = "herding"

    def __post_init__(self) -> None:
        for name, least in (("steps", 0), ("chunk", 1), ("pool", 1)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < least:
                raise ValueError(f"MoveSettings.{name} must be a whole number >= {least}, "
                                 f"got {value!r}")  # fmt: skip
        if isinstance(self.lr, bool) or not isinstance(self.lr, (int, float)) or not self.lr > 0:
            raise ValueError(f"MoveSettings.lr must be a number > 0, got {self.lr!r}")
        if self.select not in SELECTIONS:
            raise ValueError(f"MoveSettings.select must be one of {SELECTIONS}, "
                             f"got {self.select!r}")  # fmt: skip
        if not isinstance(self.stop_at_noise, bool):
            raise ValueError(f"MoveSettings.stop_at_noise must be True or False, "
                             f"got {self.stop_at_noise!r}")  # fmt: skip


@dataclass(frozen=True)
class SampleRelease:
    """The released embedding and the public parameters of its feature map."""

    embedding: MeasuredEmbedding
    feature_seed: int
    kind: str
    shape: tuple[int, ...]
    n_features: int
    bandwidths: tuple[float, ...]
    count_weight: float | None = None  # None: a folder saved before dpforge stored it
    views: tuple[str, ...] = ()  # empty: the kind's legacy views (folders that name none)

    @property
    def map_views(self) -> tuple[str, ...]:
        """The views the release's feature map was drawn with."""
        return tuple(self.views) or legacy_views(self.kind)

    def noise_levels(self) -> np.ndarray:
        """Per class k, the expected squared distance between the released mean embedding
        ``t_k = (S_k + z_k) / m_k`` and the exact one ``S_k / n_k`` (the level of
        ``MoveSettings.stop_at_noise``), from public quantities only.

        The release adds ``z ~ N(0, s^2 I)`` with ``s = sigma * sqrt(1 + c^2)`` (noise
        multiplier ``sigma``, count weight ``c``) to the D-dimensional sum ``S_k`` and to
        ``c * n_k``, so the released count ``m_k = max(n_k + e_k / c, 1)`` carries noise of
        std ``s / c``. Then ``t_k - S_k / n_k = z_k / m_k + (S_k / n_k)(n_k / m_k - 1)``; the two
        parts are independent (separate coordinates of the release), and with ``m_k`` given:

            level_k = (D s^2 + |mu_k|^2 s^2 / c^2) / m_k^2

        where ``|mu_k|^2`` (the exact mean's squared norm, at most 1: every feature vector has
        norm 1) is estimated without bias from the release as ``|t_k|^2 - D s^2 / m_k^2``,
        clipped to [0, 1]. The first term dominates (D in the thousands). Post-processing.
        """
        if self.count_weight is None:
            raise ValueError(
                "this release does not record its count weight (a model folder saved before "
                "dpforge stored it): fit again, or move with stop_at_noise=False"
            )
        e, c = self.embedding, self.count_weight
        s2 = (e.noise_multiplier**2) * (1.0 + c**2)
        m2 = np.maximum(e.noisy_counts, 1.0) ** 2
        dim = e.noisy_sums.shape[1]
        signal = np.clip((e.class_means() ** 2).sum(axis=1) - dim * s2 / m2, 0.0, 1.0)
        return (dim * s2 + signal * s2 / c**2) / m2

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
                "kind": self.kind,
                "shape": list(self.shape),
                "n_features": int(self.n_features),
                "bandwidths": [float(b) for b in self.bandwidths],
                "noise_multiplier": float(self.embedding.noise_multiplier),
            }
            | ({} if self.count_weight is None else {"count_weight": float(self.count_weight)})
            | ({} if self.map_views == legacy_views(self.kind) else {"views": list(self.map_views)})
        )

    def tensors(self) -> dict[str, torch.Tensor]:
        """The release itself (release.safetensors), in float64 as it was released."""
        e = self.embedding
        return {
            "noisy_sums": torch.as_tensor(e.noisy_sums, dtype=torch.float64),
            "noisy_counts": torch.as_tensor(e.noisy_counts, dtype=torch.float64),
        }

    @classmethod
    def from_parts(cls, info: dict[str, Any], tensors: dict[str, torch.Tensor]) -> SampleRelease:
        """Rebuild from model.json's ``release`` and the tensors of release.safetensors."""
        embedding = MeasuredEmbedding(
            tensors["noisy_sums"].double().numpy(),
            tensors["noisy_counts"].double().numpy(),
            float(info["noise_multiplier"]),
        )
        return cls(
            embedding, int(info["feature_seed"]), str(info["kind"]),
            tuple(int(s) for s in info["shape"]), int(info["n_features"]),
            tuple(float(b) for b in info["bandwidths"]),
            None if "count_weight" not in info else float(info["count_weight"]),
            tuple(str(v) for v in info.get("views", ())),
        )  # fmt: skip


def release_shapes(info: dict[str, Any], schema: Any) -> dict[str, tuple[int, ...]]:
    """The tensor shapes that model.json's ``release`` and ``schema`` imply (checked on load)."""
    views = info.get("views") or legacy_views(str(info["kind"]))
    dim = 2 * int(info["n_features"]) * len(views)
    classes = getattr(schema, "classes", None) or ()
    k = len(classes) if getattr(schema, "label", None) is not None else 1
    return {"noisy_sums": (max(1, k), dim), "noisy_counts": (max(1, k),)}


def move_samples(
    x: torch.Tensor,
    labels: torch.Tensor | None,
    loss: EmbeddingLoss,
    settings: MoveSettings,
    noise_levels: np.ndarray | None = None,
) -> torch.Tensor:
    """``x`` (n, *shape) in [-1, 1] moved ``settings.steps`` Adam steps on ``loss``, chunk by
    chunk; deterministic given ``x`` (the randomness is the generator's draw of ``x``).
    ``noise_levels`` (per class, :meth:`SampleRelease.noise_levels`) is needed by
    ``settings.stop_at_noise`` and refused without it."""
    if settings.stop_at_noise and noise_levels is None:
        raise ValueError("stop_at_noise needs noise_levels: pass release.noise_levels()")
    if not settings.stop_at_noise and noise_levels is not None:
        raise ValueError("noise_levels given but stop_at_noise is False: pass one with the other")
    out = []
    for start in range(0, x.shape[0], settings.chunk):
        part = slice(start, start + settings.chunk)
        chosen = None if labels is None else labels[part]
        level = None if noise_levels is None else _chunk_level(noise_levels, chosen)
        out.append(_move_chunk(x[part], chosen, loss, settings, level))
    return torch.cat(out)


def drawn_moved(
    draw: Draw,
    labels: torch.Tensor | None,
    n: int,
    loss: EmbeddingLoss,
    settings: MoveSettings,
    noise_levels: np.ndarray | None = None,
) -> torch.Tensor:
    """``n`` records for ``labels`` as ``settings`` asks: drawn (``pool`` times as many, herded
    to the release when ``pool`` > 1), then moved (:func:`move_samples`). Reads only ``loss``
    (the release and the public feature map) and the generator's draws."""
    x = select_samples(draw, labels, n, loss, settings.pool, settings.chunk, settings.select)
    return move_samples(x, labels, loss, settings, noise_levels)


def _chunk_level(levels: np.ndarray, labels: torch.Tensor | None) -> float:
    """The noise level of a chunk's loss: the mean over its present classes (as the loss)."""
    if labels is None:
        return float(levels[0])
    present = np.unique(labels.cpu().numpy())
    return float(np.mean(np.asarray(levels)[present]))


def _move_chunk(
    x, labels, loss: EmbeddingLoss, settings: MoveSettings, level: float | None
) -> torch.Tensor:
    """One chunk, parameterised through tanh so every value stays in [-1, 1]; with ``level``,
    stops before a step once the loss is at or below it."""
    with torch.enable_grad():
        p = torch.atanh(x.detach().float().clamp(-0.999, 0.999)).requires_grad_(True)
        opt = torch.optim.Adam([p], lr=settings.lr)
        for _ in range(settings.steps):
            value = loss(torch.tanh(p), labels)
            if level is not None and float(value.detach()) <= level:
                break
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
