"""Related tables in: a dict of DataFrames (Python) or CSV files matched to tables by file stem
(the command line); their keys checked, each child bounded to k rows per parent, the join.

Checks (:func:`check_tables`) name the table, the row (1-based, the header not counted), the
value and the fix; rows and values come from the private files, so they are wrapped in
:func:`dpforge.errors.private` (redacted in shared logs). Bounding (:func:`bound_children`)
keeps at most k rows per parent in each child table, chosen uniformly at random with the run's
generator (:func:`dpforge.privacy.person.kept_rows`, as the single-table privacy unit does),
before any release. :func:`draft_relational_schema` drafts the schema from the files: like a
table draft, it is read from the private data and carries review notes until a person checks it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

from dpforge.data.tables import (
    KEY_NAME,
    canonical_text,
    draft_schema,
    read_csv,
    validate_table,
)
from dpforge.errors import DataError, private
from dpforge.privacy.person import kept_rows, unit_keys
from dpforge.schema.relational import (
    K_NOTE,
    ChildLink,
    RelationalSchema,
    RelationalTable,
    joined_name,
)
from dpforge.schema.table import Column, Schema

__all__ = [
    "bound_children",
    "check_given",
    "check_tables",
    "child_counts",
    "draft_relational_schema",
    "joined_child",
    "parent_with_counts",
    "read_tables",
]

LINK_NOTE = (
    "the keys and links were guessed from column names and values: check that '{key}' "
    "identifies a '{parent}' and that each child's foreign key holds it"
)


def read_tables(paths: Sequence[str | Path]) -> dict[str, pd.DataFrame]:
    """CSV files as tables named by their file stem (patients.csv -> 'patients')."""
    tables: dict[str, pd.DataFrame] = {}
    for path in map(Path, paths):
        if path.stem in tables:
            raise DataError(
                f"two files are named '{path.stem}' (table names come from file stems): "
                "rename one of them"
            )
        tables[path.stem] = read_csv(path)
    return tables


# -- checks -------------------------------------------------------------------------------
def check_tables(
    tables: Mapping[str, pd.DataFrame], schema: RelationalSchema, out_of_bounds: str = "error"
) -> None:
    """Every declared table is given (and no other), every parent key is present and unique,
    every child row names a parent that exists. ``out_of_bounds`` as in
    :func:`~dpforge.data.tables.validate_table` ("clip": the table models clip such values)."""
    check_given(tables, schema)
    for table in schema.tables:
        _check_values(tables[table.name], table, out_of_bounds)
    parent_keys = _parent_keys(tables, schema.parent)
    for child in schema.children:
        _check_foreign_keys(tables[child.name], child, parent_keys)


def check_given(tables: Mapping[str, object], schema: RelationalSchema) -> None:
    """Every table of the schema is given, and no other (on any engine)."""
    missing = [n for n in schema.names if n not in tables]
    if missing:
        raise DataError(
            f"table '{missing[0]}' of the schema is not given (given: {sorted(tables)}); pass "
            f"it (the CSV file {missing[0]}.csv, or the DataFrame under that name)"
        )
    extra = sorted(set(tables) - set(schema.names))
    if extra:
        raise DataError(
            f"table '{extra[0]}' is not in the schema (its tables: {schema.names}); declare it "
            "or leave it out"
        )


def _check_values(frame: object, table: RelationalTable, out_of_bounds: str) -> None:
    """The table's values against its own schema, so that errors name its own rows."""
    if not isinstance(frame, pd.DataFrame):
        raise DataError(
            f"table '{table.name}' must be a pandas DataFrame, got {type(frame).__name__}"
        )
    try:
        validate_table(frame, table.schema, out_of_bounds=out_of_bounds)
    except DataError as exc:
        raise DataError(f"table '{table.name}': {exc}") from None


def key_texts(values: pd.Series, name: str) -> np.ndarray:
    """Each row's key as text, 1.0 and '1' alike (a foreign key read as floats still names
    parent 1); a missing key is refused (:func:`dpforge.privacy.person.unit_keys`)."""
    texts = values.map(lambda v: v if pd.isna(v) else canonical_text(v))
    return unit_keys(texts, name)


def _keys(frame: pd.DataFrame, table: str, column: str) -> np.ndarray:
    if column not in frame.columns:
        raise DataError(
            f"table '{table}' has no column '{column}' (its columns: {list(frame.columns)}); "
            "fix the schema's key or the file's header"
        )
    return key_texts(frame[column], f"{table}.{column}")


