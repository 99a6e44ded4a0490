"""The public side of related tables: one parent table, its child tables, their keys and bounds.

A relational schema declares, by table name, each table's schema (today's table schema JSON,
:class:`dpforge.schema.table.Schema`), each table's key column, each child's foreign key to its
parent and, per child table, ``max_rows_per_parent``: the PUBLIC bound k on rows kept per
parent. The privacy unit is the parent with every row that belongs to it, in every table
(:mod:`dpforge.privacy.relational`); rows beyond k per parent are dropped before any release
(:mod:`dpforge.data.relational`).

The JSON form::

    {"version": 1, "type": "relational",
     "tables": {
       "patients": {"key": "id", "schema": {<table schema>}},
       "visits": {"key": null, "parent": "patients", "foreign_key": "id",
                  "max_rows_per_parent": 8, "schema": {<table schema>}}}}

Keys and foreign keys are identifiers: their columns must have the type "drop" or "surrogate"
in their table's schema, so they are never modelled or released.

Today: one parent with any number of child tables, one level deep. Deeper nesting (a visit's
lab results) would need: a link from a grandchild to a child whose key is itself bounded (k2
rows per child, so k1 * k2 rows per parent, which the sensitivities multiply), the bounding
applied top-down (a child's rows first, then each kept child's rows), the grandchild joined
with its child's and its parent's columns, and generation recursing down the tree.
"""

from __future__ import annotations

import json
import numbers
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from dpforge.errors import SchemaError
from dpforge.schema.aggregates import Aggregate, aggregates_from_list
from dpforge.schema.formats import SCHEMA_VERSION
from dpforge.schema.table import REVIEW_KEY, Column, Schema
from dpforge.schema.validation import read_json_text

__all__ = ["ChildLink", "RelationalSchema", "RelationalTable", "K_NOTE"]

RELATIONAL = "relational"
K_NOTE = (
    "max_rows_per_parent of child table '{child}' is null: set it to a PUBLIC bound on rows per "
    "'{parent}' (a rule of the domain, not a count read from the data); rows beyond it are "
    "dropped before any release and every child statistic's sensitivity is scaled by it"
)
_TABLE_KEYS = {"key", "schema", "parent", "foreign_key", "max_rows_per_parent", "aggregates"}


@dataclass(frozen=True)
class ChildLink:
    """A child table's link: its ``foreign_key`` column holds its ``parent``'s key, and at
    most ``max_rows`` of its rows are kept per parent (None only in a draft)."""

    parent: str
    foreign_key: str
    max_rows: int | None


@dataclass(frozen=True)
class RelationalTable:
    """One table: its name, its table schema, its key column (optional for a child) and, for
    a child, its link to the parent and its aggregates per parent
    (:mod:`dpforge.schema.aggregates`)."""

    name: str
    schema: Schema
    key: str | None = None
    link: ChildLink | None = None
    aggregates: tuple[Aggregate, ...] = ()

    @property
    def is_child(self) -> bool:
        return self.link is not None

    @property
    def max_rows(self) -> int:
        """The child's public bound k (a draft's null is refused here)."""
        if self.link is None or self.link.max_rows is None:
            raise SchemaError(K_NOTE.format(child=self.name, parent=self._parent_name()))
        return self.link.max_rows

    def _parent_name(self) -> str:
        return "" if self.link is None else self.link.parent


