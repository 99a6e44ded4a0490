"""Evaluation of synthetic data: utility (train on synthetic, test on real), fidelity, privacy."""

from dpsynth.evaluation.utility import (
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
