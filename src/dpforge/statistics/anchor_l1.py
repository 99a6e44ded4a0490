"""The L1 anchor loss on many one-column and pair targets in a few large operations (issue 22,
speed).

A table's round 1 measures every column's 1-way marginal and, with a label, label x column:
two targets per column, each a handful of cells. Evaluated one by one they cost a matmul, a
subtraction, an absolute value and two sums each, forward and backward, per step: on a
21-column table about a quarter of a step's CPU time went to those small operations. Gathered
into one index over the generator's output, all conditional targets are one matmul and one
absolute difference, all 1-way targets likewise. Same loss (up to float summation order).

The label-free column pairs are grouped too (below); any other target (a marginal of more
columns) is evaluated on its own, for any number of columns (:func:`joint_distribution`,
:func:`conditional_distribution`).

One by one, each such pair sliced two blocks out of the output, and every slice's backward
wrote a full-size zero gradient (a third of a 21-column table's step). :func:`split_heads`
cuts the output into its heads once (one backward for all of them), and :class:`PairGroups`
forms the marginals of all pairs of the same two widths in one batched matmul, without
padding (padding every pair of Adult to the widest, 64 x 99 cells, doubled the loss's time).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import torch

__all__ = [
    "OneColumnTargets",
    "PairGroups",
    "PairTargets",
    "conditional_distribution",
    "joint_distribution",
    "split_heads",
]


@dataclass(frozen=True)
class OneColumnTargets:
    """One-column targets of one kind (given the label, or 1-way) side by side."""

    index: torch.Tensor  # the generator output's units of every target, in target order
    goal: torch.Tensor  # (K, units) given each label, or (units,)
    weights: torch.Tensor  # (units,): each unit's target weight

    @classmethod
    def build(cls, targets: Sequence) -> OneColumnTargets | None:
        """From ``_Target``s with one span each; None when there are none."""
        if not targets:
            return None
        index = torch.cat([torch.arange(t.spans[0].start, t.spans[0].stop) for t in targets])
        goal = torch.cat([t.distribution for t in targets], dim=-1)
        weights = torch.cat([torch.full((t.spans[0].dim,), float(t.weight)) for t in targets])
        return cls(index, goal, weights)

    def l1(self, probs: torch.Tensor, mean: torch.Tensor, class_weights=None) -> torch.Tensor:
        """Sum of the targets' (weighted) L1 gaps; ``mean`` is the (K, n) per-class mean
        operator with ``class_weights`` (K,) for conditional targets, else the (n,) row
        weights."""
        model = mean @ probs.index_select(1, self.index.to(probs.device))
        gap = (model - self.goal.to(model)).abs() * self.weights.to(model)
        if class_weights is None:
            return gap.sum()
        return (class_weights.to(model) * gap.sum(dim=1)).sum()


@dataclass(frozen=True)
class PairTargets:
    """Joint (label-free) two-column targets of one pair of widths, side by side."""

    first: tuple[int, ...]  # each pair's first head (its index among the output's heads)
    second: tuple[int, ...]
    goal: torch.Tensor  # (P, Wa, Wb): each pair's distribution
    weights: torch.Tensor  # (P,): each pair's target weight

    def l1(self, heads: Sequence[torch.Tensor], weights: torch.Tensor) -> torch.Tensor:
        """Sum over the pairs of weight x L1 gap; ``heads`` are the output's blocks (n, W)
        and ``weights`` the (n,) row weights."""
        first = torch.stack([heads[i] for i in self.first])  # (P, n, Wa)
        second = torch.stack([heads[i] for i in self.second])  # (P, n, Wb)
        model = torch.bmm((first * weights[None, :, None]).transpose(1, 2), second)
        gap = (model - self.goal.to(model)).abs().sum(dim=(1, 2))
        return (gap * self.weights.to(model)).sum()


@dataclass(frozen=True)
class PairGroups:
    """All joint pair targets, grouped by their (narrow, wide) widths: one batched matmul a
    group. Each pair is ordered narrow block first (its L1 does not depend on the order)."""

    groups: tuple[PairTargets, ...]

    @classmethod
    def build(cls, targets: Sequence, spans: Sequence) -> PairGroups | None:
        """From ``_Target``s with two spans each (not given the label) and the output's
        ``spans`` in order; None when there are no targets."""
        head = {span.start: i for i, span in enumerate(spans)}
        by_widths: dict[tuple[int, int], list] = {}
        for target in map(_narrow_first, targets):
            widths = (target.spans[0].dim, target.spans[1].dim)
            by_widths.setdefault(widths, []).append(target)
        if not by_widths:
            return None
        return cls(tuple(_group(group, head) for group in by_widths.values()))

    def l1(self, heads: Sequence[torch.Tensor], weights: torch.Tensor) -> torch.Tensor:
        """Sum over every group of :meth:`PairTargets.l1`."""
        return sum(group.l1(heads, weights) for group in self.groups)


def _group(targets: Sequence, head: dict[int, int]) -> PairTargets:
    a, b = targets[0].spans[0].dim, targets[0].spans[1].dim
    return PairTargets(
        tuple(head[t.spans[0].start] for t in targets),
        tuple(head[t.spans[1].start] for t in targets),
        torch.stack([t.distribution.reshape(a, b) for t in targets]),
        torch.tensor([float(t.weight) for t in targets]),
    )


def _narrow_first(target):
    """``target`` with its narrower block first (its distribution transposed to match)."""
    a, b = target.spans
    if a.dim <= b.dim:
        return target
    flipped = target.distribution.reshape(a.dim, b.dim).T
    return replace(target, spans=(b, a), distribution=flipped)


def split_heads(probs: torch.Tensor, spans: Sequence) -> tuple[torch.Tensor, ...]:
    """The output's blocks, one per span, in one ``split`` (``spans`` must tile the output)."""
    stops = [span.stop for span in spans]
    starts = [0, *stops[:-1]]
    if [span.start for span in spans] != starts or stops[-1] != probs.shape[1]:
        raise ValueError("the anchor loss needs spans that tile the generator's output in order")
    return torch.split(probs, [span.dim for span in spans], dim=1)


