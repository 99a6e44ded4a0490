"""The L1 anchor loss on many one-column and pair targets in a few large operations (issue 22,
speed).

A table's round 1 measures every column's 1-way marginal and, with a label, label x column:
two targets per column, each a handful of cells. Evaluated one by one they cost a matmul, a
subtraction, an absolute value and two sums each, forward and backward, per step: on a
21-column table about a quarter of a step's CPU time went to those small operations. Gathered
into one index over the generator's output, all conditional targets are one matmul and one
absolute difference, all 1-way targets likewise. Same loss (up to float summation order).

The measured column pairs cost more still: each pair sliced two blocks out of the output, and
every slice's backward wrote a full-size zero gradient (a third of a 21-column table's step).
:class:`PairTargets` gathers every pair's two blocks with two index operations, padded to the
widest block, and forms all the pair marginals in one batched matmul.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

__all__ = ["OneColumnTargets", "PairTargets"]


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
    """Joint (label-free) two-column targets side by side, padded to the widest blocks."""

    first: torch.Tensor  # (P, Wa): each pair's first block's output units (padding repeats)
    second: torch.Tensor  # (P, Wb)
    goal: torch.Tensor  # (P, Wa, Wb): each pair's distribution, zero in the padding
    mask: torch.Tensor  # (P, Wa, Wb): 1 on a pair's own cells, 0 in the padding
    weights: torch.Tensor  # (P,): each pair's target weight

    @classmethod
    def build(cls, targets: Sequence) -> PairTargets | None:
        """From ``_Target``s with two spans each (not given the label); None when none."""
        if not targets:
            return None
        wa = max(t.spans[0].dim for t in targets)
        wb = max(t.spans[1].dim for t in targets)
        goal = torch.zeros(len(targets), wa, wb)
        mask = torch.zeros(len(targets), wa, wb)
        for p, t in enumerate(targets):
            da, db = t.spans[0].dim, t.spans[1].dim
            goal[p, :da, :db] = t.distribution.reshape(da, db)
            mask[p, :da, :db] = 1.0
        first = torch.stack([_padded_units(t.spans[0], wa) for t in targets])
        second = torch.stack([_padded_units(t.spans[1], wb) for t in targets])
        weights = torch.tensor([float(t.weight) for t in targets])
        return cls(first, second, goal, mask, weights)

    def marginals(self, probs: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
        """(P, Wa, Wb): every pair's weighted joint distribution over the rows (padding cells
        hold products of repeated units; :meth:`l1` masks them out)."""
        n, (p, wa), wb = probs.shape[0], self.first.shape, self.second.shape[1]
        a = probs.index_select(1, self.first.flatten().to(probs.device)).view(n, p, wa)
        b = probs.index_select(1, self.second.flatten().to(probs.device)).view(n, p, wb)
        weighted = (a * weights[:, None, None]).permute(1, 2, 0)  # (P, Wa, n)
        return torch.bmm(weighted, b.permute(1, 0, 2))

    def l1(self, probs: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
        """Sum over the pairs of weight x L1 gap; ``weights`` are the (n,) row weights."""
        model = self.marginals(probs, weights)
        gap = (model - self.goal.to(model)).abs() * self.mask.to(model)
        return (gap.sum(dim=(1, 2)) * self.weights.to(model)).sum()


def _padded_units(span, width: int) -> torch.Tensor:
    """The span's output units, then its last unit repeated up to ``width``."""
    units = torch.arange(span.start, span.stop)
    return torch.cat([units, units[-1:].expand(width - len(units))])
