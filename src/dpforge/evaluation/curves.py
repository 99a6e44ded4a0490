"""Privacy–utility curves: the same method fitted at several ε, utility and attack AUC against ε.

Schwabedal et al. (2020) tune DP GANs with such plots. :func:`privacy_utility_curve` fits one
model per ε with a function the caller passes (so the method, its options and the seed are the
caller's, identical at every ε), evaluates each with
:func:`~dpforge.evaluation.evaluate.evaluate_table` on the same real rows, and keeps the
headline numbers; :func:`plot_curve` draws them. Reading such curves to choose ε or settings is
a use of private data: the choice is not covered by the ε of the model it selects unless the
curves were computed on public proxy data.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from dpforge.evaluation.attacks import ATTACKS
from dpforge.evaluation.evaluate import evaluate_table
from dpforge.evaluation.plots import figure_uri, plt

__all__ = ["curve_point", "plot_curve", "privacy_utility_curve"]


def curve_point(epsilon: float, metrics: dict[str, Any], fit_seconds: float) -> dict[str, Any]:
    """The headline numbers of one evaluation (a dict of ``evaluate_table``) at ``epsilon``."""
    utility = metrics["utility"]
    attacks = metrics["attacks"]
    per_classifier = {}
    if utility is not None:
        per_classifier = {
            name: s["synthetic"]["auroc_macro"] for name, s in utility["classifiers"].items()
        }
    return {
        "epsilon": epsilon,
        "epsilon_spent": None if metrics["privacy"] is None else metrics["privacy"]["epsilon"],
        "auroc_macro": None if utility is None else utility["mean"]["synthetic"]["auroc_macro"],
        "auroc_macro_real": None if utility is None else utility["mean"]["real"]["auroc_macro"],
        "auroc_per_classifier": per_classifier,
        "tvd_one_way": metrics["fidelity"]["tvd"]["mean_one_way"],
        "tvd_two_way": metrics["fidelity"]["tvd"]["mean_two_way"],
        "attack_auc": None
        if attacks is None
        else {name: a["auc"] for name, a in attacks["attacks"].items()},
        "fit_seconds": round(fit_seconds, 1),
    }


def privacy_utility_curve(
    fit: Callable[[float], Any],
    epsilons: Sequence[float],
    real_train: pd.DataFrame,
    real_test: pd.DataFrame,
    classifiers: Sequence[str] = ("lr", "rf"),
    attacks: Sequence[str] = ATTACKS,
    seed: int = 0,
    on_point: Callable[[dict[str, Any]], None] | None = None,
) -> list[dict[str, Any]]:
    """One point per ε: ``fit(epsilon)`` returns a fitted table model (trained on
    ``real_train``), evaluated on ``real_train`` / ``real_test``; ``on_point`` sees each point
    as it comes (to write results as they come)."""
    points = []
    for epsilon in epsilons:
        started = time.perf_counter()
        model = fit(epsilon)
        seconds = time.perf_counter() - started
        metrics = evaluate_table(
            model, real_train, real_test, classifiers=classifiers, seed=seed, attacks=attacks
        )
        point = curve_point(epsilon, metrics, seconds)
        points.append(point)
        if on_point is not None:
            on_point(point)
    return points


def _x(points: Sequence[dict[str, Any]]) -> tuple[np.ndarray, list[str]]:
    """ε on a log axis; ε = ∞ (no privacy) drawn one decade right of the largest finite ε."""
    finite = [p["epsilon"] for p in points if math.isfinite(p["epsilon"])]
    top = 10 * max(finite) if finite else 1.0
    x = np.array([p["epsilon"] if math.isfinite(p["epsilon"]) else top for p in points])
    labels = [f"{p['epsilon']:g}" if math.isfinite(p["epsilon"]) else "∞" for p in points]
    return x, labels


def plot_curve(points: Sequence[dict[str, Any]], title: str = "") -> str:
    """Utility (synthetic and real macro AuROC), 2-way TVD and attack AUC against ε, as a PNG
    data URI (see :func:`~dpforge.evaluation.plots.figure_uri`)."""
    points = sorted(points, key=lambda p: p["epsilon"])
    x, labels = _x(points)
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
    axes[0].plot(x, [p["auroc_macro"] for p in points], "o-", label="trained on synthetic")
    axes[0].plot(x, [p["auroc_macro_real"] for p in points], "k--", label="trained on real")
    axes[0].set_ylabel("macro AuROC on real test rows")
    axes[1].plot(x, [p["tvd_two_way"] for p in points], "o-", label="2-way")
    axes[1].plot(x, [p["tvd_one_way"] for p in points], "s-", label="1-way")
    axes[1].set_ylabel("mean TVD to real training rows")
    attacks = points[0]["attack_auc"] or {}
    for name in attacks:
        axes[2].plot(x, [p["attack_auc"][name] for p in points], "o-", label=name)
    axes[2].axhline(0.5, color="grey", linestyle=":", label="guessing")
    axes[2].set_ylabel("membership attack AUC")
    for ax in axes:
        ax.set_xscale("log")
        ax.set_xticks(x, labels)
        ax.minorticks_off()
        ax.set_xlabel("ε")
        ax.legend(fontsize=8)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return figure_uri(fig)
