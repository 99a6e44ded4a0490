"""The anchor: a differentiable loss that pulls a generator towards the measured marginals.

The generator maps (z, label) to one probability vector per column (softmax heads over
categories or public numeric cells). Given z and the label, columns are independent, so the
model's marginal of a set of columns is the average over z of the product of their probability
vectors (GEM, Liu et al. 2021). Marginals that involve the label are compared as distributions
*given* each label, weighted by the label prior; the others as joint distributions. The loss is
the sum of L1 distances, so it is zero exactly when the generator reproduces every measured
(projected) marginal. Everything here reads only the noisy measurements and generated rows:
post-processing, free of privacy cost.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from dpforge.data.encoder import Span
from dpforge.statistics.anchor_l1 import (
    OneColumnTargets,
    PairGroups,
    conditional_distribution,
    joint_distribution,
    split_heads,
)
from dpforge.statistics.anchor_train import stratified_labels, train_anchor
from dpforge.statistics.marginals import MeasuredMarginal

__all__ = [
    "AnchorConfig",
    "AnchorLoss",
    "joint_distribution",
    "stratified_labels",
    "train_anchor",
]


@dataclass(frozen=True)
class AnchorConfig:
    """Settings of the marginal anchoring (all public; see ``Synthesizer``).

    share: fraction of epsilon (after the metadata) spent on the marginal measurements; 1.0 is
        "marginals only" (no discriminator steps), 0.0 turns anchoring off ("discriminator only").
    n_bins: the most cells per numeric column (see :mod:`dpforge.statistics.bins`).
    pairs_per_column: after a first round (1-way and label x column), part of the anchor
        budget chooses column pairs under DP and measures them
        (:mod:`dpforge.statistics.selection`): this many per column (rounded, at least one, at
        most every candidate), sharing one release's budget. None (the default): it follows
        the released N (:mod:`dpforge.statistics.phase_steps`). 0 measures no pairs (round 1
        gets the whole budget; a faster fit, with a worse 2-way fit:
        docs/research/anchoring-options.md).
    steps, batch_size: the anchor phase (Adam on the generator, fitted to the consistent
        estimate of every measurement, before any GAN step).
        None (the defaults): they follow the released N (:mod:`dpforge.statistics.phase_steps`);
        a number is used as is.
    weight: weight of the anchor loss added to the generator's GAN loss during refinement.
    generator_hidden: the generator's hidden widths when the method's options are the
        defaults (a caller who passes ``method_options`` keeps theirs).
    """

    share: float = 1.0
    n_bins: int = 64
    pairs_per_column: float | None = None
    steps: int | None = None
    batch_size: int | None = None
    weight: float = 1.0
    generator_hidden: tuple[int, ...] = (256, 256)

    def validate(self) -> None:
        if not 0.0 <= self.share <= 1.0:
            raise ValueError(f"anchor share must be in [0, 1], got {self.share}")
        if self.pairs_per_column is not None and not self.pairs_per_column >= 0:
            raise ValueError(f"anchor pairs_per_column must be >= 0, got {self.pairs_per_column}")
        if self.n_bins < 3:
            raise ValueError(f"anchor n_bins must be >= 3, got {self.n_bins}")
        steps = 0 if self.steps is None else self.steps
        batch = 1 if self.batch_size is None else self.batch_size
        if steps < 0 or batch < 1 or self.weight < 0:
            raise ValueError(
                "anchor steps must be >= 0, batch_size >= 1 and weight >= 0; got "
                f"{self.steps}, {self.batch_size}, {self.weight}"
            )


@dataclass(frozen=True)
class _Target:
    spans: tuple[Span, ...]  # the feature columns of the marginal, in order
    conditional: bool  # True: the marginal includes the label (compared per label)
    distribution: torch.Tensor  # (K, cells...) given each label, or the joint (cells...)
    weight: float = 1.0


class AnchorLoss:
    """L1 distance between the generator's marginals and the measured ones."""

    def __init__(
        self,
        measured: Sequence[MeasuredMarginal],
        spans: Sequence[Span],
        label_name: str | None,
        prior: torch.Tensor | None,
    ) -> None:
        by_name = {s.column: s for s in spans}
        self._spans = tuple(sorted(spans, key=lambda s: s.start))
        self.prior = prior
        # Distributions given the label count equally for every class, rare ones included: a
        # classifier trained on the synthetic rows needs each class's features, not only the
        # majority's (weighting by the prior lets a 2 % class drift).
        self.class_weights = None if prior is None else torch.full_like(prior, 1.0 / len(prior))
        self.targets = [self._target(m, by_name, label_name) for m in measured]
        self._group()

    @staticmethod
    def _target(m: MeasuredMarginal, by_name: dict[str, Span], label: str | None) -> _Target:
        dist = torch.as_tensor(m.distribution(), dtype=torch.float32)
        if label is not None and m.columns[0] == label:
            flat = dist.reshape(dist.shape[0], -1)
            rows = flat.sum(dim=1, keepdim=True)
            uniform = torch.full_like(flat, 1.0 / flat.shape[1])
            cond = torch.where(rows > 0, flat / rows.clamp_min(1e-12), uniform)
            spans = tuple(by_name[c] for c in m.columns[1:])
            return _Target(spans, True, cond.reshape(dist.shape))
        if label is not None and label in m.columns:
            raise ValueError(f"put the label first in a marginal, got {m.columns}")
        return _Target(tuple(by_name[c] for c in m.columns), False, dist)

    def __call__(self, probs: torch.Tensor, labels: torch.Tensor | None) -> torch.Tensor:
        """The loss of generated probability rows ``probs`` (n, D) drawn with ``labels``: the
        sum of L1 distances between the batch's marginals and the targets."""
        total = self._grouped_l1(probs, labels)
        if self._other_l1:
            models = self.model_marginals(probs, labels, self._other_l1)
            total = total + sum(self._l1(t, m) for t, m in zip(self._other_l1, models, strict=True))
        return total

    def _group(self) -> None:
        """Sort the targets once: the one-column targets and the label-free pair targets
        evaluated together (``anchor_l1``), the other targets one by one."""
        one = [t for t in self.targets if len(t.spans) == 1]
        conditional = [t for t in one if t.conditional]
        joint = [t for t in one if not t.conditional]
        self._groups = (OneColumnTargets.build(conditional), OneColumnTargets.build(joint))
        is_pair = [len(t.spans) == 2 and not t.conditional for t in self.targets]
        pairs = [t for t, pair in zip(self.targets, is_pair, strict=True) if pair]
        self._pairs = PairGroups.build(pairs, self._spans)
        self._other_l1 = [
            t for t, pair in zip(self.targets, is_pair, strict=True)
            if len(t.spans) != 1 and not pair
        ]  # fmt: skip

    def _grouped_l1(self, probs: torch.Tensor, labels: torch.Tensor | None) -> torch.Tensor:
        conditional, joint = self._groups
        weights, class_means = self.row_weights(labels, probs)
        total = probs.new_zeros(())
        if conditional is not None:
            total = total + conditional.l1(probs, class_means, self.class_weights)
        if joint is not None:
            total = total + joint.l1(probs, weights)
        if self._pairs is not None:
            total = total + self._pairs.l1(split_heads(probs, self._spans), weights)
        return total

    def model_marginals(
        self, probs: torch.Tensor, labels: torch.Tensor | None, targets: list | None = None
    ) -> list:
        """The generated rows' marginal of every target (or of ``targets``): (K, cells) given
        each label, or the joint distribution."""
        weights, class_means = self.row_weights(labels, probs)
        models = []
        for target in self.targets if targets is None else targets:
            if target.conditional:
                models.append(conditional_distribution(probs, target.spans, class_means))
            else:
                models.append(joint_distribution(probs, target.spans, weights))
        return models

    def _l1(self, target: _Target, model: torch.Tensor) -> torch.Tensor:
        gap = (model - target.distribution.to(model)).abs()
        if target.conditional:
            return (self.class_weights.to(model) * gap.flatten(1).sum(dim=1)).sum()
        return target.weight * gap.sum()

    def row_weights(self, labels, probs) -> tuple[torch.Tensor, torch.Tensor]:
        """Row weights giving prior-weighted averages, and the (K, n) per-class mean operator."""
        n = probs.shape[0]
        if labels is None or self.prior is None:
            return probs.new_full((n,), 1.0 / n), probs.new_full((1, n), 1.0 / n)
        k = self.prior.shape[0]
        member = torch.nn.functional.one_hot(labels, k).to(probs).T  # (K, n)
        class_means = member / member.sum(dim=1, keepdim=True).clamp_min(1.0)
        weights = (self.prior.to(probs)[:, None] * class_means).sum(dim=0)
        return weights, class_means
