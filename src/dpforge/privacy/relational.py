"""The guarantee for related tables: the unit is one parent with every row that belongs to it.

Neighbouring data sets differ by one parent: its row of the parent table and all its rows in
every child table (add/remove). Before any release each child table keeps at most k rows per
parent (k its public ``max_rows_per_parent``, :func:`dpforge.data.relational.bound_children`),
so one parent holds one parent row and at most k rows of each child. The releases, and the L2
sensitivity of each (every release is a set of ``m`` histograms in which one row adds one to
one cell of each):

(a) the parent table's marginals: one parent is one row, one cell of each histogram:
    ``sqrt(m)``, a single-table release (per record);
(b) the number of rows per parent in each child (0..k after bounding) is a column of the
    parent table, released with its joint histograms with the parent's columns: still one
    row per parent, ``sqrt(m)``; another parent's count does not move (its rows are its own).
    So are the child's aggregates per parent (:mod:`dpforge.schema.aggregates`: a mean of a
    column, a count of a category over the parent's kept rows): each is a function of one
    parent's own rows, a column of that parent's one row, so removing the parent with all its
    rows removes one row of the parent table and changes no other row: ``sqrt(m)`` with m the
    histograms counted, the aggregates' included, and no mechanism of their own;
(c) each child table joined with its parent's columns (its aggregates of that child
    included, repeated on each of its rows): one parent is at most k rows, which
    move each histogram by non-negative whole numbers summing to at most k, at most k in L2
    (all in one cell): ``k sqrt(m)``. This is the single-table privacy unit with the foreign
    key as the unit column and k rows per unit (:mod:`dpforge.privacy.person`), which scales
    the same noise multiplier's std by k and records its zCDP (``release_noise.table_event``).

Each release is its own dp-accounting event; the run's ledger composes them, and each entry's
name states the unit (:func:`unit_words`). The bounding is random (which k rows a parent
keeps), but each parent's choice is independent of the others' in distribution, so the
bounded data sets of two neighbours can be coupled to differ only in that parent's rows: the
numerical check (tests/relational/test_sensitivity.py) removes one parent from the bounded
tables and measures every release's exact aggregates moving by at most the bound above.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from dpforge.privacy.person import PrivacyUnit
from dpforge.schema.relational import RelationalSchema, RelationalTable, joined_name

__all__ = ["Release", "child_unit", "planned_releases", "unit_words"]


@dataclass(frozen=True)
class Release:
    """One planned release: the histograms (``marginals``, by column names) of ``table`` (the
    parent with its count columns, or a child joined with its parent), in which one parent
    holds at most ``rows_per_unit`` rows."""

    name: str
    table: str
    marginals: tuple[tuple[str, ...], ...]
    rows_per_unit: int

    @property
    def l2_sensitivity(self) -> float:
        """One parent's largest move of the stacked histograms, in L2."""
        return self.rows_per_unit * math.sqrt(len(self.marginals))

    def entry(self, schema: RelationalSchema) -> str:
        """Its ledger entry's name: what, the unit, and the sensitivity it is derived for."""
        return f"{self.name}; {unit_words(schema)}: L2 sensitivity {self.l2_sensitivity:.4g}"


def unit_words(schema: RelationalSchema) -> str:
    """The unit in words, as the ledger and model.json state it."""
    parent = schema.parent
    bounds = ", ".join(f"child '{c.name}' <= {c.max_rows}" for c in schema.children)
    return f"per parent '{parent.key}' of '{parent.name}' with all its rows; {bounds}"


def child_unit(child: RelationalTable) -> PrivacyUnit:
    """The single-table privacy unit of ``child`` joined with its parent: its foreign key,
    k rows per unit (release (c))."""
    unit = PrivacyUnit(child.link.foreign_key, child.max_rows)
    unit.check()
    return unit


def planned_releases(schema: RelationalSchema) -> list[Release]:
    """The releases (a), (b), (c) of the module docstring, with the default selection: every
    modelled column's 1-way histogram and, for (b) and (c), each count, aggregate or child
    column jointly with each parent column."""
    parent = schema.parent
    own = [c.name for c in parent.schema.generated_columns]
    releases = [Release(f"parent '{parent.name}' marginals", parent.name, _one_way(own), 1)]
    for child in schema.children:
        count = schema.count_column(child).name
        aggregates = [c.name for c in schema.aggregate_columns(child)]
        pairs = tuple((a, *p) for a in (count, *aggregates) for p in ((), *((p,) for p in own)))
        releases.append(Release(f"rows per parent in '{child.name}'", parent.name, pairs, 1))
    for child in schema.children:
        aggregates = [c.name for c in schema.aggregate_columns(child)]
        parent_names = [joined_name(child, child.schema.names, p) for p in own + aggregates]
        child_names = [c.name for c in child.schema.generated_columns]
        pairs = (*_one_way(child_names), *((c, p) for c in child_names for p in parent_names))
        name = f"child '{child.name}' joined with '{parent.name}'"
        releases.append(Release(name, child.name, pairs, child.max_rows))
    return releases


def _one_way(names: list[str]) -> tuple[tuple[str, ...], ...]:
    return tuple((n,) for n in names)
