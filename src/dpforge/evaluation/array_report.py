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
* series: mean autocorrelation per lag, synthetic next to real training and real test series;
  the first synthetic series drawn over their nearest real series by DTW;
* images: a reference CNN trained here on the real training images
  (:mod:`dpforge.evaluation.reference`) judges the synthetic images: label fidelity overall and
  per class (does a sample generated for class c look like a c to it?), the Fréchet distance of
  its penultimate features to the real test images and its inception score, each next to the
  same score of real training images, with the classifier's own accuracy on the real test
  images (how far its judgement can be trusted);
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
from dpforge.evaluation.attacks import ATTACKS, array_matrix, membership_attacks
from dpforge.evaluation.evaluate import NOT_PRIVATE_NOTICE, json_safe, model_privacy
from dpforge.evaluation.images import tstr_auroc
from dpforge.evaluation.reference import ReferenceClassifier, frechet_distance
from dpforge.evaluation.report import (
    attack_html,
    esc,
    headline_html,
    img_html,
    ledger_html,
    model_description,
    page_html,
    table_html,
)
from dpforge.evaluation.series import (
    autocorrelation,
    nearest_by_dtw,
    nearest_figure,
    tstr_accuracy,
)
from dpforge.schema.array import ArraySchema

__all__ = ["array_report", "evaluate_arrays"]

MAX_DTW = 200  # series compared by DTW (each side), to keep the report minutes-fast
MAX_LAG = 24  # autocorrelation lags shown (capped at the series length - 1)
NEAREST_SHOWN = 6  # synthetic series drawn over their nearest real series


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


def _pixel_range(schema: ArraySchema) -> tuple[float, float]:
    return min(c.lower for c in schema.channels), max(c.upper for c in schema.channels)


def _reference_scores(
    schema: ArraySchema, train: ArrayData, test: ArrayData, synthetic: ArrayData, seed: int, step
) -> dict[str, Any] | None:
    """Label fidelity, Fréchet distance and inception score by a CNN trained on ``train``;
    real training images (as many as synthetic ones) give each score's real-data reference."""
    if schema.label is None:
        return None
    classes = tuple(schema.classes or ())
    reference = ReferenceClassifier(classes, seed=seed, pixel_range=_pixel_range(schema))
    reference.fit(train)
    step("reference classifier")
    rng = np.random.default_rng(seed)
    n = min(len(synthetic), len(train))
    chosen = np.sort(rng.choice(len(train), size=n, replace=False))
    real = ArrayData(train.values[chosen], None if train.labels is None else train.labels[chosen])
    test_features = reference.features(test, "real test")
    fidelity = reference.label_fidelity(synthetic)
    result = {
        "classifier": "CNN trained here on the real training images (not Inception)",
        "classifier_test_accuracy": reference.accuracy(test),
        "label_fidelity": fidelity.value,
        "label_fidelity_per_class": fidelity.details["per_class"],
        "label_fidelity_real_train": reference.label_fidelity(real).value,
        "chance": fidelity.details["chance"],
        "frechet_to_test": frechet_distance(reference.features(synthetic), test_features),
        "frechet_real_train_to_test": frechet_distance(
            reference.features(real, "real training"), test_features
        ),
        "inception_score": reference.inception_score(synthetic),
        "inception_score_real_train": reference.inception_score(real, "real training"),
        "images": {"synthetic": len(synthetic), "real_train": n, "real_test": len(test)},
    }
    step("label fidelity, Fréchet distance, inception score")
    return result


def _autocorrelation(train: ArrayData, test: ArrayData, synthetic: ArrayData) -> dict[str, Any]:
    curves = {
        name: autocorrelation(data.values, MAX_LAG)
        for name, data in (("synthetic", synthetic), ("real_train", train), ("real_test", test))
    }
    real = curves["real_train"]
    return {
        "lags": list(range(len(real))),
        **{name: curve.tolist() for name, curve in curves.items()},
        "mean_abs_diff_synthetic": float(np.abs(curves["synthetic"] - real)[1:].mean()),
        "mean_abs_diff_real_test": float(np.abs(curves["real_test"] - real)[1:].mean()),
    }


