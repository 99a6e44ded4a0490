"""The per-parent guarantee, checked numerically: removing one parent with all its rows moves
each planned release's exact aggregates (the table path's marginal counts, noise 0) by at most
the L2 sensitivity claimed for it, and by exactly that for a parent that fills its k rows in
one cell."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dpforge.data.encoder import TableEncoder
from dpforge.data.relational import bound_children, joined_child, parent_with_counts
from dpforge.data.tables import validate_table
from dpforge.privacy.relational import Release, child_unit, planned_releases, unit_words
from dpforge.schema.relational import RelationalSchema
from dpforge.statistics.marginals import count_tables, encoded_cells
from tests.relational.support import K_DRUGS, K_VISITS, hospital, hospital_schema


def _with_heavy_parent(tables: dict[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """One more parent with 3k visits and 3k prescriptions, all alike: after bounding, k rows
    in one cell of every histogram (the worst case the bound must cover)."""
    tables = {name: frame.copy() for name, frame in tables.items()}
    heavy = pd.DataFrame({"patient_id": ["heavy"], "sex": ["F"], "age": ["50"]})
    tables["patients"] = pd.concat([tables["patients"], heavy], ignore_index=True)
    visits = pd.DataFrame({"patient_id": "heavy", "ward": "a", "cost": "5"}, index=range(9))
    tables["visits"] = pd.concat([tables["visits"], visits], ignore_index=True)
    drugs = pd.DataFrame({"patient_id": "heavy", "drug": "x"}, index=range(6))
    tables["drugs"] = pd.concat([tables["drugs"], drugs], ignore_index=True)
    return tables


def _release_table(bounded, schema: RelationalSchema, release: Release):
    """The table a release counts, and its schema."""
    if release.table == schema.parent.name:
        return parent_with_counts(bounded, schema), schema.parent_with_counts()
    child = schema.table(release.table)
    return joined_child(bounded, schema, child), schema.joined(child)


def _aggregates(bounded, schema: RelationalSchema, release: Release) -> np.ndarray:
    """The release's exact histograms, stacked (the table path's marginal counts)."""
    frame, table_schema = _release_table(bounded, schema, release)
    encoder = TableEncoder(table_schema, n_bins=6)
    cells = encoded_cells(encoder, validate_table(frame, table_schema), None)
    return np.concatenate([t.ravel() for t in count_tables(cells, list(release.marginals))])


def _without(bounded, schema: RelationalSchema, key: str) -> dict[str, pd.DataFrame]:
    """The bounded tables without one parent and every row that belongs to it."""
    parent = schema.parent
    out = {parent.name: bounded[parent.name][bounded[parent.name][parent.key] != key]}
    for child in schema.children:
        frame = bounded[child.name]
        out[child.name] = frame[frame[child.link.foreign_key] != key]
    return out


AGGREGATES = [
    {"column": "cost", "aggregate": "mean"},
    {"column": "ward", "aggregate": "count", "category": "a"},
]


@pytest.fixture(scope="module", params=["plain", "aggregates"])
def case(request):
    """The bounded tables and their schema, without and with the visits' aggregates per
    patient (the mean cost, the number of ward-a visits: columns of the parent's table)."""
    tables, schema = hospital(n=25, seed=3)
    if request.param == "aggregates":
        document = hospital_schema()
        document["tables"]["visits"]["aggregates"] = AGGREGATES
        schema = RelationalSchema.from_dict(document)
    bounded = bound_children(_with_heavy_parent(tables), schema, np.random.default_rng(0))
    return bounded, schema


def test_each_release_moves_by_at_most_its_claimed_sensitivity(case):
    bounded, schema = case
    releases = planned_releases(schema)
    assert [r.rows_per_unit for r in releases] == [1, 1, 1, K_VISITS, K_DRUGS]
    full = [_aggregates(bounded, schema, r) for r in releases]
    keys = bounded[schema.parent.name][schema.parent.key].tolist()
    moves = np.zeros((len(keys), len(releases)))
    for i, key in enumerate(keys):
        smaller = _without(bounded, schema, key)
        for j, release in enumerate(releases):
            moves[i, j] = np.linalg.norm(full[j] - _aggregates(smaller, schema, release))
    claimed = np.array([r.l2_sensitivity for r in releases])
    assert (moves <= claimed + 1e-9).all(), (moves.max(axis=0), claimed)
    # a parent is one row of the parent table: exactly one cell of each histogram moves
    np.testing.assert_allclose(moves[:, :3], np.broadcast_to(claimed[:3], (len(keys), 3)))
    # the aggregates are the parent's columns: their histograms are counted in its releases
    aggregated = {a for r in releases[:3] for m in r.marginals for a in m if "visits." in a}
    assert aggregated == {c.name for c in schema.aggregate_columns(schema.table("visits"))}
    # the heavy parent fills its k rows of each child in one cell: the bound is reached
    np.testing.assert_allclose(moves[keys.index("heavy"), 3:], claimed[3:])


def test_the_joined_child_uses_the_single_table_unit_with_k_rows():
    _, schema = hospital()
    unit = child_unit(schema.table("visits"))
    assert (unit.column, unit.rows) == ("patient_id", K_VISITS)


def test_the_ledger_names_the_unit():
    _, schema = hospital()
    entry = planned_releases(schema)[3].entry(schema)
    assert entry.startswith("child 'visits' joined with 'patients'; per parent 'patient_id'")
    assert "with all its rows; child 'visits' <= 3, child 'drugs' <= 2" in entry
    assert unit_words(schema) in entry and entry.endswith(
        f"{3 * np.sqrt(6):.4g}"
    )  # 2 + 2 x 2 histograms
