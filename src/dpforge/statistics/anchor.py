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
    merge_matrices,
    split_heads,
)
from dpforge.statistics.anchor_train import stratified_labels, train_anchor
from dpforge.statistics.cells import WITHIN_CELL
from dpforge.statistics.marginals import MeasuredMarginal

__all__ = [
    "AnchorConfig",
    "AnchorLoss",
    "joint_distribution",
    "stratified_labels",
    "train_anchor",
]


RULES_WEIGHT = 10.0  # the rules' penalty in the fit (bench/results/tables/rules.md)


@dataclass(frozen=True)
class AnchorConfig:
    """Settings of the marginal anchoring (all public; see ``Synthesizer``).

    share: fraction of epsilon (after the metadata) spent on the marginal measurements; 1.0 is
        "marginals only" (no discriminator steps), 0.0 turns anchoring off ("discriminator only").
    n_bins: the most cells per numeric column (see :mod:`dpforge.statistics.bins`).
    cells_snr: numeric columns get as many cells (up to ``n_bins``) as keep each cell's count
        ``cells_snr`` noise standard deviations above the noise (``cells.cells_for_noise``);
        0 gives every numeric column ``n_bins`` cells.
    cells_class: which class's records the cells are sized for: "mean" (N / K records a
        class) or "smallest" (N times the smallest class share of the label prior, as
        released or declared: ``cells.class_count``).
    tail_trim: in each class's row of a label x numeric column marginal of round 1, cells
        outside the first and last one standing ``tail_trim`` noise standard deviations above
        0 are set to 0 (``tails.trimmed_tails``); 0 (the default) keeps them.
    class_rows: in each class's row of a label x numeric column marginal of round 1 whose
        records stand under ``class_rows`` noise sd a cell, adjacent cells (but those that
        stand out on their own) are pooled until each pool's expected count stands that many
        sd of its noise above 0, and each pool's count is spread by the column's 1-way
        distribution (``class_rows.pooled_class_rows``); 0 (the default) keeps the rows as
        measured. Off by default: classes of 100-200 records lose their relations
        (Thyroid, bench/results/tables/quality_gaps.md, session 36).
    class_totals: make each class's row of every marginal led by the label a histogram of
        the class's total pooled over the label x column marginals, scaled to the released N
        (``row_totals.with_class_totals``; free post-processing). Off by default (each table
        projected as a whole onto N): it helps a class heaped on one value (psid LR AUC
        +0.017 / +0.037 at epsilon 3 / 1) and costs nmes 0.007 RF AUC and wage 0.008 LR AUC
        (bench/results/tables/quality_gaps.md, session 36).
    zero_below: measured counts below this many noise standard deviations are set to 0
        before the projection (``rounds.sparsified``); 0 keeps them.
    within_cell: how each numeric cell's count beyond its fine cells that stand out from the
        noise (drawn evenly over the cell) is sized: "cell" (the default), from the cell's own
        noisy fine counts and round 1's noisy count of the cell, weighed by their noise
        (``cells.cell_counts``); "pooled" (before session 37), from the fine histogram
        pooled and projected as for placing the cells, which on small tables spreads over the
        whole range and lets a heap take its whole cell (``cells.within_cell_mass``).
    select_pairs: after a first round (1-way and label x column), spend part of the anchor
        budget on choosing column pairs under DP and measuring them
        (:mod:`dpforge.statistics.selection`).
    pairs_per_column: with ``select_pairs``, how many pairs are measured per column (rounded,
        at least one, at most every candidate); the selected pairs share one release's budget.
        None (the default): it follows the released N (:mod:`dpforge.statistics.phase_steps`).
    steps, batch_size, lr: the final anchor phase (Adam on the generator, before any GAN
        step; the learning rate decays linearly to 0 over the phase). ``steps=None`` and
        ``batch_size=None`` (the defaults): they follow the released N
        (:mod:`dpforge.statistics.phase_steps`; the batch is that of both phases); a number
        is used as is.
    scout_steps: the steps of the phase on round 1 alone that scores the pairs (with pair
        selection; None: ``steps``); the final phase goes on from it.
    weight: weight of the anchor loss added to the generator's GAN loss during refinement.
    generator_hidden: the generator's hidden widths when the method's options are the
        defaults (a caller who passes ``method_options`` keeps theirs).
    implied_weight: weight of every candidate pair not measured, held near the distribution
        its measured label x column marginals imply (0: none).
    loss: "l1" (the default), "chi2" (the two-halves chi-square estimate on every target) or
        "l1-chi2" (L1 on the 1-way and label x column targets, chi2 on the pairs;
        bench/results/tables/quality_trials.md, fifth round).
    rules_weight: weight of the penalty on the mass the generator puts on rows that break the
        schema's rules (:mod:`dpforge.statistics.rule_penalty`); 0 fits without it.
    label_pairs: with ``select_pairs`` and a label, round 2 measures each selected pair (a, b)
        as the 3-way marginal label x a x b instead of a x b, on cells merged by a public rule
        so each cell's count stays ``cells_snr`` noise sd above the noise
        (:mod:`dpforge.statistics.label_pairs`); the generator fits it given each label.
        None (the default): on from ``LABEL_PAIRS_FROM`` released records with epsilon x N
        at least ``LABEL_PAIRS_SIGNAL``, a label and the records in memory, off otherwise
        (:func:`.label_pairs.label_pairs_for`).
    one_way: with a label, round 1 measures every column's 1-way marginal besides label x
        column (True, the default); False measures label x column alone, whose tables hold
        the 1-way marginals, so each cell gets less noise (bench/results/tables/quality_gaps.md,
        "Session 35: nmes's LR gap"). Without a label the 1-way marginals are always measured.
    label_scores: with ``label_pairs``, the selection scores every candidate on the label x a
        x b table it would measure, not on a x b.
    """

    share: float = 1.0
    n_bins: int = 64
    cells_snr: float = 2.0
    cells_class: str = "mean"
    zero_below: float = 0.0
    tail_trim: float = 0.0
    class_rows: float = 0.0
    class_totals: bool = False
    within_cell: str = "cell"
    select_pairs: bool = True
    pairs_per_column: float | None = None
    steps: int | None = None
    scout_steps: int | None = None
    batch_size: int | None = None
    lr: float = 1e-2
    weight: float = 1.0
    generator_hidden: tuple[int, ...] = (256, 256)
    implied_weight: float = 0.0
    loss: str = "l1"
    rules_weight: float = RULES_WEIGHT
    label_pairs: bool | None = None
    label_scores: bool = False
    one_way: bool = True

    def validate(self) -> None:
        if self.loss not in LOSSES:
            raise ValueError(f"anchor loss must be one of {', '.join(LOSSES)}, got {self.loss!r}")
        if not 0.0 <= self.share <= 1.0:
            raise ValueError(f"anchor share must be in [0, 1], got {self.share}")
        if not self.rules_weight >= 0:
            raise ValueError(f"anchor rules_weight must be >= 0, got {self.rules_weight}")
        if self.pairs_per_column is not None and not self.pairs_per_column > 0:
            raise ValueError(f"anchor pairs_per_column must be > 0, got {self.pairs_per_column}")
        if not self.tail_trim >= 0:
            raise ValueError(f"anchor tail_trim must be >= 0, got {self.tail_trim}")
        if not self.class_rows >= 0:
            raise ValueError(f"anchor class_rows must be >= 0, got {self.class_rows}")
        if self.cells_class not in CELLS_CLASS:
            raise ValueError(
                f"anchor cells_class must be one of {', '.join(CELLS_CLASS)}, "
                f"got {self.cells_class!r}"
            )
        if self.within_cell not in WITHIN_CELL:
            raise ValueError(
                f"anchor within_cell must be one of {', '.join(WITHIN_CELL)}, "
                f"got {self.within_cell!r}"
            )
        if self.label_pairs and not self.select_pairs:
            raise ValueError("anchor label_pairs needs select_pairs=True (it changes round 2)")
        if self.label_scores and self.label_pairs is not True:
            raise ValueError("anchor label_scores needs label_pairs=True")
        if self.n_bins < 3:
            raise ValueError(f"anchor n_bins must be >= 3, got {self.n_bins}")
        if self.cells_snr < 0 or (self.scout_steps or 0) < 0 or self.zero_below < 0:
            raise ValueError(
                "anchor cells_snr, scout_steps and zero_below must be >= 0, got "
                f"{self.cells_snr}, {self.scout_steps}, {self.zero_below}"
            )
        steps = 0 if self.steps is None else self.steps
        batch = 1 if self.batch_size is None else self.batch_size
        if steps < 0 or batch < 1 or not self.lr > 0 or self.weight < 0:
            raise ValueError(
                "anchor steps must be >= 0, batch_size >= 1, lr > 0 and weight >= 0; got "
                f"{self.steps}, {self.batch_size}, {self.lr}, {self.weight}"
            )


