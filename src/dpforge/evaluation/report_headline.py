"""The headline of a report (epsilon, utility, the strongest attack) and its plain-words verdict
(rules of thumb, stated as such).
"""

from __future__ import annotations

import math
from typing import Any

from dpforge.evaluation.report_html import _fmt, esc
from dpforge.evaluation.report_privacy import model_description

SMALL_TARGETS = 500  # below this many members, the verdict says the attack AUC is rough


def verdict(
    epsilon: float,
    utility_ratio: float | None,
    attack_auc: float | None,
    floor_auc: float | None = None,
    strongest_auc: float | None = None,
    targets: int | None = None,
) -> list[str]:
    """Plain-words reading of the headline numbers (rules of thumb, stated as such).

    ``attack_auc`` is read against the attacks' floor: pass the strongest AUC above its own
    floor (``max_auc_over_floor``) and the highest floor, so that a difference between the
    training and held-out files is not taken for leakage. ``strongest_auc``: the strongest
    attack's own AUC, as the headline shows it, so the verdict names the same figure;
    ``targets``: members (= non-members) attacked, for the small-sample caveat."""
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
        words.append(_attack_words(attack_auc, floor_auc, strongest_auc))
    if floor_auc is not None and floor_auc > 0.55:
        words.append(
            f"The attacks read AUC up to {floor_auc:.2f} even when the release is real training "
            "rows that are not targets: part of what they see is a difference between the "
            "training and held-out files, not membership. The attack figure above is read "
            "against that floor."
        )
    if targets is not None and targets < SMALL_TARGETS:
        words.append(
            f"The attacks ran on only {targets} members and {targets} non-members: at that size "
            f"guessing alone gives an AUC anywhere within 0.5 ± {guessing_spread(targets):.2f} "
            "(95 %), so read the attack figures as rough."
        )
    words.append(
        "Thresholds used: ε ≤ 1 strong, ≤ 5 moderate; utility ratio ≥ 0.95 / 0.85; attack AUC "
        "(above its floor) ≤ 0.55 / 0.6. They are rules of thumb, not guarantees."
    )
    return words


def guessing_spread(targets: int) -> float:
    """Half-width of the 95 % range of the AUC that guessing gives with ``targets`` members
    and as many non-members (the Mann-Whitney statistic's standard error under no signal)."""
    return 1.96 * math.sqrt((2 * targets + 1) / (12 * targets * targets))


def _attack_words(over_floor: float, floor: float | None, strongest: float | None) -> str:
    """The attack line of the verdict: the AUC above the floor, named beside the headline's."""
    seen = ""
    if strongest is not None and floor is not None and abs(strongest - over_floor) > 0.005:
        seen = (
            f"The strongest attack reaches AUC {strongest:.2f} against a floor of {floor:.2f}, "
            f"so {over_floor - 0.5:+.2f} above guessing once the floor is taken off: "
        )
    if over_floor <= 0.55:
        return seen + "the membership attacks do no better than guessing (AUC ≤ 0.55)."
    if over_floor <= 0.6:
        return seen + "the membership attacks see a weak signal (AUC ≤ 0.6)."
    return seen + (
        f"a membership attack reaches AUC {over_floor:.2f}: records of the training data can "
        "be recognised. Do not publish without review."
    )


# -- the headline --------------------------------------------------------------------------
def _other_epsilon(report: Any) -> float | None:
    """The ε of the accountant that does not report (None where it cannot analyse the run)."""
    return report.epsilon_pld if report.accountant == "rdp" else report.epsilon_rdp


def headline_html(model: Any, result: dict | None) -> str:
    report = model.privacy_spent()
    rows = [
        ("what ran", model_description(model)),
        (f"ε ({report.accountant.upper()}, reported)", _fmt(report.epsilon)),
        ("ε (PLD)" if report.accountant == "rdp" else "ε (RDP)", _fmt(_other_epsilon(report))),
        ("δ", f"{model.delta:g}"),
    ]
    ratio = auc = floor = strongest = targets = None
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
            strongest, targets = attacks["max_auc"], attacks["targets"]["members"]
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
        "".join(
            f"<li>{esc(w)}</li>"
            for w in verdict(report.epsilon, ratio, auc, floor, strongest, targets)
        )
        if result is not None
        else ""
    )
    verdict_html = f"<h3>Verdict</h3><ul>{words}</ul>" if words else ""
    return f'<div class="headline"><h2>Headline</h2><table>{body}</table>{verdict_html}</div>'
