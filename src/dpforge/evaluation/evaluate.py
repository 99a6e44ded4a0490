"""One evaluation of a synthetic table: utility, fidelity, and the model's privacy ledger.

:func:`evaluate_table` gathers the metrics of :mod:`dpforge.evaluation` into one JSON-safe dict
(the body of ``dpforge evaluate``'s metrics file). Which rows each number used:

* utility: every classifier is trained twice with the same seed and encoding, once on the
  synthetic rows and once on the real training rows, and both are scored on the SAME held-out
  real test rows; the ratios are synthetic / real;
* fidelity (TVD of marginals, KS, Wasserstein-1, association matrices): the synthetic rows
  against the real training rows;
* the real test rows are used to score classifiers and for nothing else: no training, tuning or
  selection.

The result records the number of rows of each table, never a private value. The metrics are
computed from private data and are therefore NOT differentially private: the result says so in
its ``notice``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from dpforge import __version__
from dpforge.errors import DataError, PrivacyError, SchemaError
from dpforge.evaluation.association import association_difference
from dpforge.evaluation.attacks import ATTACKS, membership_attacks, table_matrix
from dpforge.evaluation.distances import ks_statistic, wasserstein
from dpforge.evaluation.fidelity import EVAL_BINS, marginal_fidelity
from dpforge.evaluation.inputs import typed_table
from dpforge.evaluation.released import RELEASE_RULE, dp_category_columns, keep_released
from dpforge.evaluation.utility import (
    CLASSIFIERS,
    Predictions,
    accuracy_scores,
    auroc_scores,
    predict_test,
)
from dpforge.schema.table import Schema

__all__ = [
    "EVALUATION_FORMAT",
    "HEADLINE_SCORES",
    "NOT_PRIVATE_NOTICE",
    "EvaluationTables",
    "evaluate_table",
    "evaluate_tables",
    "evaluation_tables",
    "json_safe",
    "model_privacy",
    "utility_scores",
]

EVALUATION_FORMAT = "dpforge.evaluation"
EVALUATION_VERSION = 1
HEADLINE_SCORES = ("auroc_macro", "auroc_micro", "accuracy", "balanced_accuracy")
NOT_PRIVATE_NOTICE = (
    "These metrics are computed from private data (the real training and test rows) and are "
    "NOT differentially private. Keep them with the private data; do not publish them with the "
    "model or the synthetic data without thought."
)
ROW_USE = {
    "utility_synthetic": "classifiers trained on the synthetic rows, scored on real_test",
    "utility_real": "the same classifiers (same seed, same encoding) trained on real_train, "
    "scored on the same real_test rows",
    "fidelity": "synthetic rows compared with real_train rows",
    "real_test": "used only to score classifiers and, split in two, as non-member targets and "
    "the attacker's reference set of the membership attacks; never to train, tune or select "
    "anything",
    "attacks": "members drawn from real_train; non-members and reference from real_test",
    "released_categories": RELEASE_RULE,
}


# -- inputs ----------------------------------------------------------------------------------


def _check_classifiers(classifiers: Sequence[str]) -> tuple[str, ...]:
    chosen = tuple(dict.fromkeys(classifiers))
    unknown = [c for c in chosen if c not in CLASSIFIERS]
    if not chosen or unknown:
        raise ValueError(
            f"classifiers must be a non-empty selection of {CLASSIFIERS}, got {chosen}"
        )
    return chosen


def _is_model(obj: Any) -> bool:
    return hasattr(obj, "sample") and hasattr(obj, "ledger_")


def _synthetic_rows(model: Any, n: int, seed: int | None) -> pd.DataFrame:
    rows = model.sample(n, seed=seed)
    if not isinstance(rows, pd.DataFrame):
        raise DataError("evaluation of image and time-series models is not supported yet")
    return rows


def _ledger_names(model: Any) -> list[str]:
    ledger = getattr(model, "ledger_", None)
    return [] if ledger is None else [entry.name for entry in ledger.entries]


# -- utility ---------------------------------------------------------------------------------
def _scores(pred: Predictions) -> dict[str, Any]:
    auroc = auroc_scores(pred)
    return {
        "auroc_macro": auroc["macro"],
        "auroc_micro": auroc["micro"],
        "auroc_weighted": auroc["weighted"],
        **accuracy_scores(pred),
        "auroc_per_class": auroc["per_class"],
        "classes_missing_from_train": pred.info["classes_missing_from_train"],
        "converged": pred.info.get("converged"),
        "n_train": pred.info["n_train"],
        "n_test": pred.info["n_test"],
    }


def _ratio(synthetic: float, real: float) -> float:
    return synthetic / real if real > 0 else float("nan")


def utility_scores(
    real_train: pd.DataFrame,
    real_test: pd.DataFrame,
    synthetic: pd.DataFrame,
    schema: Schema,
    classifiers: Sequence[str] = CLASSIFIERS,
    seed: int = 0,
) -> dict[str, Any]:
    """Per classifier: scores when trained on synthetic rows and on real_train (both scored on
    real_test) and their synthetic / real ratios; ``mean`` averages them over classifiers."""
    per: dict[str, Any] = {}
    for kind in _check_classifiers(classifiers):
        syn = _scores(predict_test(synthetic, real_test, schema, kind, seed))
        real = _scores(predict_test(real_train, real_test, schema, kind, seed))
        ratio = {k: _ratio(syn[k], real[k]) for k in HEADLINE_SCORES}
        per[kind] = {"synthetic": syn, "real": real, "ratio": ratio}
    mean = {
        side: {k: float(np.mean([per[c][side][k] for c in per])) for k in HEADLINE_SCORES}
        for side in ("synthetic", "real", "ratio")
    }
    return {"label": schema.label, "seed": seed, "classifiers": per, "mean": mean}


# -- fidelity --------------------------------------------------------------------------------
def fidelity_scores(
    real: pd.DataFrame, synthetic: pd.DataFrame, schema: Schema, n_bins: int = EVAL_BINS
) -> dict[str, Any]:
    """TVD of 1- and 2-way marginals on public cells, KS and W1 per numeric column, and the
    association-matrix difference, of ``synthetic`` against ``real``."""
    tvd = marginal_fidelity(real, synthetic, schema, n_bins)
    ks, w1 = ks_statistic(real, synthetic, schema), wasserstein(real, synthetic, schema)
    association = association_difference(real, synthetic, schema)
    return {
        "tvd": {
            "bins": n_bins,
            "mean_one_way": tvd.mean_one_way,
            "mean_two_way": tvd.mean_two_way,
            "one_way": tvd.one_way,
            "two_way": tvd.two_way,
        },
        "ks": {"mean": ks.value, **ks.details},
        "wasserstein1": {"mean_normalized": w1.value, **w1.details},
        "association": {"mean_abs_difference": association.value, **association.details},
    }


# -- privacy ---------------------------------------------------------------------------------
def model_privacy(model: Any) -> dict[str, Any]:
    """The fitted model's ledger and ε (PLD and RDP) at its δ: public facts about the run."""
    report = model.privacy_spent()
    try:
        rdp = model.ledger_.epsilon(model.delta, accountant="rdp")
    except PrivacyError:
        rdp = None
    return {
        "method": model.method,
        "target_epsilon": model.epsilon,
        "delta": model.delta,
        "epsilon": report.epsilon,
        "accountant": report.accountant,
        "epsilon_pld": report.epsilon_pld,
        "epsilon_rdp": rdp,
        "summary": report.summary(),
        "guarantee": model.unit.describe(),
        "entries": [entry.name for entry in model.ledger_.entries],
        "ledger": model.ledger_.to_dict(),
    }


