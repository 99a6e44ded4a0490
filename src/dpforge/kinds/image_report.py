"""An image model's part of the reports (:func:`dpforge.kinds.reports.report_of`).

Utility is the one-vs-rest macro AuROC of logistic regression on flattened pixels
(:func:`~dpforge.evaluation.images.tstr_auroc`). A reference CNN trained on the real training
images (:mod:`dpforge.evaluation.reference`) judges the synthetic ones: label fidelity overall
and per class, the Fréchet distance of its penultimate features to the real test images and
its inception score, each next to the same score of real training images, with the
classifier's own accuracy on the real test images. The pictures are sample grids per class.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dpforge.data.arrays import ArrayData
from dpforge.evaluation import plots
from dpforge.evaluation.images import tstr_auroc
from dpforge.evaluation.reference import ReferenceClassifier, frechet_distance
from dpforge.evaluation.report_html import esc, img_html
from dpforge.kinds.array_report import ArrayReport, Step
from dpforge.schema.array import ArraySchema

__all__ = ["ImageReport"]


class ImageReport(ArrayReport):
    """Images: logistic AuROC, the reference CNN's scores, sample grids."""

    measure = "macro AuROC (logistic regression)"

    def score(self, schema: ArraySchema, data: ArrayData, test: ArrayData, seed: int) -> float:
        classes = tuple(schema.classes or ())
        scores = tstr_auroc(data, test, classes, ("logistic",), seed, _pixel_range(schema))
        return scores["logistic"].value

    def extras(
        self,
        schema: ArraySchema,
        data: tuple[ArrayData, ArrayData, ArrayData],
        seed: int,
        step: Step,
    ) -> dict[str, Any]:
        """The reference CNN's scores (``reference``)."""
        return {"reference": _reference_scores(schema, *data, seed, step)}

    def pictures(self, schema: ArraySchema, real: ArrayData, synthetic: ArrayData) -> str:
        parts = []
        for name, data in (("synthetic", synthetic), ("real (training)", real)):
            parts.append(
                f"<h3>{esc(name)} images</h3>"
                + img_html(plots.image_grid(_scaled(schema, data), data.labels), f"{name} grid")
            )
        return "\n".join(parts)

    def release_picture(self, schema: ArraySchema, data: ArrayData, seed: int) -> str:
        picture = plots.image_grid(_scaled(schema, data), data.labels)
        return f"<h2>Synthetic images (seed {seed})</h2>" + img_html(
            picture, "synthetic image grid"
        )


def _scaled(schema: ArraySchema, data: ArrayData) -> np.ndarray:
    """The images in [0, 1] by the schema's public channel ranges."""
    lower = np.array([c.lower for c in schema.channels]).reshape(1, -1, 1, 1)
    upper = np.array([c.upper for c in schema.channels]).reshape(1, -1, 1, 1)
    return (np.asarray(data.values, dtype=float) - lower) / (upper - lower)


def _pixel_range(schema: ArraySchema) -> tuple[float, float]:
    return min(c.lower for c in schema.channels), max(c.upper for c in schema.channels)


def _reference_scores(
    schema: ArraySchema,
    train: ArrayData,
    test: ArrayData,
    synthetic: ArrayData,
    seed: int,
    step: Step,
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
