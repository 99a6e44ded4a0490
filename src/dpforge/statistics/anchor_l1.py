"""The L1 anchor loss on many one-column targets in a few large operations (issue 22, speed).

A table's round 1 measures every column's 1-way marginal and, with a label, label x column:
two targets per column, each a handful of cells. Evaluated one by one they cost a matmul, a
subtraction, an absolute value and two sums each, forward and backward, per step: on a
21-column table about a quarter of a step's CPU time went to those small operations. Gathered
into one index over the generator's output, all conditional targets are one matmul and one
absolute difference, all 1-way targets likewise. Same loss (up to float summation order).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

__all__ = ["OneColumnTargets"]


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
