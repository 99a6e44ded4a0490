"""The full (NOT differentially private) report of an image or time-series model.

What :mod:`dpforge.evaluation.images` and :mod:`dpforge.evaluation.series` compute, on one
page with the ledger and the membership attacks: utility, a classifier trained on synthetic
records and on the real training records, each scored on the same real test records; the
kind's own measurements and pictures, synthetic next to real (images: a reference CNN's
judgement and sample grids, :mod:`dpforge.kinds.image_report`; series: DTW distances,
autocorrelation, bands and nearest real series, :mod:`dpforge.kinds.series_report`); and
membership attacks on flattened records (:func:`~dpforge.evaluation.attacks.array_matrix`).
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
from dpforge.kinds.array_report import ArrayReport
from dpforge.kinds.reports import report_of
from dpforge.schema.array import ArraySchema

__all__ = ["array_report", "evaluate_arrays"]


def _utility(
    schema: ArraySchema, report: ArrayReport, train, test, synthetic, seed: int
) -> dict[str, Any] | None:
    if schema.label is None:
        return None
    syn = report.score(schema, synthetic, test, seed)
    real = report.score(schema, train, test, seed)
    ratio = syn / real if real > 0 else float("nan")
    mean = {"synthetic": syn, "real": real, "ratio": ratio}
    return {
        "measure": report.measure,
        "label": schema.label,
        "mean": {k: {"auroc_macro": v} for k, v in mean.items()},
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
    report = report_of(schema)
    utility = _utility(schema, report, real_train, real_test, synthetic, seed)
    step("utility")
    measured = {"dtw": None, "autocorrelation": None, "reference": None}
    measured |= report.extras(schema, (real_train, real_test, synthetic), seed, step)
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
        **measured,
        "attacks": attack_result,
        "privacy": model_privacy(model),
    }
    return json_safe(result), synthetic


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
    report = report_of(model.schema_)
    sections.append(report.pictures(model.schema_, real_train, synthetic))
    sections += report.closing(real_train, synthetic, seed)
    sections.append(attack_html(result))
    return page_html("dpforge evaluation report (NOT differentially private)", sections), result
