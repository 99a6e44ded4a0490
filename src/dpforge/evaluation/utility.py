"""Utility of synthetic data: train on synthetic, test on real (TSTR) with scikit-learn.

A classifier is trained on one table (synthetic, or the real training set for the baseline) to
predict the schema's label from the other columns, then scored on the real test set. Scores:
one-vs-rest AuROC (macro by default: on imbalanced data such as Thyroid the micro average is
dominated by the majority class, design.md section 6), accuracy and balanced accuracy.

The feature encoding is fixed by the schema, not by the data: categorical columns are one-hot
encoded over the schema's categories and probabilities are laid out over the schema's classes.
So train and test matrices align even when a synthetic table lacks a category or a whole class;
a class the classifier never saw gets predicted probability 0. Numeric columns are standardised
with a scaler fitted on the training table only.

Evaluating on real data is not differentially private: these scores are for the data steward's
own assessment, not for release alongside the synthetic data without thought.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from sklearn.ensemble import (
    AdaBoostClassifier,
    BaggingClassifier,
    GradientBoostingClassifier,
    RandomForestClassifier,
)
from sklearn.exceptions import ConvergenceWarning
from sklearn.impute import SimpleImputer
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score
from sklearn.naive_bayes import GaussianNB
from sklearn.neighbors import KNeighborsClassifier
from sklearn.neural_network import MLPClassifier
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC
from sklearn.tree import DecisionTreeClassifier
from threadpoolctl import threadpool_limits

from dpforge.data.tables import canonical_text
from dpforge.errors import DataError, SchemaError
from dpforge.evaluation.classifier_names import CLASSIFIERS
from dpforge.schema.table import Column, Schema

KNN_NEIGHBOURS = 5
AVERAGES = ("macro", "micro", "weighted")


@dataclass(frozen=True)
class MetricResult:
    """One score: its name, its value and what is needed to read it (averages, counts, ...)."""

    name: str
    value: float
    details: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Predictions:
    """Class probabilities on the test set, one column per schema class (in schema order)."""

    classes: tuple[str, ...]
    y_true: np.ndarray  # class index per test row
    proba: np.ndarray  # (n_test, n_classes)
    info: dict[str, Any]


# -- feature encoding ---------------------------------------------------------------------------
def _categories(column: Column, frames: Sequence[pd.DataFrame]) -> tuple[str, ...]:
    """The schema's public categories; only if undeclared, those seen in the given tables."""
    if column.categories is not None:
        return column.categories
    seen = set()
    for frame in frames:
        seen.update(canonical_text(v) for v in frame[column.name].tolist())
    return tuple(sorted(seen))


def _check_columns(frame: pd.DataFrame, schema: Schema, role: str) -> None:
    missing = [n for n in schema.names if n not in frame.columns]
    if missing:
        raise DataError(f"the {role} table lacks the schema's columns {missing}")
    if len(frame) == 0:
        raise DataError(f"the {role} table has no rows")


def _one_hot(frame: pd.DataFrame, name: str, categories: tuple[str, ...]) -> np.ndarray:
    """Indicator columns over ``categories``; a value outside them is all zeros."""
    index = {c: i for i, c in enumerate(categories)}
    out = np.zeros((len(frame), len(categories)), dtype=np.float64)
    for row, value in enumerate(frame[name].tolist()):
        position = index.get(canonical_text(value))
        if position is not None:
            out[row, position] = 1.0
    return out


