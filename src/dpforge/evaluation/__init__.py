"""Evaluation of synthetic data: utility (train on synthetic, test on real).

Tables: the functions below (``dpforge.evaluation.utility``), and ``evaluate_table``
(``dpforge.evaluation.evaluate``: utility over a set of classifiers, fidelity from
``fidelity``, ``distances`` and ``association``, and the model's ledger, as one JSON-safe dict).
Images:
``dpforge.evaluation.images`` (``tstr_auroc``, ``tstr_cnn_accuracy``). Time series:
``dpforge.evaluation.series`` (``tstr_accuracy``, DTW nearest neighbours and their plot).
Membership-inference attacks: ``dpforge.evaluation.attacks``. Real rows of categories the DP
threshold did not release: ``dpforge.evaluation.released``. The HTML report (full and release
variants): ``dpforge.evaluation.report`` (tables) and ``dpforge.evaluation.array_report``
(images, series), figures from ``dpforge.evaluation.plots``. Privacy–utility curves:
``dpforge.evaluation.curves``.
"""

from dpforge.evaluation.evaluate import evaluate_table
from dpforge.evaluation.utility import (
    MetricResult,
    tstr_accuracy,
    tstr_auroc,
    tstr_balanced_accuracy,
    tstr_vs_real,
)

__all__ = [
    "MetricResult",
    "evaluate_table",
    "tstr_accuracy",
    "tstr_auroc",
    "tstr_balanced_accuracy",
    "tstr_vs_real",
]
