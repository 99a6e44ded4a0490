"""Evaluation of synthetic related tables: a parent table and its child tables (issue 45).

:func:`evaluate_relational` compares synthetic tables (a dict of DataFrames, linked by their
keys, as :meth:`dpforge.relational.RelationalSynthesizer.sample` or ``dpforge sample`` give
them) with the real ones, under the :class:`~dpforge.schema.relational.RelationalSchema`:

* per table, the TVD of every 1- and 2-way marginal on the public cells of single-table
  evaluation (:mod:`dpforge.evaluation.fidelity`);
* per child, parent x child: the TVD of each pair of one parent column and one child column on
  the joined table (each child row with its parent's columns);
* per child, the distribution of children per parent: cells 0..k and one "more than k" cell
  (a synthesizer that ignores the bound shows there);
* a parent-level task: classifiers (those of :mod:`dpforge.evaluation.utility`) predict a
  parent column (the label) from the parent's other columns and its children's aggregates
  (:mod:`dpforge.evaluation.relational_features`), trained on the synthetic parents and, for
  the baseline, on the real training parents, both scored on the real holdout parents;
* parent-level membership attacks (:mod:`dpforge.evaluation.attacks`) on the same feature
  vectors: members are real training parents, non-members holdout parents.

Which rows each number uses: the real training tables are those the model was fitted on, each
child cut to its public k rows per parent (kept rows drawn with the evaluation's seed), as the
fit sees them; fidelity and counts compare the synthetic tables with them. The holdout tables
hold parents never used in the fit (all their rows): they score the classifiers and are the
attacks' non-members and reference, nothing else. A parent key in both is refused. The figures
are computed from private data and are NOT differentially private.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from dpforge.data.relational import child_counts, joined_child, key_texts
from dpforge.errors import DataError, SchemaError, private
from dpforge.evaluation.attacks import ATTACKS, membership_attacks, table_matrix
from dpforge.evaluation.evaluate import NOT_PRIVATE_NOTICE, json_safe, utility_scores
from dpforge.evaluation.fidelity import EVAL_BINS, marginal_fidelity, marginal_tvd
from dpforge.evaluation.inputs import typed_table
from dpforge.evaluation.relational_features import (
    bounded_children,
    check_links,
    feature_schema,
    parent_features,
)
from dpforge.evaluation.utility import CLASSIFIERS
from dpforge.schema.relational import RelationalSchema, RelationalTable, joined_name

__all__ = ["RelationalEvaluation", "completed_schema", "evaluate_relational"]

ROW_USE = {
    "fidelity": "synthetic tables compared with the real training tables, each child cut to "
    "its k rows per parent (kept rows drawn with the seed), as the fit sees them",
    "task": "classifiers trained on the synthetic parents and on the real training parents, "
    "both scored on the same real holdout parents",
    "attacks": "members: real training parents; non-members and reference: real holdout "
    "parents; each parent with its children's aggregates",
    "holdout": "parents never used in the fit, with all their rows; used only to score the "
    "task and by the attacks",
}


@dataclass(frozen=True)
class RelationalEvaluation:
    """The metrics of :func:`evaluate_relational`; :meth:`to_dict` is JSON-safe."""

    tables: dict[str, dict[str, Any]]  # per table: mean and per-marginal 1-/2-way TVD
    parent_child: dict[str, dict[str, Any]]  # per child: mean and per-pair TVD on the join
    child_counts: dict[str, dict[str, Any]]  # per child: TVD and both distributions
    task: dict[str, Any] | None  # utility_scores of the parent-level task (None: no label)
    attacks: dict[str, Any] | None  # membership_attacks on parent feature vectors
    rows: dict[str, dict[str, int]]  # rows per table of each set
    seed: int
    meta: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return json_safe(
            {
                "format": "dpforge.evaluation.relational",
                "version": 1,
                "notice": NOT_PRIVATE_NOTICE,
                "differentially_private": False,
                "seed": self.seed,
                "rows": self.rows,
                "row_use": ROW_USE,
                "tables": self.tables,
                "parent_child": self.parent_child,
                "child_counts": self.child_counts,
                "task": self.task,
                "attacks": self.attacks,
                **self.meta,
            }
        )

    def headline(self) -> dict[str, float | None]:
        """The means a benchmark row reports (None where not measured)."""
        task = None if self.task is None else self.task["mean"]
        return {
            "table_tvd_1way": _mean(t["mean_one_way"] for t in self.tables.values()),
            "table_tvd_2way": _mean(t["mean_two_way"] for t in self.tables.values()),
            "parent_child_tvd": _mean(c["mean"] for c in self.parent_child.values()),
            "child_count_tvd": _mean(c["tvd"] for c in self.child_counts.values()),
            "task_auc_synthetic": None if task is None else task["synthetic"]["auroc_macro"],
            "task_auc_real": None if task is None else task["real"]["auroc_macro"],
            "attack_auc": None if self.attacks is None else self.attacks["max_auc"],
        }

    def markdown(self) -> str:
        """The related-tables section of a report, as Markdown."""
        from dpforge.evaluation.report_relational import relational_markdown

        return relational_markdown(self.to_dict())


def _mean(values) -> float | None:
    finite = [v for v in values if v is not None and np.isfinite(v)]
    return float(np.mean(finite)) if finite else None


# -- the schema's public cells -------------------------------------------------------------
def completed_schema(schema: RelationalSchema, model: Any = None) -> RelationalSchema:
    """``schema`` with every modelled column's bounds and categories known: a fitted
    :class:`~dpforge.relational.RelationalSynthesizer`'s completed schemas (declared or
    estimated under DP) where ``model`` is given, else the declared ones, which must then be
    complete."""
    if model is not None:
        schema = _from_model(schema, model)
    for table in schema.tables:
        missing = [c.name for c in table.schema.modelled.columns if not c.is_complete]
        if missing:
            raise SchemaError(
                f"table '{table.name}': column '{missing[0]}' has no declared bounds or "
                "categories, so its evaluation cells are unknown; declare them in the schema "
                "(public values), or evaluate with the fitted model"
            )
    return schema


def _from_model(schema: RelationalSchema, model: Any) -> RelationalSchema:
    """Each table's columns as the model's fits completed them."""
    fitted = {schema.parent.name: model.parent_model_.schema_}
    tables = []
    for table in schema.tables:
        done = fitted.get(table.name) or model.child_models_[table.name].schema_
        columns = tuple(c if c.is_identifier else done.column(c.name) for c in table.schema.columns)
        tables.append(replace(table, schema=replace(table.schema, columns=columns)))
    return replace(schema, tables=tuple(tables))


# -- the metrics ---------------------------------------------------------------------------
def table_fidelity(
    real: Mapping[str, pd.DataFrame],
    synthetic: Mapping[str, pd.DataFrame],
    schema: RelationalSchema,
    n_bins: int = EVAL_BINS,
) -> dict[str, dict[str, Any]]:
    """Per table: 1- and 2-way TVD of its own modelled columns."""
    out = {}
    for table in schema.tables:
        own = table.schema.modelled
        a = typed_table(real[table.name], own, f"real '{table.name}'")
        b = typed_table(synthetic[table.name], own, f"synthetic '{table.name}'")
        tvd = marginal_fidelity(a, b, own, n_bins)
        out[table.name] = {
            "mean_one_way": tvd.mean_one_way,
            "mean_two_way": tvd.mean_two_way,
            "one_way": tvd.one_way,
            "two_way": tvd.two_way,
        }
    return out


def parent_child_fidelity(
    real: Mapping[str, pd.DataFrame],
    synthetic: Mapping[str, pd.DataFrame],
    schema: RelationalSchema,
    n_bins: int = EVAL_BINS,
) -> dict[str, dict[str, Any]]:
    """Per child: TVD of each (parent column, child column) pair on the joined table."""
    out = {}
    for child in schema.children:
        joined = schema.joined(child, aggregates=False).modelled
        own = child.schema.modelled.names
        parents = [
            joined_name(child, child.schema.names, c) for c in schema.parent.schema.modelled.names
        ]
        pairs = [(p, c) for p in parents for c in own]
        a, b = (
            _joined(t, schema, child, joined, role)
            for t, role in ((real, "real"), (synthetic, "synthetic"))
        )
        if a is None or b is None:
            out[child.name] = {
                "mean": None,
                "pairs": {},
                "empty": "real" if a is None else "synthetic",
            }
            continue
        tvd = marginal_tvd(a, b, joined, pairs, n_bins)
        out[child.name] = {
            "mean": float(np.mean(list(tvd.values()))),
            "pairs": {f"{p} x {c}": v for (p, c), v in tvd.items()},
        }
    return out


def _joined(tables, schema, child, joined, role: str) -> pd.DataFrame | None:
    """The child's rows with their parent's columns, typed; None when the child is empty."""
    if len(tables[child.name]) == 0:
        return None
    frame = joined_child(tables, schema, child, aggregates=False)
    return typed_table(frame, joined, f"{role} '{child.name}' joined with its parent")


def count_fidelity(
    real: Mapping[str, pd.DataFrame],
    synthetic: Mapping[str, pd.DataFrame],
    schema: RelationalSchema,
) -> dict[str, dict[str, Any]]:
    """Per child: the share of parents with 0, 1, ..., k and more than k rows in it, real and
    synthetic, and the TVD between the two."""
    parent, out = schema.parent, {}
    for child in schema.children:
        shares = [_count_shares(t, parent, child) for t in (real, synthetic)]
        out[child.name] = {
            "k": child.max_rows,
            "tvd": 0.5 * float(np.abs(shares[0] - shares[1]).sum()),
            "real": shares[0].tolist(),
            "synthetic": shares[1].tolist(),
            "cells": [str(i) for i in range(child.max_rows + 1)] + [f">{child.max_rows}"],
        }
    return out


def _count_shares(tables, parent: RelationalTable, child: RelationalTable) -> np.ndarray:
    counts = child_counts(tables[parent.name], tables[child.name], child.link, parent.key)
    cells = np.bincount(np.minimum(counts, child.max_rows + 1), minlength=child.max_rows + 2)
    return cells / max(1, cells.sum())


# -- all together --------------------------------------------------------------------------
def evaluate_relational(
    real_train: Mapping[str, pd.DataFrame],
    real_holdout: Mapping[str, pd.DataFrame],
    synthetic: Mapping[str, pd.DataFrame],
    schema: RelationalSchema,
    *,
    label: str | None = None,
    model: Any = None,
    classifiers: Sequence[str] = CLASSIFIERS,
    attacks: Sequence[str] = ATTACKS,
    seed: int = 0,
    n_bins: int = EVAL_BINS,
) -> RelationalEvaluation:
    """Every metric of the module docstring. ``label``: the parent column the task predicts
    (default: the parent table schema's label; no label, no task). ``model``: the fitted
    :class:`~dpforge.relational.RelationalSynthesizer`, whose completed schemas give the
    cells of columns the schema leaves undeclared. ``attacks`` empty: no attack."""
    schema = completed_schema(schema, model)
    label = _checked(real_train, real_holdout, synthetic, schema, label)
    rng = np.random.default_rng(seed)
    sets = {
        "real training": bounded_children(real_train, schema, rng),
        "real holdout": bounded_children(real_holdout, schema, rng),
        "synthetic": synthetic,
    }
    train = sets["real training"]
    fidelity = table_fidelity(train, synthetic, schema, n_bins)
    joint = parent_child_fidelity(train, synthetic, schema, n_bins)
    counts = count_fidelity(train, synthetic, schema)
    features = feature_schema(schema, label)
    frames = [parent_features(tables, schema, role) for role, tables in sets.items()]
    task = None if label is None else utility_scores(*frames, features, classifiers, seed)
    matrices = [table_matrix(frame, features) for frame in frames]  # train, holdout, synthetic
    attack = membership_attacks(*matrices, seed=seed, attacks=tuple(attacks)) if attacks else None
    names = dict(zip(sets, ("real_train", "real_holdout", "synthetic"), strict=True))
    rows = {names[role]: {n: len(t[n]) for n in schema.names} for role, t in sets.items()}
    meta = {"label": label, "schema": schema.to_dict(), "bins": n_bins}
    return RelationalEvaluation(fidelity, joint, counts, task, attack, rows, seed, meta)


def _checked(real_train, real_holdout, synthetic, schema: RelationalSchema, label) -> str | None:
    """The task's label (given, else the parent schema's), checked with the three sets'
    keys and links and the holdout's parents unseen in training."""
    label = label if label is not None else schema.parent.schema.label
    if label is not None and label not in schema.parent.schema.modelled.names:
        raise SchemaError(
            f"the task's label '{label}' is not a modelled column of the parent table "
            f"'{schema.parent.name}' (its columns: {schema.parent.schema.modelled.names})"
        )
    check_links(real_train, schema, "real training")
    check_links(real_holdout, schema, "real holdout")
    check_links(synthetic, schema, "synthetic")
    _check_disjoint(real_train, real_holdout, schema)
    return label


def _check_disjoint(train, holdout, schema: RelationalSchema) -> None:
    """No parent of the holdout is a training parent (the holdout must be unseen)."""
    parent = schema.parent
    seen = set(key_texts(train[parent.name][parent.key], parent.key))
    held = key_texts(holdout[parent.name][parent.key], parent.key)
    shared = np.flatnonzero([k in seen for k in held])
    if shared.size:
        raise DataError(
            f"real holdout table '{parent.name}', row {private(int(shared[0]) + 1)}: this "
            "parent is also in the training tables; the holdout must hold parents never used "
            "in the fit (split by parent: dpforge.evaluation.relational_features.split_parents)"
        )