def _parent_keys(tables: Mapping[str, pd.DataFrame], parent: RelationalTable) -> set[str]:
    keys = _keys(tables[parent.name], parent.name, parent.key)
    seen = pd.Series(keys).duplicated()
    if seen.any():
        row = int(np.flatnonzero(seen.to_numpy())[0])
        raise DataError(
            f"table '{parent.name}', row {private(row + 1)}: key '{parent.key}' value "
            f"{private(keys[row], 'r')} appears twice; each parent needs a unique key: merge "
            "or renumber the duplicate rows"
        )
    return set(keys)


def _check_foreign_keys(frame: pd.DataFrame, child: RelationalTable, parents: set[str]) -> None:
    keys = _keys(frame, child.name, child.link.foreign_key)
    orphans = np.flatnonzero(~pd.Series(keys).isin(parents).to_numpy())
    if orphans.size:
        row = int(orphans[0])
        raise DataError(
            f"table '{child.name}', row {private(row + 1)}: foreign key "
            f"'{child.link.foreign_key}' value {private(keys[row], 'r')} names no row of "
            f"'{child.link.parent}'; add that parent, or remove the row"
        )


# -- bounding and joining -----------------------------------------------------------------
def bound_children(
    tables: Mapping[str, pd.DataFrame],
    schema: RelationalSchema,
    rng: np.random.Generator,
    out_of_bounds: str = "error",
) -> dict[str, pd.DataFrame]:
    """The checked tables (:func:`check_tables`) with each child cut to at most k rows per
    parent (k its public ``max_rows_per_parent``), the kept rows chosen uniformly at random
    with ``rng``."""
    check_tables(tables, schema, out_of_bounds)
    bounded = {schema.parent.name: tables[schema.parent.name]}
    for child in schema.children:
        frame = tables[child.name]
        keys = key_texts(frame[child.link.foreign_key], child.link.foreign_key)
        kept = kept_rows(keys, child.max_rows, rng.random(len(keys)))  # uniform priorities
        bounded[child.name] = frame.iloc[kept].reset_index(drop=True)
    return bounded


def child_counts(
    parent: pd.DataFrame, child: pd.DataFrame, link: ChildLink, parent_key: str
) -> np.ndarray:
    """Each parent's number of rows in a (bounded) child table, in the parent's row order."""
    keys = key_texts(parent[parent_key], parent_key)
    counts = pd.Series(key_texts(child[link.foreign_key], link.foreign_key)).value_counts()
    return counts.reindex(keys, fill_value=0).to_numpy(dtype=np.int64)


def joined_child(
    bounded: Mapping[str, pd.DataFrame],
    schema: RelationalSchema,
    child: RelationalTable,
    aggregates: bool = True,
) -> pd.DataFrame:
    """Each row of ``child`` with its parent's columns (the parent's key left out; the
    child's foreign key kept: it is the privacy unit of the joined table), named as
    :meth:`RelationalSchema.joined` names them."""
    parent, key = bounded[schema.parent.name].reset_index(drop=True), schema.parent.key
    rows = bounded[child.name].reset_index(drop=True)
    others = [c for c in parent.columns if c != key]
    right = parent[others]
    if aggregates:
        right = pd.concat([right, child_aggregates(parent, rows, child, key)], axis=1)
    right.columns = [joined_name(child, child.schema.names, c) for c in right.columns]
    right.index = key_texts(parent[key], key)
    matched = right.loc[key_texts(rows[child.link.foreign_key], child.link.foreign_key)]
    return pd.concat([rows, matched.reset_index(drop=True)], axis=1)


def parent_with_counts(
    bounded: Mapping[str, pd.DataFrame], schema: RelationalSchema
) -> pd.DataFrame:
    """The bounded parent table with each child's count column (0..k rows per parent), then
    each child's aggregates (:func:`child_aggregates`)."""
    parent = schema.parent
    table = bounded[parent.name].reset_index(drop=True).copy()
    for child in schema.children:
        counts = child_counts(table, bounded[child.name], child.link, parent.key)
        table[schema.count_column(child).name] = counts
    aggregates = [child_aggregates(table, bounded[c.name], c, parent.key) for c in schema.children]
    return pd.concat([table, *aggregates], axis=1)