def evaluate_arrays(
    model: Any,
    real_train: ArrayData,
    real_test: ArrayData,
    seed: int = 0,
    n_synthetic: int | None = None,
    on_step: Callable[[str], None] | None = None,
    attacks: tuple[str, ...] = ATTACKS,
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
    dtw = acf = reference = None
    if schema.kind == "image":
        reference = _reference_scores(schema, real_train, real_test, synthetic, seed, step)
    else:
        dtw = _dtw(real_train, real_test, synthetic, np.random.default_rng(seed))
        step("dtw")
        acf = _autocorrelation(real_train, real_test, synthetic)
        step("autocorrelation")
    attack_result = None
    if attacks:
        matrices = [array_matrix(d, schema) for d in (real_train, real_test, synthetic)]
        attack_result = membership_attacks(*matrices, seed=seed, attacks=attacks, on_done=step)
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
        "autocorrelation": acf,
        "reference": reference,
        "attacks": attack_result,
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
            plots.series_panels(np.asarray(data.values, dtype=float), data.labels, name, colour),
            f"{name} bands",
        )
        for name, data, colour in (
            ("synthetic", synthetic, plots.SYNTHETIC),
            ("real (training)", real, plots.REAL),
        )
    )


def _autocorrelation_html(acf: dict[str, Any]) -> str:
    curves = [
        ("synthetic", np.asarray(acf["synthetic"])),
        ("real (training)", np.asarray(acf["real_train"])),
        ("real (test)", np.asarray(acf["real_test"])),
    ]
    return (
        "<h2>Autocorrelation</h2><p>Mean sample autocorrelation of the series at each lag: "
        "synthetic series should follow the real ones. Mean absolute difference from the real "
        "training series over lags 1 and up: synthetic "
        f"{acf['mean_abs_diff_synthetic']:.3f}, real test {acf['mean_abs_diff_real_test']:.3f} "
        "(the sampling noise between two real sets).</p>"
        + img_html(plots.autocorrelations(curves), "autocorrelation")
    )


def _nearest_html(real: ArrayData, synthetic: ArrayData, seed: int) -> str:
    rng = np.random.default_rng(seed)
    picked = np.sort(rng.choice(len(real), size=min(MAX_DTW, len(real)), replace=False))
    labels = None if real.labels is None else real.labels[picked]
    figure = nearest_figure(synthetic, ArrayData(real.values[picked], labels), NEAREST_SHOWN)
    return (
        "<h2>Synthetic series next to their nearest real series</h2><p>The first "
        f"{NEAREST_SHOWN} synthetic series (solid), each over its nearest series by DTW among "
        f"{len(picked)} real training series (dashed); a distance near 0 would be a near copy."
        "</p>" + img_html(plots.figure_uri(figure), "nearest real series")
    )


def _reference_html(ref: dict[str, Any]) -> str:
    per_class = [(name, value) for name, value in ref["label_fidelity_per_class"].items()]
    n = ref["images"]
    return (
        "<h2>Judged by a reference classifier</h2><p>A CNN trained here on the real training "
        "images (not Inception: no pretrained weights are used, so these values compare only "
        f"with each other) reaches accuracy {ref['classifier_test_accuracy']:.3f} on the "
        f"{n['real_test']} real test images. Label fidelity: share of images it assigns to "
        f"the class they were generated for (chance {ref['chance']:.3f}). Fréchet distance: "
        "between its penultimate features of the images and of the real test images (lower "
        "is closer). Inception score: exp E KL(p(y|x) || p(y)) of its class probabilities (up "
        f"to the number of classes). Real training images ({n['real_train']}, as many as "
        "synthetic ones where possible) give each score's real-data reference.</p>"
        + table_html(
            ("score", "synthetic", "real training images"),
            [
                ("label fidelity", ref["label_fidelity"], ref["label_fidelity_real_train"]),
                (
                    "Fréchet distance to real test",
                    ref["frechet_to_test"],
                    ref["frechet_real_train_to_test"],
                ),
                ("inception score", ref["inception_score"], ref["inception_score_real_train"]),
            ],
        )
        + "<h3>Label fidelity per class</h3>"
        + table_html(("requested class", "share labelled as requested"), per_class)
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
        f"<h1>dpforge evaluation report: {esc(result['data_type'])} model, "
        f"{esc(model_description(model))}</h1>",
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
    if result["autocorrelation"] is not None:
        sections.append(_autocorrelation_html(result["autocorrelation"]))
    if result["reference"] is not None:
        sections.append(_reference_html(result["reference"]))
    sections.append(_pictures(model.schema_, real_train, synthetic))
    if model.schema_.kind != "image":
        sections.append(_nearest_html(real_train, synthetic, seed))
    sections.append(attack_html(result))
    return page_html("dpforge evaluation report (NOT differentially private)", sections), result
