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

__all__ = [
    "MetricResult",
    "evaluate_table",
    "tstr_accuracy",
    "tstr_auroc",
    "tstr_balanced_accuracy",
    "tstr_vs_real",
]


def __getattr__(name: str):
    """The names above on first use (PEP 562), as ``dpforge`` does with ``Synthesizer``: a
    module of this package that needs no classifier (``dpforge.evaluation.classifier_names``,
    read by the command line's help) does not load scikit-learn."""
    if name == "evaluate_table":
        from dpforge.evaluation.evaluate import evaluate_table

        return evaluate_table
    if name in __all__:
        from dpforge.evaluation import utility

        return getattr(utility, name)
    raise AttributeError(f"module 'dpforge.evaluation' has no attribute {name!r}")