def _numeric(frame: pd.DataFrame, name: str) -> np.ndarray:
    try:
        values = pd.to_numeric(frame[name], errors="raise").to_numpy(dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise DataError(f"column '{name}' must be numeric for the classifier: {exc}") from None
    if np.isinf(values).any():
        raise DataError(f"column '{name}' holds infinite values")
    return values


@dataclass(frozen=True)
class FeatureEncoder:
    """Schema-driven design matrix: numeric columns first (standardised), then one-hots."""

    numeric: tuple[str, ...]
    categorical: tuple[tuple[str, tuple[str, ...]], ...]

    @classmethod
    def from_schema(cls, schema: Schema, frames: Sequence[pd.DataFrame]) -> FeatureEncoder:
        features = schema.feature_columns
        numeric = tuple(c.name for c in features if c.is_numeric)
        categorical = tuple((c.name, _categories(c, frames)) for c in features if not c.is_numeric)
        return cls(numeric, categorical)

    def numeric_matrix(self, frame: pd.DataFrame) -> np.ndarray:
        columns = [_numeric(frame, n) for n in self.numeric]
        return np.column_stack(columns) if columns else np.zeros((len(frame), 0))

    def categorical_matrix(self, frame: pd.DataFrame) -> np.ndarray:
        blocks = [_one_hot(frame, n, cats) for n, cats in self.categorical]
        return np.hstack(blocks) if blocks else np.zeros((len(frame), 0))

    def fit_transform(
        self, train: pd.DataFrame, test: pd.DataFrame
    ) -> tuple[np.ndarray, np.ndarray]:
        """Design matrices for both tables; the scaler sees the training table only."""
        scaler = StandardScaler()
        train_num, test_num = self.numeric_matrix(train), self.numeric_matrix(test)
        if np.isnan(train_num).any() or np.isnan(test_num).any():
            imputer = SimpleImputer(strategy="median", add_indicator=True, keep_empty_features=True)
            train_num = imputer.fit_transform(train_num)  # empty numbers: imputed inside the
            test_num = imputer.transform(test_num)  # classifier's own pipeline, fitted on train
        if train_num.shape[1]:
            train_num = scaler.fit_transform(train_num)
            test_num = scaler.transform(test_num)
        x_train = np.hstack([train_num, self.categorical_matrix(train)])
        x_test = np.hstack([test_num, self.categorical_matrix(test)])
        return x_train, x_test


def label_classes(schema: Schema, frames: Sequence[pd.DataFrame]) -> tuple[str, ...]:
    """The label's public classes (or, if undeclared, those seen in the tables)."""
    label = schema.label_column
    if label is None:
        raise SchemaError("TSTR needs a schema with a label column (Schema(label=...))")
    return _categories(label, frames)


def encode_labels(frame: pd.DataFrame, label: str, classes: tuple[str, ...]) -> np.ndarray:
    """Class index per row; a value outside ``classes`` is an error (names the value)."""
    index = {c: i for i, c in enumerate(classes)}
    texts = [canonical_text(v) for v in frame[label].tolist()]
    unknown = sorted({t for t in texts if t not in index})
    if unknown:
        raise DataError(f"label '{label}' holds values {unknown} outside its classes {classes}")
    return np.array([index[t] for t in texts], dtype=np.int64)


# -- classifiers -------------------------------------------------------------------------------
def make_classifier(kind: str, seed: int, n_train: int | None = None):
    """A seeded scikit-learn classifier named in :data:`CLASSIFIERS` (default settings except
    where noted: the MLP has one hidden layer of 100, the forest 200 trees, k-NN uses
    ``min(5, n_train)`` neighbours). Classifiers without randomness (logistic regression,
    k-NN, naive Bayes) ignore ``seed``."""
    if kind not in CLASSIFIERS:
        raise ValueError(f"classifier must be one of {CLASSIFIERS}, got {kind!r}")
    builders = {
        "mlp": lambda: MLPClassifier(
            hidden_layer_sizes=(100,), max_iter=500, early_stopping=False, random_state=seed
        ),
        "lr": lambda: LogisticRegression(max_iter=2000),
        "rf": lambda: RandomForestClassifier(n_estimators=200, random_state=seed, n_jobs=1),
        "gb": lambda: GradientBoostingClassifier(random_state=seed),
        "svm": lambda: SVC(probability=True, random_state=seed),
        "knn": lambda: KNeighborsClassifier(n_neighbors=min(KNN_NEIGHBOURS, n_train or 5)),
        "nb": GaussianNB,
        "dt": lambda: DecisionTreeClassifier(random_state=seed),
        "ada": lambda: AdaBoostClassifier(random_state=seed),
        "bag": lambda: BaggingClassifier(random_state=seed, n_jobs=1),
    }
    return builders[kind]()


def fit_proba(
    kind: str, seed: int, x_train: np.ndarray, y_train: np.ndarray, x_test: np.ndarray, k: int
) -> tuple[np.ndarray, dict[str, Any]]:
    """Probabilities over all ``k`` classes; an unseen class gets 0, one seen class gets 1."""
    seen = np.unique(y_train)
    proba = np.zeros((len(x_test), k))
    if len(seen) == 1:  # nothing to learn: the one class the training table holds
        proba[:, seen[0]] = 1.0
        return proba, {"degenerate": True}
    model = make_classifier(kind, seed, len(x_train))
    # One BLAS thread: these matrices are small, and threads contending for a few cores made
    # the MLP 20x slower on the 2-core machine (58 s instead of 2.8 s on Thyroid).
    with (
        threadpool_limits(limits=1, user_api="blas"),
        warnings.catch_warnings(record=True) as caught,
    ):
        warnings.simplefilter("always", ConvergenceWarning)
        model.fit(x_train, y_train)
        proba[:, model.classes_] = model.predict_proba(x_test)
    converged = not any(issubclass(w.category, ConvergenceWarning) for w in caught)
    return proba, {"degenerate": False, "converged": converged}


def predict_test(
    train: pd.DataFrame,
    test: pd.DataFrame,
    schema: Schema,
    classifier: str = "mlp",
    seed: int = 0,
) -> Predictions:
    """Train ``classifier`` on ``train`` and return its class probabilities on ``test``."""
    if classifier not in CLASSIFIERS:
        raise ValueError(f"classifier must be one of {CLASSIFIERS}, got {classifier!r}")
    _check_columns(train, schema, "training")
    _check_columns(test, schema, "test")
    classes = label_classes(schema, (train, test))
    y_train = encode_labels(train, schema.label, classes)
    y_test = encode_labels(test, schema.label, classes)
    x_train, x_test = FeatureEncoder.from_schema(schema, (train, test)).fit_transform(train, test)
    proba, info = fit_proba(classifier, seed, x_train, y_train, x_test, len(classes))
    missing = [classes[i] for i in range(len(classes)) if i not in set(y_train.tolist())]
    info = {
        **info,
        "classifier": classifier,
        "seed": seed,
        "n_train": len(train),
        "n_test": len(test),
        "classes_missing_from_train": missing,
    }
    return Predictions(classes, y_test, proba, info)


# -- scores --------------------------------------------------------------------------------------
def auroc_scores(pred: Predictions) -> dict[str, Any]:
    """One-vs-rest AuROC per class (classes present in the test set), macro, weighted, micro."""
    per_class: dict[str, float] = {}
    support: dict[str, int] = {}
    for k, name in enumerate(pred.classes):
        positives = pred.y_true == k
        if 0 < positives.sum() < len(positives):
            per_class[name] = float(roc_auc_score(positives, pred.proba[:, k]))
            support[name] = int(positives.sum())
    if not per_class:
        raise DataError("the test set holds a single class: AuROC is undefined")
    indicator = np.eye(len(pred.classes))[pred.y_true]
    total = sum(support.values())
    return {
        "macro": float(np.mean(list(per_class.values()))),
        "weighted": float(sum(per_class[c] * support[c] for c in per_class) / total),
        "micro": float(roc_auc_score(indicator.ravel(), pred.proba.ravel())),
        "per_class": per_class,
        "support": support,
    }


def accuracy_scores(pred: Predictions) -> dict[str, float]:
    """Accuracy and balanced accuracy (mean recall over the classes present in the test set)."""
    predicted = pred.proba.argmax(axis=1)
    recalls = [
        float(np.mean(predicted[pred.y_true == k] == k))
        for k in range(len(pred.classes))
        if np.any(pred.y_true == k)
    ]
    return {
        "accuracy": float(np.mean(predicted == pred.y_true)),
        "balanced_accuracy": float(np.mean(recalls)),
    }


def tstr_auroc(
    train: pd.DataFrame,
    test: pd.DataFrame,
    schema: Schema,
    classifier: str = "mlp",
    average: str = "macro",
    seed: int = 0,
) -> MetricResult:
    """One-vs-rest AuROC of ``classifier`` trained on ``train``, scored on ``test``.

    ``value`` is the ``average`` ("macro", default; "weighted" or "micro") AuROC; ``details``
    hold all three averages, per-class AuROC, accuracy, balanced accuracy and what the
    classifier saw. The real baseline is this function with the real training table.
    """
    if average not in AVERAGES:
        raise ValueError(f"average must be one of {AVERAGES}, got {average!r}")
    pred = predict_test(train, test, schema, classifier, seed)
    scores = auroc_scores(pred)
    details = {**scores, **accuracy_scores(pred), **pred.info, "average": average}
    return MetricResult(f"tstr_auroc_{average}_{classifier}", scores[average], details)


def tstr_accuracy(
    train: pd.DataFrame, test: pd.DataFrame, schema: Schema, classifier: str = "mlp", seed: int = 0
) -> MetricResult:
    """Accuracy on ``test`` of ``classifier`` trained on ``train`` (details: balanced too)."""
    pred = predict_test(train, test, schema, classifier, seed)
    scores = accuracy_scores(pred)
    return MetricResult(f"tstr_accuracy_{classifier}", scores["accuracy"], {**scores, **pred.info})


def tstr_balanced_accuracy(
    train: pd.DataFrame, test: pd.DataFrame, schema: Schema, classifier: str = "mlp", seed: int = 0
) -> MetricResult:
    """Balanced accuracy (mean per-class recall) on ``test`` of a classifier fit on ``train``."""
    pred = predict_test(train, test, schema, classifier, seed)
    scores = accuracy_scores(pred)
    name = f"tstr_balanced_accuracy_{classifier}"
    return MetricResult(name, scores["balanced_accuracy"], {**scores, **pred.info})


def tstr_vs_real(
    real_train: pd.DataFrame,
    real_test: pd.DataFrame,
    synthetic: pd.DataFrame,
    schema: Schema,
    classifier: str = "mlp",
    average: str = "macro",
    seed: int = 0,
) -> MetricResult:
    """The Metric form ``(real_train, real_test, synthetic, schema)``: synthetic AuROC.

    ``details`` hold the real baseline (same classifier, same seed) and the ratio.
    """
    synthetic_score = tstr_auroc(synthetic, real_test, schema, classifier, average, seed)
    real_score = tstr_auroc(real_train, real_test, schema, classifier, average, seed)
    details = {
        "synthetic": synthetic_score.details,
        "real": real_score.details,
        "real_value": real_score.value,
        "ratio_to_real": synthetic_score.value / real_score.value,
    }
    return MetricResult(synthetic_score.name, synthetic_score.value, details)