# -- all together ----------------------------------------------------------------------------
@dataclass(frozen=True)
class EvaluationTables:
    """The typed tables an evaluation compares, after the released-categories rule."""

    schema: Schema
    train: pd.DataFrame
    test: pd.DataFrame
    synthetic: pd.DataFrame
    is_model: bool
    released: dict[str, Any]


def _schema_of(model_or_synthetic: Any, schema: Schema | None) -> Schema:
    if schema is None:
        if not _is_model(model_or_synthetic):
            raise SchemaError("evaluate_table needs the schema when given a synthetic table")
        schema = model_or_synthetic.schema_
    if not isinstance(schema, Schema):
        raise DataError("evaluation of image and time-series models is not supported yet")
    return schema.modelled  # identifiers ("drop", "surrogate") hold nothing to compare


def evaluation_tables(
    model_or_synthetic: Any,
    real_train: pd.DataFrame,
    real_test: pd.DataFrame,
    schema: Schema | None = None,
    seed: int = 0,
    n_synthetic: int | None = None,
) -> EvaluationTables:
    """The real and synthetic tables typed against the schema; real rows of categories the
    model's DP threshold did not release set aside (:mod:`dpforge.evaluation.released`); for a
    model, ``n_synthetic`` rows (default: as many as the kept training rows) sampled with
    ``seed``."""
    is_model = _is_model(model_or_synthetic)
    schema = _schema_of(model_or_synthetic, schema)
    train = typed_table(real_train, schema, "real training")
    test = typed_table(real_test, schema, "real test")
    dropped = dp_category_columns(schema, _ledger_names(model_or_synthetic) if is_model else ())
    train, train_aside = keep_released(train, schema, dropped)
    test, test_aside = keep_released(test, schema, dropped)
    for table, role in ((train, "real training"), (test, "real test")):
        if len(table) == 0:
            raise DataError(
                f"every {role} row holds a category the model's DP threshold did not release "
                f"(columns {list(dropped)}); there is nothing the model can be compared with"
            )
    if is_model:
        n = len(train) if n_synthetic is None else n_synthetic
        raw = _synthetic_rows(model_or_synthetic, n, seed)
    else:
        raw = model_or_synthetic
    released = {
        "dp_estimated_columns": list(dropped),
        "real_train": train_aside.to_dict(),
        "real_test": test_aside.to_dict(),
    }
    synthetic = typed_table(raw, schema, "synthetic")
    return EvaluationTables(schema, train, test, synthetic, is_model, released)


