"""The full (NOT differentially private) report of an image or time-series model.

What :mod:`dpforge.evaluation.images` and :mod:`dpforge.evaluation.series` compute, on one
page with the ledger and the membership attacks:

* utility: images, one-vs-rest macro AuROC of logistic regression on flattened pixels
  (:func:`~dpforge.evaluation.images.tstr_auroc`); series, accuracy of a random forest on the
  raw values (:func:`~dpforge.evaluation.series.tstr_accuracy`); each trained on synthetic
  records and on the real training records, scored on the same real test records;
* series: DTW distance from synthetic series to their nearest real training series, next to
  that of real test series (a synthetic series much closer than real test series are is a
  near copy); per-class mean and 10-90 % bands, synthetic next to real;
* images: a sample grid per class, synthetic next to real;
* membership attacks on flattened records (:func:`~dpforge.evaluation.attacks.array_matrix`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from dpforge.data.arrays import ArrayData
from dpforge.errors import DataError
from dpforge.evaluation import plots
from dpforge.evaluation.attacks import array_matrix, membership_attacks
from dpforge.evaluation.evaluate import NOT_PRIVATE_NOTICE, json_safe, model_privacy
from dpforge.evaluation.images import tstr_auroc
from dpforge.evaluation.report import (
    attack_html,
    esc,
    headline_html,
    img_html,
    ledger_html,
    page_html,
    table_html,
)
from dpforge.evaluation.series import nearest_by_dtw, tstr_accuracy
from dpforge.schema.array import ArraySchema

__all__ = ["array_report", "evaluate_arrays"]

MAX_DTW = 200  # series compared by DTW (each side), to keep the report minutes-fast


def _utility(schema: ArraySchema, train, test, synthetic, seed: int) -> dict[str, Any] | None:
    if schema.label is None:
        return None
    classes = tuple(schema.classes or ())
    if schema.kind == "image":
        low = min(c.lower for c in schema.channels)
        high = max(c.upper for c in schema.channels)

        def score(data):
            return tstr_auroc(data, test, classes, ("logistic",), seed, (low, high))["logistic"]

        measure = "macro AuROC (logistic regression)"
    else:

        def score(data):
            return tstr_accuracy(data, test, classes, ("random_forest",), seed)["random_forest"]

        measure = "accuracy (random forest)"
    syn, real = score(synthetic).value, score(train).value
    ratio = syn / real if real > 0 else float("nan")
    mean = {"synthetic": syn, "real": real, "ratio": ratio}
    return {
        "measure": measure,
        "label": schema.label,
        "mean": {k: {"auroc_macro": v} for k, v in mean.items()},
    }


def _dtw(train: ArrayData, test: ArrayData, synthetic: ArrayData, rng) -> dict[str, Any]:
    def pick(data: ArrayData) -> np.ndarray:
        idx = rng.choice(len(data), size=min(MAX_DTW, len(data)), replace=False)
        return data.values[np.sort(idx)]

    reference = pick(train)
    _, syn = nearest_by_dtw(pick(synthetic), reference)
    _, real = nearest_by_dtw(pick(test), reference)
    return {
        "synthetic_to_train_median": float(np.median(syn)),
        "synthetic_to_train_min": float(syn.min()),
        "test_to_train_median": float(np.median(real)),
        "test_to_train_min": float(real.min()),
        "series_compared": [len(syn), len(real), len(reference)],
    }


def evaluate_arrays(
    model: Any,
    real_train: ArrayData,
    real_test: ArrayData,
    seed: int = 0,
    n_synthetic: int | None = None,
    on_step: Callable[[str], None] | None = None,
) -> tuple[dict[str, Any], ArrayData]:
    """Utility, attacks, (series) DTW distances and the ledger of an image or series model, as
    a JSON-safe dict, and the synthetic records it sampled."""
    schema = model.schema_
    if not isinstance(schema, ArraySchema):
        raise DataError("evaluate_arrays needs an image or time-series model")
    step = on_step or (lambda name: None)
    synthetic = model.sample(len(real_train) if n_synthetic is None else n_synthetic, seed=seed)
    utility = _utility(schema, real_train, real_test, synthetic, seed)
    step("utility")
    dtw = None
    if schema.kind != "image":
        dtw = _dtw(real_train, real_test, synthetic, np.random.default_rng(seed))
        step("dtw")
    matrices = [array_matrix(d, schema) for d in (real_train, real_test, synthetic)]
    attacks = membership_attacks(*matrices, seed=seed, on_done=step)
    result = {
        "data_type": schema.kind,
        "notice": NOT_PRIVATE_NOTICE,
        "differentially_private": False,
        "rows": {
            "real_train": len(real_train),
            "real_test": len(real_test),
            "synthetic": len(synthetic),
        },
        "utility": utility,
        "fidelity": None,
        "dtw": dtw,
        "attacks": attacks,
        "privacy": model_privacy(model),
    }
    return json_safe(result), synthetic


def _pictures(schema: ArraySchema, real: ArrayData, synthetic: ArrayData) -> str:
    if schema.kind == "image":
        lower = np.array([c.lower for c in schema.channels]).reshape(1, -1, 1, 1)
        upper = np.array([c.upper for c in schema.channels]).reshape(1, -1, 1, 1)
        parts = []
        for name, data in (("synthetic", synthetic), ("real (training)", real)):
            scaled = (np.asarray(data.values, dtype=float) - lower) / (upper - lower)
            parts.append(
                f"<h3>{esc(name)} images</h3>"
                + img_html(plots.image_grid(scaled, data.labels), f"{name} grid")
            )
        return "\n".join(parts)
    return "\n".join(
        f"<h3>{esc(name)} series: per-class mean and 10-90% band</h3>"
        + img_html(
            plots.series_panels(np.asarray(data.values, dtype=float), data.labels, name),
            f"{name} bands",
        )
        for name, data in (("synthetic", synthetic), ("real (training)", real))
    )


def array_report(
    model: Any,
    real_train: ArrayData,
    real_test: ArrayData,
    seed: int = 0,
    n_synthetic: int | None = None,
    on_step: Callable[[str], None] | None = None,
) -> tuple[str, dict[str, Any]]:
    """The full (NOT differentially private) HTML report of an image or time-series model."""
    result, synthetic = evaluate_arrays(model, real_train, real_test, seed, n_synthetic, on_step)
    sections = [
        f"<h1>dpforge evaluation report: {esc(model.method)} {esc(result['data_type'])} model</h1>",
        f'<p class="warn">NOT DIFFERENTIALLY PRIVATE. {esc(NOT_PRIVATE_NOTICE)} Do not write it '
        "into the model folder.</p>",
        headline_html(model, result),
        ledger_html(model),
    ]
    utility = result["utility"]
    if utility is not None:
        mean = utility["mean"]
        sections.append(
            f"<h2>Utility: train on synthetic, test on real (label '{esc(utility['label'])}')</h2>"
            f"<p>{esc(utility['measure'])} on {result['rows']['real_test']} real test records.</p>"
            + table_html(
                ("trained on", "score"),
                [
                    ("synthetic", mean["synthetic"]["auroc_macro"]),
                    ("real training", mean["real"]["auroc_macro"]),
                    ("ratio", mean["ratio"]["auroc_macro"]),
                ],
            )
        )
    if result["dtw"] is not None:
        d = result["dtw"]
        sections.append(
            "<h2>Nearest real series by DTW</h2><p>Distance to the nearest real training series: "
            "synthetic series much closer than real test series are would be near copies.</p>"
            + table_html(
                ("series", "median", "minimum"),
                [
                    ("synthetic", d["synthetic_to_train_median"], d["synthetic_to_train_min"]),
                    ("real test", d["test_to_train_median"], d["test_to_train_min"]),
                ],
            )
        )
    sections += [_pictures(model.schema_, real_train, synthetic), attack_html(result)]
    return page_html("dpforge evaluation report (NOT differentially private)", sections), result
