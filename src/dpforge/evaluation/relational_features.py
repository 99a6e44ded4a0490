"""Related tables read for evaluation: keys checked, children bounded, one row per parent.

The parent-level task and the parent-level membership attack of
:mod:`dpforge.evaluation.relational` read each parent as one feature vector: its own modelled
columns, then per child table its number of rows, the mean of each numeric child column and
the share of each category of each categorical child column (:func:`parent_features`). The
feature schema (:func:`feature_schema`) takes its bounds from the public schema (counts in
0..k, means within the child column's bounds, shares in [0, 1]), so the classifiers and the
attack encode every table the same way. A parent without rows in a child has no mean and no
share there: those cells are empty (the classifiers impute them inside their own pipeline, the
attack encodes a missing indicator).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from dpforge.data.relational import key_texts
from dpforge.errors import DataError, private
from dpforge.evaluation.inputs import typed_table
from dpforge.privacy.person import kept_rows
from dpforge.schema.relational import RelationalSchema, RelationalTable
from dpforge.schema.table import Column, Schema

__all__ = [
    "bounded_children",
    "check_links",
    "feature_schema",
    "parent_features",
    "split_parents",
]


def check_links(tables: Mapping[str, pd.DataFrame], schema: RelationalSchema, role: str) -> None:
    """Every table of ``schema`` is given; parent keys are unique; every child row names a
    parent of the same set (``role``: "real training", "synthetic", ...)."""
    for name in schema.names:
        if not isinstance(tables.get(name), pd.DataFrame):
            raise DataError(
                f"the {role} tables lack table '{name}' of the schema (given: {sorted(tables)}); "
                f"pass it ({name}.csv, or a DataFrame under that name)"
            )
    parent = schema.parent
    keys = _key_column(tables[parent.name], parent, parent.key, role)
    repeated = pd.Series(keys).duplicated().to_numpy()
    if repeated.any():
        row = int(np.flatnonzero(repeated)[0]) + 1
        raise DataError(
            f"{role} table '{parent.name}', row {private(row)}: its key '{parent.key}' appears "
            "twice; each parent needs a unique key"
        )
    for child in schema.children:
        owners = _key_column(tables[child.name], child, child.link.foreign_key, role)
        orphans = np.flatnonzero(~np.isin(owners, keys))
        if orphans.size:
            raise DataError(
                f"{role} table '{child.name}', row {private(int(orphans[0]) + 1)}: its foreign "
                f"key '{child.link.foreign_key}' names no row of '{parent.name}'; every child "
                "row needs its parent in the same set of tables"
            )


def _key_column(frame: pd.DataFrame, table: RelationalTable, column: str, role: str) -> np.ndarray:
    if column not in frame.columns:
        raise DataError(
            f"{role} table '{table.name}' has no column '{column}' (its key or foreign key); "
            "fix the file's header or the schema"
        )
    return key_texts(frame[column], f"{table.name}.{column}")


def bounded_children(
    tables: Mapping[str, pd.DataFrame], schema: RelationalSchema, rng: np.random.Generator
) -> dict[str, pd.DataFrame]:
    """The tables with each child cut to its public k rows per parent (kept rows drawn
    uniformly with ``rng``): the real data as the fit sees it."""
    out = {schema.parent.name: tables[schema.parent.name].reset_index(drop=True)}
    for child in schema.children:
        frame = tables[child.name]
        owners = key_texts(frame[child.link.foreign_key], child.link.foreign_key)
        kept = kept_rows(owners, child.max_rows, rng.random(len(owners)))
        out[child.name] = frame.iloc[kept].reset_index(drop=True)
    return out


def split_parents(
    tables: Mapping[str, pd.DataFrame],
    schema: RelationalSchema,
    holdout_share: float,
    rng: np.random.Generator,
) -> tuple[dict[str, pd.DataFrame], dict[str, pd.DataFrame]]:
    """(train, holdout): each parent, with all its rows in every child, goes to one side; a
    share ``holdout_share`` of the parents (drawn with ``rng``) to the holdout."""
    if not 0 < holdout_share < 1:
        raise ValueError(f"holdout_share must be between 0 and 1, got {holdout_share}")
    check_links(tables, schema, "real")
    parent = schema.parent
    keys = key_texts(tables[parent.name][parent.key], parent.key)
    held = set(keys[rng.permutation(len(keys))[: int(round(holdout_share * len(keys)))]])
    sides: tuple[dict[str, pd.DataFrame], dict[str, pd.DataFrame]] = ({}, {})
    for table in schema.tables:
        column = parent.key if table is parent else table.link.foreign_key
        frame = tables[table.name]
        in_holdout = np.isin(key_texts(frame[column], column), list(held))
        sides[0][table.name] = frame[~in_holdout].reset_index(drop=True)
        sides[1][table.name] = frame[in_holdout].reset_index(drop=True)
    return sides


# -- one row per parent --------------------------------------------------------------------
def _mean_name(child: RelationalTable, column: str) -> str:
    return f"{child.name}: mean {column}"


def _share_name(child: RelationalTable, column: str, category: str) -> str:
    return f"{child.name}: share {column}={category}"


def _rows_name(child: RelationalTable) -> str:
    return f"{child.name}: rows"


def feature_schema(schema: RelationalSchema, label: str | None) -> Schema:
    """The parent-level table's schema: the parent's modelled columns (``label`` the
    classifiers' target), then per child its row count, means and category shares."""
    columns = list(schema.parent.schema.modelled.columns)
    for child in schema.children:
        columns.append(Column(_rows_name(child), "integer", lower=0, upper=child.max_rows))
        for c in child.schema.modelled.columns:
            if c.is_numeric:
                columns.append(Column(_mean_name(child, c.name), "continuous", lower=c.lower,
                                      upper=c.upper, nullable=True))  # fmt: skip
            else:
                columns += [
                    Column(_share_name(child, c.name, v), "continuous", 0, 1, nullable=True)
                    for v in c.categories
                ]
    return Schema(tuple(columns), label=label)


def parent_features(
    tables: Mapping[str, pd.DataFrame], schema: RelationalSchema, role: str
) -> pd.DataFrame:
    """One row per parent (in the parent table's order): its columns and its children's
    aggregates, named as :func:`feature_schema` names them."""
    parent = schema.parent
    frame = tables[parent.name]
    keys = key_texts(frame[parent.key], parent.key)
    blocks = [typed_table(frame, parent.schema.modelled, f"{role} '{parent.name}'")]
    for child in schema.children:
        blocks.append(_child_aggregates(tables[child.name], child, keys, role))
    return pd.concat([b.reset_index(drop=True) for b in blocks], axis=1)


def _child_aggregates(
    frame: pd.DataFrame, child: RelationalTable, keys: np.ndarray, role: str
) -> pd.DataFrame:
    """Per parent key (in ``keys``' order): rows, numeric means, category shares (an empty
    category cell counts as none of the categories)."""
    owners = pd.Series(key_texts(frame[child.link.foreign_key], child.link.foreign_key))
    own = child.schema.modelled
    out = {_rows_name(child): owners.value_counts().reindex(keys, fill_value=0)}
    typed = typed_table(frame, own, f"{role} '{child.name}'") if len(frame) else None
    for column in own.columns:
        if column.is_numeric:
            values = typed[column.name] if typed is not None else pd.Series(dtype=float)
            out[_mean_name(child, column.name)] = values.groupby(owners).mean().reindex(keys)
            continue
        for category in column.categories:
            hits = (typed[column.name] == category) if typed is not None else pd.Series()
            share = hits.astype(np.float64).groupby(owners).mean().reindex(keys)
            out[_share_name(child, column.name, category)] = share
    return pd.DataFrame({k: v.to_numpy(dtype=np.float64) for k, v in out.items()})