def child_aggregates(
    parent: pd.DataFrame, child: pd.DataFrame, table: RelationalTable, parent_key: str
) -> pd.DataFrame:
    """Each parent's aggregates of its rows in the (bounded) ``child`` table
    (:mod:`dpforge.schema.aggregates`), one column each, in the parent's row order: a mean
    over the parent's values clipped to the column's public bounds (empty where it has none),
    a count of its rows in a category.
    A function of one parent's own rows: removing a parent with its rows removes its row
    here and moves no other parent's values."""
    owners = pd.Series(key_texts(child[table.link.foreign_key], table.link.foreign_key))
    keys = key_texts(parent[parent_key], parent_key)
    out = {}
    for aggregate in table.aggregates:
        values = child[aggregate.column].reset_index(drop=True)
        if aggregate.how == "mean":
            source = table.schema.column(aggregate.column)  # clipped as the child's model is
            numbers = pd.to_numeric(values, errors="coerce").clip(source.lower, source.upper)
            per_parent = numbers.groupby(owners.to_numpy()).mean()
            out[aggregate.name(table.name)] = per_parent.reindex(keys).to_numpy(np.float64)
        else:
            hits = (values.astype(object).map(canonical_text) == aggregate.category).astype(int)
            per_parent = hits.groupby(owners.to_numpy()).sum()
            counts = per_parent.reindex(keys, fill_value=0).to_numpy(np.int64)
            out[aggregate.name(table.name)] = counts
    return pd.DataFrame(out, index=parent.index)


# -- drafting -----------------------------------------------------------------------------
def draft_relational_schema(
    tables: Mapping[str, pd.DataFrame], with_values: bool = True
) -> RelationalSchema:
    """Draft the relational schema from the private tables: each table's draft
    (:func:`dpforge.data.tables.draft_schema`), keys guessed by name and uniqueness, foreign
    keys by a column of the parent key's name whose values are all parent keys; every k is left
    null with a note that it must be a public bound. The draft is refused by fit until reviewed."""
    if len(tables) < 2:
        raise DataError("related tables need at least two files: a parent table and a child")
    keys = {name: _guessed_key(frame) for name, frame in tables.items()}
    parent = _guessed_parent(tables, keys)
    key = keys[parent]
    drafted, notes = [], [LINK_NOTE.format(key=key, parent=parent)]
    for name, frame in tables.items():
        link, own_key = None, keys[name]
        if name != parent:
            link = ChildLink(parent, key, None)
            own_key = own_key if own_key != key else None
            notes.append(K_NOTE.format(child=name, parent=parent))
        schema = _identifiers(draft_schema(frame, with_values=with_values), {own_key, key})
        drafted.append(RelationalTable(name, schema, own_key, link))
    return RelationalSchema(tuple(drafted), tuple(notes))


def _guessed_key(frame: pd.DataFrame) -> str | None:
    """The first column named like a key (id, patient_id, PatientID, key) whose values are
    present and unique; None if there is none."""
    for name in frame.columns:
        if not KEY_NAME.search(str(name)):
            continue
        texts = frame[name].astype(str).str.strip()
        if (texts != "").all() and texts.is_unique:
            return str(name)
    return None


def _guessed_parent(tables: Mapping[str, pd.DataFrame], keys: Mapping[str, str | None]) -> str:
    """The one table whose key every other table holds in a column of the same name, every
    value of which is one of its keys."""
    for name, key in keys.items():
        if key is None:
            continue
        known = set(tables[name][key].astype(str).str.strip())
        if all(
            key in frame.columns and set(frame[key].astype(str).str.strip()) <= known
            for other, frame in tables.items()
            if other != name
        ):
            return name
    raise DataError(
        f"no table's key is held by every other table ({sorted(tables)}): name the parent's "
        "key column the same in each child (e.g. patient_id), or write the relational schema "
        "by hand"
    )


def _identifiers(schema: Schema, names: set[str | None]) -> Schema:
    """Keys and foreign keys drafted as "drop" (never modelled); table notes that would send
    the steward to --privacy-unit for them are left out (the relational unit covers them)."""
    columns = tuple(Column(c.name, "drop") if c.name in names else c for c in schema.columns)
    notes = tuple(n for n in schema.notes if not any(f"'{k}' looks like" in n for k in names if k))
    return replace(schema, columns=columns, notes=notes)