@dataclass(frozen=True)
class RelationalSchema:
    """A parent table and its child tables (one level deep), checked on construction."""

    tables: tuple[RelationalTable, ...]
    notes: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        self.validate()

    # -- queries ---------------------------------------------------------------------------
    @property
    def names(self) -> list[str]:
        return [t.name for t in self.tables]

    def table(self, name: str) -> RelationalTable:
        for t in self.tables:
            if t.name == name:
                return t
        raise SchemaError(f"the relational schema has no table '{name}'; its tables: {self.names}")

    @property
    def parent(self) -> RelationalTable:
        return next(t for t in self.tables if not t.is_child)

    @property
    def children(self) -> tuple[RelationalTable, ...]:
        return tuple(t for t in self.tables if t.is_child)

    # -- the tables the releases count -----------------------------------------------------
    def count_column(self, child: RelationalTable) -> Column:
        """The parent's column holding its number of rows in ``child``: a whole number in
        0..k, public bounds since the bounding keeps at most k."""
        return Column(f"n_{child.name}", "integer", lower=0, upper=child.max_rows)

    def aggregate_columns(self, child: RelationalTable) -> tuple[Column, ...]:
        """The parent's columns holding ``child``'s aggregates per parent, public cells."""
        k = None if child.link is None else child.link.max_rows
        return tuple(a.parent_column(child.name, child.schema, k) for a in child.aggregates)

    def parent_with_counts(self) -> Schema:
        """The parent table's schema with one count column per child (:meth:`count_column`)
        and each child's aggregates (:meth:`aggregate_columns`)."""
        parent = self.parent.schema
        added = tuple(self.count_column(c) for c in self.children)
        added += tuple(a for c in self.children for a in self.aggregate_columns(c))
        clash = [c.name for c in added if c.name in parent.names]
        if clash:
            raise SchemaError(
                f"the parent table '{self.parent.name}' already has a column '{clash[0]}', the "
                "name of a child count or aggregate column: rename that column"
            )
        return replace(parent, columns=parent.columns + added, rules=parent.rules)

    def joined(self, child: RelationalTable, aggregates: bool = True) -> Schema:
        """``child``'s schema with its parent's columns and, where ``aggregates``, the
        parent's aggregates of this child (the child model's table; without them, the join
        a user's tables give); the parent's key left out, a name the child also uses becomes
        ``<parent>.<name>``; its foreign key stays an identifier, the privacy unit of the
        joined table. No label: the child's rows are the records."""
        own = child.schema
        parents = self.parent.schema.columns
        parents += self.aggregate_columns(child) if aggregates else ()
        added = tuple(
            replace(c, name=joined_name(child, own.names, c.name))
            for c in parents
            if c.name != self.parent.key
        )
        return Schema(own.columns + added, rules=own.rules)

    # -- validation ------------------------------------------------------------------------
    def validate(self) -> None:
        if not self.tables:
            raise SchemaError("the relational schema lists no tables")
        names = self.names
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise SchemaError(f"the relational schema names these tables twice: {duplicates}")
        roots = [t.name for t in self.tables if not t.is_child]
        if len(roots) != 1:
            raise SchemaError(
                f"a relational schema has exactly one parent table (one without 'parent'), "
                f"found {len(roots)}: {roots}; give every other table a 'parent'"
            )
        if not self.children:
            raise SchemaError(
                f"the relational schema has no child table: give a table 'parent': "
                f"'{roots[0]}' and its 'foreign_key', or use a table schema"
            )
        parent = self.parent
        if parent.key is None:
            raise SchemaError(f"the parent table '{parent.name}' needs a 'key' column")
        _check_identifier(parent, parent.key, "key")
        for child in self.children:
            self._validate_child(child, parent)

    def _validate_child(self, child: RelationalTable, parent: RelationalTable) -> None:
        link = child.link
        if link.parent not in self.names:
            raise SchemaError(
                f"table '{child.name}': its parent '{link.parent}' is not a table of the schema "
                f"(its tables: {self.names}); name one of them"
            )
        if link.parent != parent.name:
            raise SchemaError(
                f"table '{child.name}': its parent '{link.parent}' is itself a child table; "
                f"only one level is supported: link it to '{parent.name}'"
            )
        _check_identifier(child, link.foreign_key, "foreign_key")
        if child.key is not None:
            _check_identifier(child, child.key, "key")
        if link.max_rows is None and not self.notes:
            raise SchemaError(K_NOTE.format(child=child.name, parent=parent.name))
        check_max_rows(child.name, link.max_rows)
        self.aggregate_columns(child)  # each aggregate names a column with public cells

    # -- JSON ------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        tables: dict[str, Any] = {}
        for t in self.tables:
            entry: dict[str, Any] = {"key": t.key}
            if t.link is not None:
                entry["parent"] = t.link.parent
                entry["foreign_key"] = t.link.foreign_key
                entry["max_rows_per_parent"] = t.link.max_rows
            if t.aggregates:
                entry["aggregates"] = [a.to_dict() for a in t.aggregates]
            entry["schema"] = t.schema.to_dict()
            tables[t.name] = entry
        out: dict[str, Any] = {"version": SCHEMA_VERSION, "type": RELATIONAL, "tables": tables}
        if self.notes:
            out[REVIEW_KEY] = list(self.notes)
        return out

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)

    @classmethod
    def from_dict(cls, d: Any, *, allow_review: bool = False) -> RelationalSchema:
        """A relational schema from its JSON object; a draft (a 'review' entry) is refused
        unless ``allow_review``."""
        if not isinstance(d, dict) or d.get("type") != RELATIONAL:
            raise SchemaError('a relational schema is a JSON object with "type": "relational"')
        extra = sorted(set(d) - {"version", "type", "tables", REVIEW_KEY})
        if extra:
            raise SchemaError(f"$.{extra[0]} is not a key of a relational schema")
        if d.get("version", SCHEMA_VERSION) != SCHEMA_VERSION:
            raise SchemaError(
                f"$.version is {json.dumps(d['version'])}; this dpforge reads relational "
                f"schemas of version {SCHEMA_VERSION}: draft it again with dpforge schema"
            )
        notes = tuple(d.get(REVIEW_KEY) or ())
        if notes and not allow_review:
            raise SchemaError(
                "this relational schema is a draft read from the private files; check its "
                f"keys, links and every table, set each max_rows_per_parent to a public bound, "
                f"then delete its '{REVIEW_KEY}' entries"
            )
        tables = d.get("tables")
        if not isinstance(tables, dict) or not tables:
            raise SchemaError("$.tables must be an object: table name -> its entry")
        parsed = tuple(_table_from_dict(n, e, allow_review) for n, e in tables.items())
        return cls(parsed, notes)

    @classmethod
    def load(cls, path: str | Path, *, allow_review: bool = False) -> RelationalSchema:
        document = read_json_text(Path(path), "schema file", SchemaError)
        return cls.from_dict(document, allow_review=allow_review)