LOSSES = ("l1", "chi2", "l1-chi2")
CELLS_CLASS = ("mean", "smallest")


@dataclass(frozen=True)
class _Target:
    spans: tuple[Span, ...]  # the feature columns of the marginal, in order
    conditional: bool  # True: the marginal includes the label (compared per label)
    distribution: torch.Tensor  # (K, cells...) given each label, or the joint (cells...)
    weight: float = 1.0
    groups: tuple = ()  # per span: a (cells, merged cells) 0/1 matrix or None; () for none


class AnchorLoss:
    """L1 distance between the generator's marginals and the measured ones."""

    def __init__(
        self,
        measured: Sequence[MeasuredMarginal],
        spans: Sequence[Span],
        label_name: str | None,
        prior: torch.Tensor | None,
        implied: tuple[Sequence[tuple[str, str]], float] = ((), 0.0),
        kind: str = "l1",
    ) -> None:
        if kind not in LOSSES:
            raise ValueError(f"anchor loss must be one of {', '.join(LOSSES)}, got {kind!r}")
        self.kind = kind
        by_name = {s.column: s for s in spans}
        self._spans = tuple(sorted(spans, key=lambda s: s.start))
        self.prior = prior
        # Distributions given the label count equally for every class, rare ones included: a
        # classifier trained on the synthetic rows needs each class's features, not only the
        # majority's (weighting by the prior lets a 2 % class drift).
        self.class_weights = None if prior is None else torch.full_like(prior, 1.0 / len(prior))
        self.targets = [self._target(m, by_name, label_name) for m in measured]
        pairs, weight = implied
        if weight > 0:
            self.targets += [self._implied(pair, by_name, weight) for pair in pairs]
        self._group()

    def _implied(self, pair: tuple[str, str], by_name: dict[str, Span], weight: float) -> _Target:
        """The pair's distribution implied by the measured 1-way (or label x column) marginals
        if the two columns were independent given the label: the maximum-entropy guess for a
        pair that was not measured, so the generator does not invent dependence there."""
        a, b = (self._one_column(c) for c in pair)
        if a.conditional:
            joint = torch.einsum(
                "y,ya,yb->ab", self.prior.to(a.distribution), a.distribution, b.distribution
            )
        else:
            joint = torch.outer(a.distribution, b.distribution)
        return _Target((by_name[pair[0]], by_name[pair[1]]), False, joint, weight)

    def _one_column(self, column: str) -> _Target:
        for target in self.targets:
            single = len(target.spans) == 1 and target.spans[0].column == column
            if single and (target.conditional or self.prior is None):
                return target
        raise ValueError(f"no measured marginal of column {column!r} to imply a pair from")

    @staticmethod
    def _target(m: MeasuredMarginal, by_name: dict[str, Span], label: str | None) -> _Target:
        dist = torch.as_tensor(m.distribution(), dtype=torch.float32)
        groups = merge_matrices(m.groups)
        if label is not None and m.columns[0] == label:
            flat = dist.reshape(dist.shape[0], -1)
            rows = flat.sum(dim=1, keepdim=True)
            uniform = torch.full_like(flat, 1.0 / flat.shape[1])
            cond = torch.where(rows > 0, flat / rows.clamp_min(1e-12), uniform)
            spans = tuple(by_name[c] for c in m.columns[1:])
            return _Target(spans, True, cond.reshape(dist.shape), 1.0, groups[1:])
        if label is not None and label in m.columns:
            raise ValueError(f"put the label first in a marginal, got {m.columns}")
        return _Target(tuple(by_name[c] for c in m.columns), False, dist, 1.0, groups)

    def __call__(self, probs: torch.Tensor, labels: torch.Tensor | None) -> torch.Tensor:
        """The loss of generated probability rows ``probs`` (n, D) drawn with ``labels``.

        "l1": the sum of L1 distances between the batch's marginals and the targets. Its
        expectation over batches exceeds the distance of the model itself by the batch's
        sampling error, which rewards flat, nearly independent outputs. "chi2": with ``a`` and
        ``b`` the marginals of the two halves of the batch, ``sum (a - t)(b - t) / (t + 1/C)``
        over the C cells of each target: the halves are independent, so this is an unbiased
        estimate of the model's own weighted squared distance, with no such reward.
        "l1-chi2": L1 on the 1-way and label x column targets (what a classifier reads),
        chi2 on the column pairs (measured or implied), which L1 fits flat.
        """
        l1, chi2 = self._other_l1, self._chi2_targets
        total = self._grouped_l1(probs, labels)
        if l1:
            models = self.model_marginals(probs, labels, l1)
            total = total + sum(self._l1(t, m) for t, m in zip(l1, models, strict=True))
        if not chi2:
            return total
        half = probs.shape[0] // 2
        if half == 0:
            raise ValueError("the chi2 anchor loss needs a batch of at least 2 rows")
        halves = [(probs[a:b], None if labels is None else labels[a:b])
                  for a, b in ((0, half), (half, 2 * half))]  # fmt: skip
        first, second = (self.model_marginals(p, y, chi2) for p, y in halves)
        triples = zip(chi2, first, second, strict=True)
        return total + sum(self._chi2(t, a, b) for t, a, b in triples)

    def _group(self) -> None:
        """Sort the targets once: the one-column L1 targets and the label-free pair L1 targets
        evaluated together (``anchor_l1``), the other L1 targets one by one, and the chi2
        targets."""
        self._chi2_targets = [t for t in self.targets if self._is_chi2(t)]
        l1 = [t for t in self.targets if not self._is_chi2(t)]
        one = [t for t in l1 if len(t.spans) == 1]
        conditional = [t for t in one if t.conditional]
        joint = [t for t in one if not t.conditional]
        self._groups = (OneColumnTargets.build(conditional), OneColumnTargets.build(joint))
        is_pair = [len(t.spans) == 2 and not (t.conditional or t.groups) for t in l1]
        pairs = [t for t, pair in zip(l1, is_pair, strict=True) if pair]
        self._pairs = PairGroups.build(pairs, self._spans)
        self._other_l1 = [
            t for t, pair in zip(l1, is_pair, strict=True) if len(t.spans) != 1 and not pair
        ]

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

    def _is_chi2(self, target: _Target) -> bool:
        pair = len(target.spans) >= 2
        return self.kind == "chi2" or (self.kind == "l1-chi2" and pair)

    def model_marginals(
        self, probs: torch.Tensor, labels: torch.Tensor | None, targets: list | None = None
    ) -> list:
        """The generated rows' marginal of every target (or of ``targets``): (K, cells) given
        each label, or the joint distribution."""
        weights, class_means = self.row_weights(labels, probs)
        models = []
        for target in self.targets if targets is None else targets:
            if target.conditional:
                models.append(
                    conditional_distribution(probs, target.spans, class_means, target.groups)
                )
            else:
                models.append(joint_distribution(probs, target.spans, weights, target.groups))
        return models

    def _l1(self, target: _Target, model: torch.Tensor) -> torch.Tensor:
        gap = (model - target.distribution.to(model)).abs()
        if target.conditional:
            return (self.class_weights.to(model) * gap.flatten(1).sum(dim=1)).sum()
        return target.weight * gap.sum()

    def _chi2(self, target: _Target, first: torch.Tensor, second: torch.Tensor) -> torch.Tensor:
        goal = target.distribution.to(first)
        if target.conditional:
            cells = goal[0].numel()
            terms = (first - goal) * (second - goal) / (goal + 1.0 / cells)
            return (self.class_weights.to(first) * terms.flatten(1).sum(dim=1)).sum()
        terms = (first - goal) * (second - goal) / (goal + 1.0 / goal.numel())
        return target.weight * terms.sum()

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
