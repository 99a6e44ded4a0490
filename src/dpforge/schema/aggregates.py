"""Aggregates of a child's rows per parent: extra columns of the parent's table (issue 45).

A child table may declare ``"aggregates"``, each one value per parent computed from that
parent's kept (at most k) rows of the child::

    "aggregates": [{"column": "bili", "aggregate": "mean"},
                   {"column": "ascites", "aggregate": "count", "category": "1"}]

- ``mean``: the mean of a numeric child column over the parent's rows (missing values left
  out); a continuous column between the child column's declared bounds (the mean of values in
  [lower, upper] stays in it), empty for a parent with no value;
- ``count``: the number of the parent's rows holding one declared category of a categorical
  child column; a whole number in 0..k.

Their cells are public: the bounds and code lists must be declared (a DP estimate would come
from the child's own fit, after the parent's). They are measured with the parent's marginals
(one row per parent: :mod:`dpforge.privacy.relational`) and used when drawing that child's
rows (:mod:`dpforge.data.child_draw`); the samples drop them unless asked.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from dpforge.errors import SchemaError
from dpforge.schema.table import Column, Schema

__all__ = ["AGGREGATES", "Aggregate", "aggregates_from_list"]

AGGREGATES = ("mean", "count")
_KEYS = {"column", "aggregate", "category"}


@dataclass(frozen=True)
class Aggregate:
    """One aggregate of a child's rows per parent: ``how`` ("mean" or "count") of the child's
    ``column`` (for "count", of its rows holding ``category``)."""

    column: str
    how: str
    category: str | None = None

    def name(self, child: str) -> str:
        """The parent column's name: ``<child>.mean.<column>`` or
        ``<child>.count.<column>=<category>``."""
        if self.how == "mean":
            return f"{child}.mean.{self.column}"
        return f"{child}.count.{self.column}={self.category}"

    def parent_column(self, child: str, schema: Schema, k: int | None) -> Column:
        """Its column of the parent's table, with public bounds (checked against ``schema``,
        the child's table schema; ``k`` the child's bound on rows per parent)."""
        where = f"table '{child}': aggregate {self.how} of '{self.column}'"
        if self.column not in schema.names:
            raise SchemaError(
                f"{where}: '{self.column}' is not a column of '{child}' (its columns: "
                f"{schema.names}); name one of them"
            )
        source = schema.column(self.column)
        if self.how == "mean":
            return _mean_column(self.name(child), source, where)
        return _count_column(self.name(child), source, self.category, k, where)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"column": self.column, "aggregate": self.how}
        if self.category is not None:
            out["category"] = self.category
        return out


def _mean_column(name: str, source: Column, where: str) -> Column:
    if not source.is_numeric or source.is_time:
        raise SchemaError(
            f"{where}: a mean needs a continuous or integer column, '{source.name}' is "
            f"{source.type}; use 'count' with a category, or drop the aggregate"
        )
    if source.lower is None or source.upper is None:
        raise SchemaError(
            f"{where}: declare the column's public lower and upper bounds (the mean's cells "
            "are public)"
        )
    return Column(name, "continuous", lower=source.lower, upper=source.upper, nullable=True)


def _count_column(
    name: str, source: Column, category: str | None, k: int | None, where: str
) -> Column:
    if source.type != "categorical" or source.categories is None:
        raise SchemaError(
            f"{where}: a count needs a categorical column with declared categories, "
            f"'{source.name}' is {source.type}"
            + ("" if source.type != "categorical" else " without categories: declare them")
        )
    if category not in source.categories:
        raise SchemaError(
            f"{where}: category {json.dumps(category)} is not one of the column's "
            f"categories {list(source.categories)}; name one of them"
        )
    return Column(name, "integer", lower=0, upper=k)


def aggregates_from_list(table: str, entries: Any) -> tuple[Aggregate, ...]:
    """The ``"aggregates"`` list of a child table's entry (None: none), checked for shape."""
    if entries is None:
        return ()
    if not isinstance(entries, list):
        raise SchemaError(f"$.tables.{table}.aggregates must be a list of objects")
    return tuple(_one(table, i, e) for i, e in enumerate(entries))


def _one(table: str, i: int, entry: Any) -> Aggregate:
    where = f"$.tables.{table}.aggregates[{i}]"
    if not isinstance(entry, dict):
        raise SchemaError(f"{where} must be an object with 'column' and 'aggregate'")
    extra = sorted(set(entry) - _KEYS)
    if extra:
        raise SchemaError(f"{where}.{extra[0]} is not a key; allowed: {sorted(_KEYS)}")
    column, how = entry.get("column"), entry.get("aggregate")
    if not isinstance(column, str):
        raise SchemaError(f"{where}.column must name a column of '{table}'")
    if how not in AGGREGATES:
        raise SchemaError(f"{where}.aggregate must be one of {list(AGGREGATES)}, got {how!r}")
    category = entry.get("category")
    if how == "count" and not isinstance(category, str):
        raise SchemaError(f"{where}: a count needs 'category', one of the column's categories")
    if how == "mean" and category is not None:
        raise SchemaError(f"{where}: a mean takes no 'category'; leave it out")
    return Aggregate(column, how, category)