def _blocks(probs: torch.Tensor, spans: Sequence) -> list[torch.Tensor]:
    """Each span's probability block."""
    return [probs[:, s.start : s.stop] for s in spans]


def _row_products(blocks: list[torch.Tensor]) -> torch.Tensor:
    """(n, c1 * c2 * ...): each row's outer product of its blocks, flattened (C order)."""
    out = blocks[0]
    for block in blocks[1:]:
        out = (out[:, :, None] * block[:, None, :]).reshape(out.shape[0], -1)
    return out


def joint_distribution(probs: torch.Tensor, spans: Sequence, weights: torch.Tensor) -> torch.Tensor:
    """The weighted average over rows of the product of the spans' probability vectors:
    the generator's joint distribution of the columns, of shape (c1, c2, ...)."""
    blocks = _blocks(probs, spans)
    if len(blocks) == 1:
        return weights @ blocks[0]
    first = _row_products(blocks[:-1])
    joint = (first * weights[:, None]).T @ blocks[-1]
    return joint.reshape(*(b.shape[1] for b in blocks))


def conditional_distribution(
    probs: torch.Tensor, spans: Sequence, class_means: torch.Tensor
) -> torch.Tensor:
    """The generator's distribution of the columns given each label, (K, c1, c2, ...):
    ``class_means`` (K, n) averages the rows of each class."""
    blocks = _blocks(probs, spans)
    if len(blocks) == 1:
        return class_means @ blocks[0]
    first = _row_products(blocks[:-1])  # (n, a)
    per_class = (class_means[:, :, None] * first[None]).transpose(1, 2) @ blocks[-1]  # (K, a, b)
    return per_class.reshape(class_means.shape[0], *(b.shape[1] for b in blocks))