def joined_name(child: RelationalTable, child_names: list[str], name: str) -> str:
    """A parent column's name in the child joined with it: ``<parent>.<name>`` where the
    child has a column of that name."""
    return f"{child.link.parent}.{name}" if name in child_names else name


def check_max_rows(table: str, k: Any) -> None:
    """k (max_rows_per_parent) is a positive whole number (None only in a draft)."""
    if k is None:
        return
    if isinstance(k, bool) or not isinstance(k, numbers.Integral) or k < 1:
        raise SchemaError(
            f"table '{table}': max_rows_per_parent must be a whole number >= 1, got "
            f"{json.dumps(k) if isinstance(k, (int, float, str)) else type(k).__name__}; "
            "set it to a public bound on rows per parent"
        )


def _check_identifier(table: RelationalTable, name: str, what: str) -> None:
    """A key or foreign key is an identifier column (drop/surrogate) of its table's schema."""
    if not isinstance(name, str) or name not in table.schema.names:
        raise SchemaError(
            f"table '{table.name}': its {what} '{name}' is not a column of its schema "
            f"(its columns: {table.schema.names}); name one of them"
        )
    column = table.schema.column(name)
    if not column.is_identifier:
        raise SchemaError(
            f"table '{table.name}': its {what} '{name}' is declared {column.type}; give it "
            '"type": "drop" (or "surrogate") so that no real key is modelled or released'
        )


def _table_from_dict(name: str, entry: Any, allow_review: bool) -> RelationalTable:
    if not isinstance(entry, dict) or "schema" not in entry:
        raise SchemaError(f"$.tables.{name} must be an object with a 'schema' (a table schema)")
    extra = sorted(set(entry) - _TABLE_KEYS)
    if extra:
        raise SchemaError(
            f"$.tables.{name}.{extra[0]} is not a key; allowed: {sorted(_TABLE_KEYS)}"
        )
    schema = Schema.from_dict(entry["schema"], allow_review=allow_review)
    link, aggregates = None, aggregates_from_list(name, entry.get("aggregates"))
    if aggregates and entry.get("parent") is None:
        raise SchemaError(
            f"table '{name}': only a child table has aggregates (of its rows per parent); "
            "move them to the child's entry"
        )
    if entry.get("parent") is not None:
        if not isinstance(entry.get("foreign_key"), str):
            raise SchemaError(
                f"table '{name}': a child table needs 'foreign_key', the column holding its "
                f"parent's key"
            )
        k = entry.get("max_rows_per_parent")
        check_max_rows(name, k)
        link = ChildLink(str(entry["parent"]), entry["foreign_key"], k)
    return RelationalTable(name, schema, entry.get("key"), link, aggregates)
