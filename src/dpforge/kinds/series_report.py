"""A time-series model's part of the reports (:func:`dpforge.kinds.reports.report_of`).

Utility is the accuracy of a random forest on the raw values
(:func:`~dpforge.evaluation.series.tstr_accuracy`). The DTW distance from synthetic series to
their nearest real training series sits next to that of real test series (a synthetic series
much closer than real test series are is a near copy); the mean autocorrelation per lag of
synthetic series next to real training and test series. The pictures are per-class mean and
10-90 % bands, and the first synthetic series drawn over their nearest real series by DTW.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dpforge.data.arrays import ArrayData
from dpforge.evaluation import plots
from dpforge.evaluation.report_html import esc, img_html
from dpforge.evaluation.series import (
    autocorrelation,
    nearest_by_dtw,
    nearest_figure,
    tstr_accuracy,
)
from dpforge.kinds.array_report import ArrayReport, Step
from dpforge.schema.array import ArraySchema

__all__ = ["MAX_DTW", "MAX_LAG", "NEAREST_SHOWN", "SeriesReport"]

MAX_DTW = 200  # series compared by DTW (each side), to keep the report minutes-fast
MAX_LAG = 24  # autocorrelation lags shown (capped at the series length - 1)
NEAREST_SHOWN = 6  # synthetic series drawn over their nearest real series


class SeriesReport(ArrayReport):
    """Series: random-forest accuracy, DTW distances, autocorrelation, bands."""

    measure = "accuracy (random forest)"

    def score(self, schema: ArraySchema, data: ArrayData, test: ArrayData, seed: int) -> float:
        classes = tuple(schema.classes or ())
        return tstr_accuracy(data, test, classes, ("random_forest",), seed)["random_forest"].value

    def extras(
        self,
        schema: ArraySchema,
        data: tuple[ArrayData, ArrayData, ArrayData],
        seed: int,
        step: Step,
    ) -> dict[str, Any]:
        """The DTW distances (``dtw``) and the autocorrelations (``autocorrelation``)."""
        dtw = _dtw(*data, np.random.default_rng(seed))
        step("dtw")
        acf = _autocorrelation(*data)
        step("autocorrelation")
        return {"dtw": dtw, "autocorrelation": acf}

    def pictures(self, schema: ArraySchema, real: ArrayData, synthetic: ArrayData) -> str:
        return "\n".join(
            f"<h3>{esc(name)} series: per-class mean and 10-90% band</h3>"
            + img_html(
                plots.series_panels(
                    np.asarray(data.values, dtype=float), data.labels, name, colour
                ),
                f"{name} bands",
            )
            for name, data, colour in (
                ("synthetic", synthetic, plots.SYNTHETIC),
                ("real (training)", real, plots.REAL),
            )
        )

    def closing(self, real: ArrayData, synthetic: ArrayData, seed: int) -> list[str]:
        """The first synthetic series over their nearest real training series."""
        return [_nearest_html(real, synthetic, seed)]

    def release_picture(self, schema: ArraySchema, data: ArrayData, seed: int) -> str:
        values = np.asarray(data.values, dtype=float)
        return f"<h2>Synthetic series (seed {seed})</h2>" + img_html(
            plots.series_panels(values, data.labels, "synthetic"),
            "synthetic series: mean and 10-90% band",
        )


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
