"""Real rows holding a category the DP threshold did not release, set aside before evaluation.

When a schema leaves a column's categories (or the label's classes) to be estimated under DP,
the release keeps only values held by enough records: rare values are hidden, and the records
holding them are dropped before training by a per-record rule (``keep_released_rows``). The
model can never generate such a value, and it is not in the model's schema.

Evaluation applies the same rule to the real training and test rows: a real row holding a
value outside the released categories of such a column is set aside, so that

* fidelity compares the synthetic rows with the real rows the model was trained on;
* the real-data baseline classifier is trained on the same rows the model saw, and both
  classifiers are scored on the same test rows, which only hold values the model knows;
* nothing is mistaken for bad input: a value outside categories the USER DECLARED is still an
  error (the data do not match the schema).

The share of real rows set aside, per split and per column, is reported next to the metrics: it
is the part of the real data that the synthetic data cannot represent. Those counts are read
from the private data (the evaluation is not differentially private); the values themselves are
never reported.

Which columns had their categories estimated under DP is read from the model's ledger (its
``metadata: categories of '<column>'`` entries): a public fact about the run.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd

from dpforge.data.tables import canonical_text
from dpforge.schema.table import Schema

__all__ = [
    "RELEASE_RULE",
    "SetAside",
    "dp_category_columns",
    "keep_released",
    "without_dp_categories",
]

CATEGORY_ENTRY = "metadata: categories of '{}'"
RELEASE_RULE = (
    "Real rows holding a category (or class) that the DP threshold did not release are set "
    "aside before every comparison, the rule the fit applied to the training records: the model "
    "can never generate such a value. The share set aside is the part of the real data the "
    "synthetic data cannot represent."
)


def dp_category_columns(schema: Schema, ledger_names: Iterable[str]) -> tuple[str, ...]:
    """The categorical columns whose categories the model estimated under DP (per its ledger)."""
    names = set()
    for entry in ledger_names:
        for column in schema.columns:
            if entry.startswith(CATEGORY_ENTRY.format(column.name)):
                names.add(column.name)
    return tuple(c.name for c in schema.columns if c.name in names and not c.is_numeric)


def without_dp_categories(schema: Schema, columns: Iterable[str]) -> Schema:
    """``schema`` with the category lists of ``columns`` unset: for reading real files whose
    rows may hold values the DP threshold dropped (set aside later by :func:`keep_released`)."""
    chosen = set(columns)
    return replace(
        schema,
        columns=tuple(
            replace(c, categories=None) if c.name in chosen else c for c in schema.columns
        ),
    )


@dataclass(frozen=True)
class SetAside:
    """How many rows of one real table were set aside, in all and per column (a row may count
    for several columns)."""

    rows: int
    kept: int
    per_column: dict[str, int]

    def to_dict(self) -> dict[str, Any]:
        total = self.rows + self.kept
        return {
            "set_aside": self.rows,
            "kept": self.kept,
            "share_set_aside": self.rows / total if total else 0.0,
            "per_column": dict(self.per_column),
        }


def keep_released(
    frame: pd.DataFrame, schema: Schema, columns: Iterable[str]
) -> tuple[pd.DataFrame, SetAside]:
    """The rows of ``frame`` whose values in ``columns`` are all released categories of
    ``schema`` (the model's completed schema), and how many were set aside."""
    keep = np.ones(len(frame), dtype=bool)
    per_column = {}
    for name in columns:
        allowed = set(schema.column(name).categories or ())
        inside = np.fromiter(
            (canonical_text(v) in allowed for v in frame[name].tolist()), bool, len(frame)
        )
        per_column[name] = int((~inside).sum())
        keep &= inside
    kept = frame if keep.all() else frame[keep].reset_index(drop=True)
    return kept, SetAside(int((~keep).sum()), int(keep.sum()), per_column)
