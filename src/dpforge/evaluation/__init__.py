"""Evaluation of synthetic data: utility (train on synthetic, test on real).

Tables: the functions below (``dpforge.evaluation.utility``). Images:
``dpforge.evaluation.images`` (``tstr_auroc``, ``tstr_cnn_accuracy``). Time series:
``dpforge.evaluation.series`` (``tstr_accuracy``, DTW nearest neighbours and their plot).
"""

from dpforge.evaluation.utility import (
    MetricResult,
    tstr_accuracy,
    tstr_auroc,
    tstr_balanced_accuracy,
    tstr_vs_real,
)

__all__ = [
    "MetricResult",
    "tstr_accuracy",
    "tstr_auroc",
    "tstr_balanced_accuracy",
    "tstr_vs_real",
]
