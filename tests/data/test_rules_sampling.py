"""Rows that satisfy the schema's rules (issue 21.7): the dependency map decoded exactly, the
conditions' meaning (an empty cell meets none), and, on random rows and random rules, the
redrawing and the deterministic repair leave no row breaking a rule and keep every row that
abided."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpforge.data.encoder import TableEncoder
from dpforge.data.rules import abiding_rows, dependent_values, repair, violations
from dpforge.errors import DataError
from dpforge.schema.rule_domain import matches
from dpforge.schema.rules import Condition, Depends, Forbid, Inequality
from dpforge.schema.table import Column, Schema

COLOURS = ("red", "green", "blue")
COLUMNS = (
    Column("colour", "categorical", categories=COLOURS),
    Column("code", "integer", lower=1, upper=3),
    Column("a", "integer", lower=0, upper=20),
    Column("b", "integer", lower=0, upper=20),
    Column("x", "continuous", lower=0.0, upper=1.0, nullable=True),
    Column("y", "categorical", categories=("no", "yes")),
)
CODE = Depends("colour", "code", (("red", 1), ("green", 2), ("blue", 3)))


def random_rows(rng: np.random.Generator, n: int, labels: np.ndarray | None = None) -> pd.DataFrame:
    colour = rng.choice(COLOURS, size=n)
    x = rng.random(n)
    x[rng.random(n) < 0.2] = np.nan
    rows = pd.DataFrame(
        {
            "colour": colour,
            "code": dependent_values(Schema(COLUMNS, rules=(CODE,)), {"colour": colour})["code"],
            "a": rng.integers(0, 21, n),
            "b": rng.integers(0, 21, n),
            "x": x,
            "y": np.asarray(("no", "yes"), dtype=object)[
                rng.integers(0, 2, n) if labels is None else labels
            ],
        }
    )
    return rows


def test_conditions_match_as_declared_and_an_empty_cell_matches_none():
    numbers = pd.Series([0.1, np.nan, 0.7])
    assert matches(Condition("x", "<", 0.5), numbers).tolist() == [True, False, False]
    assert matches(Condition("x", "!=", 0.5), numbers).tolist() == [True, False, True]
    assert matches(Condition("x", "not in", (0.7,)), numbers).tolist() == [True, False, False]
    texts = pd.Series(["red", None, "blue"], dtype=object)
    assert matches(Condition("c", "in", ("red", "blue")), texts).tolist() == [True, False, True]
    assert matches(Condition("c", "!=", "red"), texts).tolist() == [False, False, True]


def test_the_dependent_is_decoded_from_the_map_exactly():
    """Every category gets its mapped value; an empty determinant leaves an empty dependent."""
    schema = Schema(
        (
            Column("colour", "categorical", categories=COLOURS, nullable=True),
            Column("code", "integer", lower=1, upper=3, nullable=True),
            Column("y", "categorical", categories=("no", "yes")),
        ),
        label="y",
        rules=(CODE,),
    )
    encoder = TableEncoder(schema, n_bins=8)
    features = np.zeros((4, encoder.output_dim))
    features[np.arange(4), [0, 1, 2, 3]] = 1.0  # red, green, blue, missing
    rows = encoder.inverse_transform(features, np.array([0, 1, 0, 1]))
    assert rows["code"].tolist()[:3] == [1, 2, 3]
    assert pd.isna(rows["code"].iloc[3]) and pd.isna(rows["colour"].iloc[3])
    assert not violations(rows, schema).any()


rule_sets = st.lists(
    st.one_of(
        st.builds(
            lambda c, v, t: Forbid((Condition("colour", "==", c), Condition("a", "<", v),
                                    Condition("y", "==", t))),
            st.sampled_from(COLOURS), st.integers(1, 15), st.sampled_from(("no", "yes")),
        ),
        st.builds(
            lambda v: Forbid((Condition("code", ">=", v), Condition("x", ">", 0.5))),
            st.integers(2, 3),
        ),
        st.just(Inequality("a", "<=", "b")),
        st.just(Inequality("a", "<", "b")),
    ),
    min_size=1, max_size=4,
)  # fmt: skip


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rules=rule_sets, seed=st.integers(0, 2**32 - 1), retries=st.sampled_from([0, 1, 20]))
def test_redrawing_and_repair_leave_no_row_breaking_a_rule(rules, seed, retries):
    """Random rows, random rules: afterwards no row breaks a rule, each row keeps its label,
    and every row that abided from the start is unchanged."""
    rules = list(dict.fromkeys(rules))
    if Inequality("a", "<=", "b") in rules and Inequality("a", "<", "b") in rules:
        rules.remove(Inequality("a", "<=", "b"))
    schema = Schema(COLUMNS, label="y", rules=(CODE, *rules))
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 2, 300)
    rows = random_rows(rng, 300, labels)
    before = rows.copy()
    abided = ~violations(rows, schema)

    def draw(index: np.ndarray) -> pd.DataFrame:
        return random_rows(rng, len(index), labels[index])

    out = abiding_rows(rows, labels, schema, draw, np.random.default_rng(seed), retries)
    assert not violations(out, schema).any()
    assert (out["y"].to_numpy() == before["y"].to_numpy()).all()
    pd.testing.assert_frame_equal(out[abided], before[abided])


def test_the_inequality_repair_swaps_values_within_bounds():
    """Without redrawing, a <= b is repaired by swapping: each row keeps its pair of values."""
    schema = Schema(COLUMNS, label="y", rules=(Inequality("a", "<=", "b"),))
    rows = random_rows(np.random.default_rng(0), 500)
    fixed = repair(rows.copy(), None, schema, np.random.default_rng(0))
    assert (fixed["a"] <= fixed["b"]).all()
    pairs = np.sort(rows[["a", "b"]].to_numpy(), axis=1)
    assert (fixed[["a", "b"]].to_numpy() == pairs).all()


def test_a_class_with_no_abiding_row_is_refused():
    """A rule every row of a class breaks cannot be repaired by copying: a clear error."""
    rule = Forbid((Condition("y", "==", "yes"), Condition("colour", "in", ("red", "green"))))
    rule_blue = Forbid((Condition("y", "==", "yes"), Condition("colour", "==", "blue")))
    schema = Schema(COLUMNS, label="y", rules=(rule, rule_blue))
    rows = random_rows(np.random.default_rng(1), 50, np.ones(50, dtype=np.int64))
    with pytest.raises(DataError, match="no sampled row of class 'yes' satisfies the schema"):
        repair(rows, np.ones(50, dtype=np.int64), schema, np.random.default_rng(0))


def test_dates_in_an_inequality_are_compared_and_repaired_on_their_axis():
    """Admission <= discharge on date texts: redrawing and the repair leave none reversed,
    and the repaired rows keep dates in the column's format."""
    columns = (
        Column("admission", "date", 0.0, 365.0, format="%d/%m/%Y", resolution=1.0),
        Column("discharge", "date", 0.0, 365.0, format="%d/%m/%Y", resolution=1.0),
    )
    schema = Schema(columns, rules=(Inequality("admission", "<=", "discharge"),))
    rng = np.random.default_rng(0)

    def draw(n: int) -> pd.DataFrame:
        days = pd.to_datetime(rng.integers(0, 366, (n, 2)).ravel(), unit="D")
        texts = np.asarray(days.strftime("%d/%m/%Y"), dtype=object).reshape(n, 2)
        return pd.DataFrame(texts, columns=["admission", "discharge"])

    rows = draw(400)
    assert violations(rows, schema).mean() > 0.3
    for retries in (0, 3):
        out = abiding_rows(rows.copy(), None, schema, lambda i: draw(len(i)), rng, retries)
        assert not violations(out, schema).any()
        first = pd.to_datetime(out["admission"], format="%d/%m/%Y")
        assert (first <= pd.to_datetime(out["discharge"], format="%d/%m/%Y")).all()