def evaluate_table(
    model_or_synthetic: Any,
    real_train: pd.DataFrame,
    real_test: pd.DataFrame,
    schema: Schema | None = None,
    classifiers: Sequence[str] = CLASSIFIERS,
    seed: int = 0,
    n_synthetic: int | None = None,
    n_bins: int = EVAL_BINS,
    attacks: Sequence[str] = ATTACKS,
    on_step: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Utility, fidelity, membership attacks and (for a fitted model) the ledger of synthetic
    rows, as a JSON-safe dict.

    ``model_or_synthetic`` is a fitted table :class:`~dpforge.Synthesizer` (``n_synthetic``
    rows are sampled with ``seed``; default: as many as ``real_train``; ``schema`` defaults to
    the model's completed schema) or a synthetic table (then ``schema`` is required). The
    schema must be complete (bounds and categories known). Utility is skipped (``None``) when
    the schema has no label. ``attacks`` selects the membership-inference attacks (empty: none;
    see :mod:`dpforge.evaluation.attacks`); ``on_step(name)`` is called after each part (for a
    progress bar).
    """
    tables = evaluation_tables(model_or_synthetic, real_train, real_test, schema, seed, n_synthetic)
    model = model_or_synthetic if tables.is_model else None
    return evaluate_tables(tables, model, classifiers, seed, n_bins, attacks, on_step)


def evaluate_tables(
    tables: EvaluationTables,
    model: Any = None,
    classifiers: Sequence[str] = CLASSIFIERS,
    seed: int = 0,
    n_bins: int = EVAL_BINS,
    attacks: Sequence[str] = ATTACKS,
    on_step: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """The metrics of :func:`evaluate_table` on tables already prepared by
    :func:`evaluation_tables` (``model``: the fitted model, for its ledger, or None)."""
    step = on_step or (lambda name: None)
    started = time.perf_counter()
    schema, train, test, synthetic = tables.schema, tables.train, tables.test, tables.synthetic
    utility = None
    if schema.label is not None:
        utility = utility_scores(train, test, synthetic, schema, classifiers, seed)
    step("utility")
    fidelity = fidelity_scores(train, synthetic, schema, n_bins)
    step("fidelity")
    attack = None
    if attacks:
        matrices = [table_matrix(t, schema) for t in (train, test, synthetic)]
        attack = membership_attacks(*matrices, seed=seed, attacks=tuple(attacks), on_done=step)
    result = {
        "format": EVALUATION_FORMAT,
        "version": EVALUATION_VERSION,
        "dpforge_version": __version__,
        "data_type": "table",
        "notice": NOT_PRIVATE_NOTICE,
        "differentially_private": False,
        "seed": seed,
        "rows": {"real_train": len(train), "real_test": len(test), "synthetic": len(synthetic)},
        "synthetic_source": "sampled from the model" if tables.is_model else "given table",
        "released_categories": tables.released,
        "row_use": ROW_USE,
        "utility": utility,
        "fidelity": fidelity,
        "attacks": attack,
        "privacy": model_privacy(model) if model is not None else None,
        "schema": schema.to_dict(),
        "seconds": round(time.perf_counter() - started, 3),
    }
    return json_safe(result)


def json_safe(value: Any) -> Any:
    """``value`` with numpy scalars as Python numbers, NaN as None and ±∞ as "inf"/"-inf"."""
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    if isinstance(value, np.ndarray):
        return json_safe(value.tolist())
    if isinstance(value, bool | np.bool_):
        return bool(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, float | np.floating):
        number = float(value)
        if math.isnan(number):
            return None
        return number if math.isfinite(number) else ("inf" if number > 0 else "-inf")
    return value
