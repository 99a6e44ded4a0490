"""The schema's rules in the anchoring fit: forbidden cells get (almost) no mass.

The generator's softmax heads are independent given (z, label), so the probability that a
generated row breaks a ``forbid`` rule is, per row, the product over its conditions of the
mass the row's head puts on the cells that meet the condition (times 1 or 0 for a condition
on the label); for an ``inequality`` it is ``p_left^T W p_right``, with ``W[i, j]`` the share
of value pairs from cells ``i`` and ``j`` that break it. The penalty is the mean of these
probabilities over the batch, times a public weight, added to the anchor loss: the fit is
pushed towards the rows the sampler keeps, so fewer are redrawn and the marginals it matches
are those of rule-abiding rows. ``depends`` rules need nothing: the dependent is not modelled,
and a condition on it is the same condition on its determinant.

A numeric cell's share that meets a condition is measured on public points inside the cell
(the values its decoding draws, from a fixed public generator). Everything here reads only
the public schema, the public cells and generated rows: post-processing, free.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from dpforge.data.encoder import SOFTMAX, TableEncoder, snap
from dpforge.schema.rule_domain import matches, on_determinant, setting_rule
from dpforge.schema.rules import Condition, Forbid, Inequality

POINTS_PER_CELL = 32  # public points per numeric cell for the shares
Loss = Callable[[torch.Tensor, torch.Tensor | None], torch.Tensor]


RULES_WEIGHT = 10.0  # the rules' penalty in the table fit (bench/results/tables/rules.md)


@dataclass(frozen=True)
class _Factor:
    """The mass of one head on the cells that meet a rule's condition(s) on one column."""

    start: int
    stop: int
    share: torch.Tensor  # (cells,) share of each cell that meets the condition(s)


@dataclass(frozen=True)
class _ForbidTerm:
    factors: tuple[_Factor, ...]
    label_share: torch.Tensor | None  # (classes,) 1 where the label meets its condition(s)


@dataclass(frozen=True)
class _OrderTerm:
    left: slice  # the left column's head
    right: slice  # the right column's head
    breaks: torch.Tensor  # (left cells, right cells) share of pairs that break the rule


class RulePenalty:
    """``loss(probs, labels) + weight * mean probability that a row breaks a rule``."""

    def __init__(self, loss: Loss, encoder: TableEncoder, weight: float) -> None:
        self.loss, self.weight = loss, weight
        self.terms = rule_terms(encoder)

    def __call__(self, probs: torch.Tensor, labels: torch.Tensor | None) -> torch.Tensor:
        return self.loss(probs, labels) + self.weight * self.penalty(probs, labels)

    def penalty(self, probs: torch.Tensor, labels: torch.Tensor | None) -> torch.Tensor:
        """The mean over rows of the probability of breaking each rule, summed over rules."""
        total = probs.new_zeros(())
        for term in self.terms:
            if isinstance(term, _ForbidTerm):
                per_row = probs.new_ones(probs.shape[0])
                for f in term.factors:
                    per_row = per_row * (probs[:, f.start : f.stop] @ f.share.to(probs))
                if term.label_share is not None:
                    per_row = per_row * _label_factor(term.label_share, labels, probs)
            else:
                left, right = probs[:, term.left], probs[:, term.right]
                per_row = ((left @ term.breaks.to(probs)) * right).sum(dim=1)
            total = total + per_row.mean()
        return total


def _label_factor(share: torch.Tensor, labels: torch.Tensor | None, probs: torch.Tensor):
    if labels is None:
        return probs.new_ones(probs.shape[0])
    return share.to(probs)[labels]


def with_rules(loss: Loss, encoder: TableEncoder, weight: float) -> Loss:
    """``loss`` with the rules' penalty, when the schema has rules it can express and
    ``weight`` > 0; otherwise ``loss`` itself."""
    if weight <= 0 or not rule_terms(encoder):
        return loss
    return RulePenalty(loss, encoder, weight)


def rule_terms(encoder: TableEncoder) -> list:
    """One term per ``forbid`` or ``inequality`` rule whose columns all have softmax heads
    (or are the label)."""
    schema, terms = encoder.schema, []
    spans = {s.column: s for s in encoder.spans if s.activation == SOFTMAX}
    for rule in schema.rules:
        if isinstance(rule, Forbid):
            term = _forbid_term(rule, encoder, spans)
        elif isinstance(rule, Inequality) and rule.left in spans and rule.right in spans:
            term = _order_term(rule, encoder, spans)
        else:
            term = None
        if term is not None:
            terms.append(term)
    return terms


def _forbid_term(rule: Forbid, encoder: TableEncoder, spans: dict) -> _ForbidTerm | None:
    schema = encoder.schema
    by_column: dict[str, list[Condition]] = {}
    for condition in rule.when:
        setter = setting_rule(condition.column, schema.rules)
        stated = condition if setter is None else on_determinant(condition, setter)
        by_column.setdefault(stated.column, []).append(stated)
    factors, label_share = [], None
    for name, conditions in by_column.items():
        points = _points(encoder, name)
        if points is None:
            return None  # a column without a softmax head: the sampler alone enforces it
        share = _share(conditions, points)
        if name == schema.label:
            label_share = share
        else:
            span = spans[name]
            factors.append(_Factor(span.start, span.stop, share))
    return _ForbidTerm(tuple(factors), label_share)


def _order_term(rule: Inequality, encoder: TableEncoder, spans: dict) -> _OrderTerm:
    left, right = _points(encoder, rule.left), _points(encoder, rule.right)
    lv = np.asarray(left, dtype=np.float64)  # (cells, points); NaN on the missing cell
    rv = np.asarray(right, dtype=np.float64)
    pairs = lv[:, :, None, None] + rule.gap > rv[None, None, :, :]
    breaks = torch.as_tensor(pairs.mean(axis=(1, 3)), dtype=torch.float32)
    a, b = spans[rule.left], spans[rule.right]
    return _OrderTerm(slice(a.start, a.stop), slice(b.start, b.stop), breaks)


def _share(conditions: Sequence[Condition], points: np.ndarray) -> torch.Tensor:
    """Per cell, the share of its public points that meet every condition."""
    flat = points.reshape(-1)
    hit = np.ones(flat.shape, dtype=bool)
    for condition in conditions:
        hit &= matches(condition, flat)
    return torch.as_tensor(hit.reshape(points.shape).mean(axis=1), dtype=torch.float32)


def _points(encoder: TableEncoder, name: str) -> np.ndarray | None:
    """(cells, points): public values inside each cell of the column's head (object array of
    categories, or numbers; the missing cell of a nullable column holds empty values)."""
    schema = encoder.schema
    column = schema.column(name)
    missing = [None] if column.nullable else []
    if not column.is_numeric:
        cells = [*column.categories, *missing]
        return np.asarray(cells, dtype=object)[:, None]
    if name not in encoder.bins:
        return None
    bins = encoder.bins[name]
    cells = np.repeat(np.arange(bins.size), POINTS_PER_CELL)
    values = snap(bins.decode(cells, np.random.default_rng(0)), column)
    grid = np.asarray(values, dtype=np.float64).reshape(bins.size, POINTS_PER_CELL)
    if column.nullable:
        grid = np.vstack([grid, np.full((1, POINTS_PER_CELL), np.nan)])
    return grid
