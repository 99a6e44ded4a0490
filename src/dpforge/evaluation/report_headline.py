"""The headline of a report (epsilon, utility, the strongest attack) and its plain-words verdict
(rules of thumb, stated as such).
"""

from __future__ import annotations

import math
from typing import Any

from dpforge.evaluation.report_html import _fmt, esc
from dpforge.evaluation.report_privacy import model_description


def verdict(
    epsilon: float,
    utility_ratio: float | None,
    attack_auc: float | None,
    floor_auc: float | None = None,
) -> list[str]:
    """Plain-words reading of the headline numbers (rules of thumb, stated as such).

    ``attack_auc`` is read against the attacks' floor: pass the strongest AUC above its own
    floor (``max_auc_over_floor``) and the highest floor, so that a difference between the
    training and held-out files is not taken for leakage."""
    words = []
    if not math.isfinite(epsilon):
        words.append("No privacy guarantee: this model was trained without differential privacy.")
    elif epsilon <= 1:
        words.append(f"Strong formal guarantee (ε = {epsilon:.2f} ≤ 1).")
    elif epsilon <= 5:
        words.append(f"Moderate formal guarantee (ε = {epsilon:.2f}).")
    else:
        words.append(f"Weak formal guarantee (ε = {epsilon:.2f} > 5): read it as a ceiling only.")
    if utility_ratio is not None:
        if utility_ratio >= 0.95:
            words.append(
                "Classifiers trained on the synthetic data score about as well as on real data."
            )
        elif utility_ratio >= 0.85:
            words.append(
                "Classifiers trained on the synthetic data score somewhat below real data."
            )
        else:
            words.append(
                "Classifiers trained on the synthetic data score clearly below real data: "
                "check whether it is good enough for its intended use."
            )
    if attack_auc is not None:
        if attack_auc <= 0.55:
            words.append("The membership attacks do no better than guessing (AUC ≤ 0.55).")
        elif attack_auc <= 0.6:
            words.append("The membership attacks see a weak signal (AUC ≤ 0.6).")
        else:
            words.append(
                f"A membership attack reaches AUC {attack_auc:.2f}: records of the training data "
                "can be recognised. Do not publish without review."
            )
    if floor_auc is not None and floor_auc > 0.55:
        words.append(
            f"The attacks read AUC up to {floor_auc:.2f} even when the release is real training "
            "rows that are not targets: part of what they see is a difference between the "
            "training and held-out files, not membership. The attack figure above is read "
            "against that floor."
        )
    words.append(
        "Thresholds used: ε ≤ 1 strong, ≤ 5 moderate; utility ratio ≥ 0.95 / 0.85; attack AUC "
        "(above its floor) ≤ 0.55 / 0.6. They are rules of thumb, not guarantees."
    )
    return words


# -- the headline --------------------------------------------------------------------------
def headline_html(model: Any, result: dict | None) -> str:
    report = model.privacy_spent()
    rows = [
        ("what ran", model_description(model)),
        (
            "ε (PLD, reported)",
            _fmt(report.epsilon_pld if report.epsilon_pld is not None else report.epsilon),
        ),
        ("ε (RDP)", _fmt(report.epsilon_rdp)),
        ("δ", f"{model.delta:g}"),
    ]
    ratio = auc = floor = None
    if result is not None:
        utility = result["utility"]
        if utility is not None:
            mean = utility["mean"]
            ratio = mean["ratio"]["auroc_macro"]
            rows.append(
                (
                    f"utility ({utility.get('measure', 'macro AuROC, mean of classifiers')})",
                    f"synthetic {_fmt(mean['synthetic']['auroc_macro'])} / real "
                    f"{_fmt(mean['real']['auroc_macro'])} (ratio {_fmt(ratio)})",
                )
            )
        if result["fidelity"] is not None:
            tvd = result["fidelity"]["tvd"]["mean_one_way"]
            rows.append(("fidelity (mean 1-way TVD)", _fmt(tvd)))
        reference = result.get("reference")
        if reference is not None:
            rows.append(
                (
                    "label fidelity (reference CNN)",
                    f"{_fmt(reference['label_fidelity'])} (real training images "
                    f"{_fmt(reference['label_fidelity_real_train'])}, chance "
                    f"{_fmt(reference['chance'])})",
                )
            )
        if result["attacks"] is not None:
            attacks = result["attacks"]
            auc = attacks.get("max_auc_over_floor", attacks["max_auc"])
            floor = attacks.get("max_floor_auc")
            rows.append(
                (
                    "strongest membership attack",
                    f"AUC {_fmt(attacks['max_auc'])}, TPR at 1% FPR "
                    f"{_fmt(attacks['max_tpr_at_1pct_fpr'])}; floor (real non-target "
                    f"training rows released) {_fmt(floor)}",
                )
            )
    body = "".join(f"<tr><td><b>{esc(k)}</b></td><td>{esc(v)}</td></tr>" for k, v in rows)
    words = (
        "".join(f"<li>{esc(w)}</li>" for w in verdict(report.epsilon, ratio, auc, floor))
        if result is not None
        else ""
    )
    verdict_html = f"<h3>Verdict</h3><ul>{words}</ul>" if words else ""
    return f'<div class="headline"><h2>Headline</h2><table>{body}</table>{verdict_html}</div>'
