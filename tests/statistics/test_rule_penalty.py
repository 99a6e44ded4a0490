"""The rules' penalty in the anchoring fit (issue 21.7): on hand-made soft outputs it equals the
exact probability that a row drawn from them breaks a rule."""

from __future__ import annotations

import torch

from dpforge.data.encoder import TableEncoder
from dpforge.schema.rules import Condition, Depends, Forbid, Inequality
from dpforge.schema.table import Column, Schema
from dpforge.statistics.rule_penalty import RulePenalty, with_rules

COLUMNS = (
    Column("colour", "categorical", categories=("red", "green", "blue")),
    Column("code", "integer", lower=1, upper=3),
    Column("a", "integer", lower=0, upper=2),
    Column("b", "integer", lower=0, upper=2),
    Column("y", "categorical", categories=("no", "yes")),
)
CODE = Depends("colour", "code", (("red", 1), ("green", 2), ("blue", 3)))


def zero(probs, labels):
    return probs.new_zeros(())


def encoder(*rules) -> TableEncoder:
    return TableEncoder(Schema(COLUMNS, label="y", rules=(CODE, *rules)), n_bins=8)


def rows(colour, a, b) -> torch.Tensor:
    """Softmax outputs of two rows: heads colour (3 cells), a (3 values), b (3 values)."""
    return torch.cat([torch.tensor(colour), torch.tensor(a), torch.tensor(b)], dim=1).float()


def test_a_forbidden_combination_costs_its_probability():
    """forbid code >= 2 (green or blue, through the map) and a == 0, for class yes only."""
    rule = Forbid(
        (Condition("code", ">=", 2), Condition("a", "==", 0), Condition("y", "==", "yes"))
    )
    penalty = RulePenalty(zero, encoder(rule), weight=1.0)
    probs = rows([[0.5, 0.3, 0.2], [0.1, 0.1, 0.8]], [[0.4, 0.6, 0], [1, 0, 0]], [[1, 0, 0]] * 2)
    labels = torch.tensor([1, 0])
    expected = ((0.3 + 0.2) * 0.4 + 0.0) / 2  # the second row is class "no"
    assert torch.isclose(penalty(probs, labels), torch.tensor(expected))


def test_an_inequality_costs_the_probability_of_a_wrong_order():
    """a <= b breaks when a > b: P = sum over value pairs with a > b."""
    penalty = RulePenalty(zero, encoder(Inequality("a", "<=", "b")), weight=2.0)
    a, b = [[0.2, 0.3, 0.5]], [[0.6, 0.4, 0.0]]
    probs = rows([[1, 0, 0]], a, b)
    broken = 0.3 * 0.6 + 0.5 * (0.6 + 0.4)
    assert torch.isclose(penalty(probs, None), torch.tensor(2.0 * broken))


def test_no_rule_or_no_weight_leaves_the_loss_alone():
    assert with_rules(zero, encoder(), 1.0) is zero
    assert with_rules(zero, encoder(Inequality("a", "<=", "b")), 0.0) is zero


def test_dates_in_an_inequality_are_penalised_on_their_time_axis():
    """Admission <= discharge on one-cell-per-day dates: a row certain to have the admission
    on the last day and the discharge on the first breaks it with probability 1."""
    columns = (
        Column("admission", "date", 0.0, 9.0, format="%Y-%m-%d", resolution=1.0),
        Column("discharge", "date", 0.0, 9.0, format="%Y-%m-%d", resolution=1.0),
    )
    schema = Schema(columns, rules=(Inequality("admission", "<=", "discharge"),))
    enc = TableEncoder(schema, n_bins=8)
    penalty = RulePenalty(zero, enc, weight=1.0)
    size = enc.spans[0].dim
    probs = torch.zeros(2, enc.output_dim)
    probs[0, size - 1] = probs[0, size] = 1.0  # last day, then first day: broken
    probs[1, 0] = probs[1, 2 * size - 1] = 1.0  # first day, then last day: kept
    assert torch.isclose(penalty(probs, None), torch.tensor(0.5))
