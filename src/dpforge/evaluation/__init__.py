"""Evaluation of synthetic data: utility, fidelity, attacks and the report.

Each name lives in, and is imported from, its module (this package re-exports nothing, so a
module that needs no classifier, such as ``classifier_names`` read by the command line's help,
loads no scikit-learn):

- tables: ``dpforge.evaluation.utility`` (train on synthetic, test on real: ``tstr_auroc``,
  ``tstr_accuracy``, ``tstr_balanced_accuracy``, ``tstr_vs_real``, ``MetricResult``) and
  ``dpforge.evaluation.evaluate`` (``evaluate_table``: utility over a set of classifiers,
  fidelity from ``fidelity``, ``distances`` and ``association``, and the model's ledger, as
  one JSON-safe dict; also ``dpforge.evaluate_table``);
- images: ``dpforge.evaluation.images`` (``tstr_auroc``, ``tstr_cnn_accuracy``);
- time series: ``dpforge.evaluation.series`` (``tstr_accuracy``, DTW nearest neighbours and
  their plot);
- membership-inference attacks: ``dpforge.evaluation.attacks``; real rows of categories the DP
  threshold did not release: ``dpforge.evaluation.released``;
- the HTML report (full and release variants): ``dpforge.evaluation.report`` (tables) and
  ``dpforge.evaluation.array_report`` (images, series), figures from
  ``dpforge.evaluation.plots``; privacy–utility curves: ``dpforge.evaluation.curves``.
"""
