"""Children drawn for generated parents from the child model conditioned on each parent's cells
(:mod:`dpforge.data.child_draw`)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from dpforge.data.child_draw import (
    CONDITION_CELLS,
    Conditioning,
    conditioned_children,
    stream_draw,
)
from dpforge.schema.table import Column
from dpforge.statistics.bins import numeric_bins

DIED = Column("pbc.died", "categorical", categories=("no", "yes"))
AGE = Column("pbc.age", "continuous", lower=20, upper=80)
CONDITIONING = [Conditioning("died", "pbc.died", DIED), Conditioning("age", "pbc.age", AGE)]


def _model(died: tuple[str, ...] = ("no", "yes"), seed: int = 0):
    """A stand-in for a joined child model: rows with a child value and parent columns,
    uniform over ``died`` and over age."""
    rng = np.random.default_rng(seed)

    def draw(n: int) -> pd.DataFrame:
        return pd.DataFrame({
            "bili": rng.uniform(0, 30, n),
            "pbc.died": rng.choice(list(died), n),
            "pbc.age": rng.uniform(20, 80, n),
        })  # fmt: skip

    return draw


def _parents(n: int, seed: int = 1) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"died": rng.choice(["no", "yes"], n), "age": rng.uniform(20, 80, n)})


def test_each_parent_gets_its_count_of_children_in_its_own_cells():
    parents = _parents(200)
    counts = np.random.default_rng(2).integers(0, 6, len(parents))
    rows, owner = conditioned_children(
        parents, counts, CONDITIONING, _model(), np.random.default_rng(3)
    )
    assert np.bincount(owner, minlength=len(parents)).tolist() == counts.tolist()
    mine = parents.iloc[owner].reset_index(drop=True)
    assert (rows["pbc.died"] == mine["died"]).all()  # exact on the label
    bins = numeric_bins(AGE, CONDITION_CELLS)
    assert (bins.assign(rows["pbc.age"]) == bins.assign(mine["age"])).all()  # and age's cell


def test_children_follow_the_model_given_their_parent():
    """The model's conditional, not its marginal: children of young parents are the model's
    rows of young parents (here the model's bili grows with the parent's age)."""
    rng = np.random.default_rng(0)

    def draw(n: int) -> pd.DataFrame:
        age = rng.uniform(20, 80, n)
        return pd.DataFrame({"bili": age / 10, "pbc.died": "no", "pbc.age": age})

    parents = pd.DataFrame({"died": ["no", "no"], "age": [25.0, 75.0]})
    rows, owner = conditioned_children(
        parents, np.array([50, 50]), CONDITIONING, draw, np.random.default_rng(1)
    )
    young, old = rows["bili"][owner == 0], rows["bili"][owner == 1]
    assert young.max() < 3.5 < 6.5 < old.min()


def test_cells_the_model_never_reaches_are_widened_from_the_last_column():
    """The model never draws died = yes: those parents still get their children, conditioned
    on nothing; the others keep both columns."""
    parents = _parents(100)
    counts = np.full(len(parents), 3)
    rows, owner = conditioned_children(
        parents, counts, CONDITIONING, _model(died=("no",)), np.random.default_rng(4)
    )
    assert np.bincount(owner, minlength=len(parents)).tolist() == counts.tolist()
    mine = parents.iloc[owner].reset_index(drop=True)
    reached = (mine["died"] == "no").to_numpy()
    assert (rows["pbc.died"] == "no").all()
    bins = numeric_bins(AGE, CONDITION_CELLS)
    same_age = bins.assign(rows["pbc.age"]) == bins.assign(mine["age"])
    assert same_age[reached].all()


def test_the_same_generator_gives_the_same_children():
    parents = _parents(50)
    counts = np.full(len(parents), 2)
    first = conditioned_children(parents, counts, CONDITIONING, _model(), np.random.default_rng(5))
    again = conditioned_children(parents, counts, CONDITIONING, _model(), np.random.default_rng(5))
    pd.testing.assert_frame_equal(first[0], again[0])
    assert (first[1] == again[1]).all()


def test_a_stream_hands_out_its_chunks_rows_in_order():
    chunks = iter(pd.DataFrame({"x": np.arange(i, i + 4)}) for i in range(0, 40, 4))
    draw = stream_draw(chunks)
    assert draw(3)["x"].tolist() == [0, 1, 2]
    assert draw(6)["x"].tolist() == [3, 4, 5, 6, 7, 8]
    assert draw(1)["x"].tolist() == [9]
