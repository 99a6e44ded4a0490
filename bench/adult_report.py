"""The report of bench_adult.py: console table and the Markdown body, with the paper's figures
(Frigerio et al. 2019) and the findings computed from the cells."""

from __future__ import annotations

import math
from typing import Any

from adult_runs import DEFAULT_EPSILON
from stats import fmt

TITLE = "UCI Adult, balanced classes: random forest trained on synthetic, tested on real"

# Frigerio et al. 2019, Adult with balanced classes, random-forest accuracy (%).
PAPER = {
    ("dpwgan", 3.0): 73.7,
    ("dpwgan+decay", 3.0): 75.3,
    ("dpwgan", 7.0): 75.0,
    ("dpwgan+decay", 7.0): 76.0,
    ("real", None): 77.2,
}


def _mean(stat: dict[str, float] | None) -> str:
    return "-" if stat is None else f"{stat['mean']:.3f}"


def paper_figure(variant: str, epsilon: float | None) -> str:
    """The paper's accuracy for a cell, or "-"."""
    value = PAPER.get((variant, epsilon))
    return "-" if value is None else f"{value:.1f}"


def print_table(cells: list[dict], real: dict | None, eval_name: str) -> None:
    """The results on the console."""
    print(f"\nRandom forest trained on synthetic rows, tested on {eval_name} (mean ± std)")
    head = f"{'method':<14} {'eps':>4} {'accuracy %':>14} {'paper':>6} {'bal. acc %':>14} "
    print(
        head + f"{'AUC':>15} {'eps PLD':>8} {'eps RDP':>8} {'steps':>6} {'sigma':>6} {'fit s':>6}"
    )
    for c in cells:
        if "error" in c:
            print(f"{c['variant']:<14} {c['epsilon']:>4g} FAILED: {c['error']}")
            continue
        s, r0 = c["summary"], c["runs"][0]
        print(
            f"{c['variant']:<14} {c['epsilon']:>4g} {fmt(s['accuracy'], 1, 100):>14} "
            f"{paper_figure(c['variant'], c['epsilon']):>6} "
            f"{fmt(s['balanced_accuracy'], 1, 100):>14} {fmt(s['auc'], 3):>15} "
            f"{_mean(s['epsilon_pld']):>8} {_mean(s['epsilon_rdp']):>8} "
            f"{r0['steps']:>6} {r0['noise_multiplier']:>6.3f} {s['fit_seconds']['mean']:>6.0f}"
        )
    if real:
        s = real["summary"]
        print(
            f"{'real data':<14} {'-':>4} {fmt(s['accuracy'], 1, 100):>14} "
            f"{paper_figure('real', None):>6} {fmt(s['balanced_accuracy'], 1, 100):>14} "
            f"{fmt(s['auc'], 3):>15}"
        )


def markdown(result: dict[str, Any], tuning: list[dict]) -> list[str]:
    """The Markdown body under the harness header: data, privacy, results, findings."""
    return [
        f"Total wall time {result['wall_seconds'] / 60:.1f} min.",
        "",
        *data_section(result),
        *privacy_section(result),
        *results_table(result),
        *findings_section(result),
        *configurations(result),
        *(["", *tuning_markdown(tuning)] if tuning else []),
    ]


def data_section(result: dict[str, Any]) -> list[str]:
    """Where the rows came from and how they were balanced."""
    data = result["data"]
    train_attrs = data["train_file"]
    lines = [
        "## Data",
        "",
        f"- Training: adult.data, {train_attrs['rows_read']} rows; "
        f"{train_attrs['rows_dropped_missing']} rows with a missing value ('?') dropped, leaving "
        f"{train_attrs['rows_before_balancing']}; the '<=50K' class subsampled (seeded) to the "
        f"size of '>50K': {train_attrs['rows']} rows {train_attrs['class_counts']}.",
    ]
    if "test_file" in data:
        t = data["test_file"]
        lines.append(
            f"- Test: adult.test, {t['rows_read']} rows; {t['rows_dropped_missing']} dropped "
            f"for a missing value, leaving {t['rows_before_balancing']}; balanced the same way "
            f"(an independent seeded draw): {t['rows']} rows {t['class_counts']}. On a 50/50 "
            "test set accuracy equals balanced accuracy, and a constant guess scores 50 %."
        )
    return [
        *lines,
        f"- Evaluation set: {data['evaluation_set']} ({data['n_eval']} rows); synthetic rows per "
        f"fit: {data['n_train']} (the training set's size). Seeds: {result['seeds']} (model, "
        "sampling and forest seeds; the balanced subsample is the same for every seed).",
        "- Classifier: scikit-learn RandomForestClassifier(200 trees), features encoded from the "
        'public schema (`dpforge.evaluation.utility`, `classifier="rf"`). AUC is the ROC AUC '
        "of the '>50K' probability.",
        "",
    ]


def privacy_section(result: dict[str, Any]) -> list[str]:
    """What the epsilon covers (metadata included) and what it does not."""
    return [
        "## Privacy",
        "",
        f"- Target (ε, δ = {result['delta']}), metadata included: the bounds of fnlwgt and "
        f"capital-loss are estimated under DP with a {result['metadata_share']:.0%} share of the "
        "budget; every other bound and every category list is public (UCI code book, census "
        "extraction rules and CPS top-codes, see `dpforge.datasets.adult.adult_schema`). The label "
        "prior is uniform and free: the 50/50 split is the benchmark's construction, not a "
        "statistic of the records.",
        "- The guarantee is with respect to the balanced training table. Dropping rows with "
        "missing values and balancing read the private file and are outside it (the benchmark's "
        "set-up, not a release pipeline).",
        "- ε spent is the ledger's: PLD (reported) and RDP, from what each run actually did.",
        "- Hyperparameters were chosen on a validation split of the balanced adult.data (see "
        "Tuning); that selection is NOT accounted in ε, and adult.test was "
        "never used for it.",
        "",
    ]


def results_table(result: dict[str, Any]) -> list[str]:
    """One row per (variant, epsilon), then real data and the methods skipped."""
    lines = [
        "## Results (mean ± std over seeds)",
        "",
        "| method | ε target | RF accuracy % | paper % | balanced accuracy % | AUC | ε spent PLD "
        "| ε spent RDP | steps | σ | q | epochs | fit s |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for c in result["cells"]:
        if "error" in c:
            lines.append(f"| {c['variant']} | {c['epsilon']:g} | failed: {c['error']} |")
            continue
        s, r0 = c["summary"], c["runs"][0]
        lines.append(
            f"| {c['variant']} | {c['epsilon']:g} | {fmt(s['accuracy'], 1, 100)} | "
            f"{paper_figure(c['variant'], c['epsilon'])} | "
            f"{fmt(s['balanced_accuracy'], 1, 100)} | {fmt(s['auc'])} | "
            f"{fmt(s['epsilon_pld'])} | {fmt(s['epsilon_rdp'])} | {r0['steps']} | "
            f"{r0['noise_multiplier']:.3f} | {r0['sample_rate']:.4f} | {r0['epochs']:.1f} | "
            f"{fmt(s['fit_seconds'], 0)} |"
        )
    if result.get("real"):
        s = result["real"]["summary"]
        lines.append(
            f"| real data | - | {fmt(s['accuracy'], 1, 100)} | {paper_figure('real', None)} | "
            f"{fmt(s['balanced_accuracy'], 1, 100)} | {fmt(s['auc'])} | - | - | - | - | - | - | - |"
        )
    for skip in result["skipped"]:
        lines.append(f"| {skip['method']} | - | {skip['note']} |")
    return lines


def findings_section(result: dict[str, Any]) -> list[str]:
    """The comparison with the paper, and the findings computed from the cells."""
    return [
        "",
        "Paper: Frigerio et al. 2019 (dp-GAN with / without clipping decay, Adult with balanced "
        "classes, random-forest accuracy), as quoted in design.md section 6. Their ε comes from "
        "their own accountant and, as far as we know, covers training only (our ε includes the "
        "DP metadata); their networks, preprocessing and forest are not ours. Compare the "
        "ordering and the gap to real data rather than the decimals.",
        "",
        "## Reading the results",
        "",
        *findings(result),
    ]


def configurations(result: dict[str, Any]) -> list[str]:
    """Each variant's changes from its config defaults, and the bounds it used."""
    lines = ["", "## Configurations (the reported run)", ""]
    for c in result["cells"]:
        if "error" in c:
            continue
        bounds = "DP bounds" if math.isfinite(c["epsilon"]) else "bounds read from the data"
        lines += [f"- **{c['variant']}** (ε = {c['epsilon']:g}): `{c['changes']}` over the "
                  f"defaults; {bounds} {c['runs'][0]['dp_bounds']}"]  # fmt: skip
    return lines


def _cell(result: dict[str, Any], variant: str, epsilon: float) -> dict[str, Any] | None:
    """The summary of a (variant, epsilon) cell that ran."""
    for c in result["cells"]:
        if c["variant"] == variant and c["epsilon"] == epsilon and "summary" in c:
            return c["summary"]
    return None


def _gap(a: dict[str, Any], b: dict[str, Any], metric: str, scale: float) -> str:
    """'a - b = x ± se' with the standard error of the difference of two means."""
    sa, sb = a[metric], b[metric]
    se = math.sqrt(sa["std"] ** 2 / sa["n"] + sb["std"] ** 2 / sb["n"])
    diff = sa["mean"] - sb["mean"]
    return f"{diff * scale:+.{1 if scale > 1 else 3}f} ± {se * scale:.{1 if scale > 1 else 3}f}"


def findings(result: dict[str, Any]) -> list[str]:
    """Bullet points computed from this run's cells (differences with their standard errors)."""
    out = []
    for eps in sorted({c["epsilon"] for c in result["cells"] if math.isfinite(c["epsilon"])}):
        plain, decay = _cell(result, "dpwgan", eps), _cell(result, "dpwgan+decay", eps)
        if plain and decay:
            out.append(
                f"- Clipping decay at ε = {eps:g}: accuracy {_gap(decay, plain, 'accuracy', 100)} "
                f"points, AUC {_gap(decay, plain, 'auc', 1)} (with minus without, ± standard "
                "error of the difference)."
            )
    if any(c["variant"] == "dpwgan+decay" for c in result["cells"]):
        out.append(
            "- Why decay can do little here: in a tuning run (validation split, B = 128, 1,877 "
            "steps) every real record's critic gradient was above C = 1 at every step (median "
            "norm 3.7-5.7, clipped fraction 1.00). The critic's optimizer is Adam, which is "
            "invariant to a common scale of its gradients, and the noise std follows C_t "
            "(σ C_t), so decaying C only "
            'rescales signal and noise together. Decay can matter with `optimizer="sgd"` '
            "(where it is a learning-rate decay as well) or when C starts above the norms; with "
            "SGD, decay was worse in tuning rows 10-11 and better in rows 27-28, and both SGD "
            "pairs stayed below Adam without decay (row 20)."
        )
    private = [e for e in (3.0, 7.0) if _cell(result, "dpwgan", e)]
    free = _cell(result, "dpwgan", math.inf)
    if private and free:
        gaps = "; ".join(
            f"ε = {e:g}: accuracy {_gap(_cell(result, 'dpwgan', e), free, 'accuracy', 100)} "
            f"points, AUC {_gap(_cell(result, 'dpwgan', e), free, 'auc', 1)}"
            for e in private
        )
        real = (result.get("real") or {}).get("summary")
        to_real = f" (real data: AUC {fmt(real['auc'])})" if real else ""
        out.append(
            f"- The same dpwgan without privacy (σ = 0, C = ∞, same steps; the two undeclared "
            f"bounds read from the data) scores {fmt(free['accuracy'], 1, 100)} % accuracy, AUC "
            f"{fmt(free['auc'])}{to_real}. Private minus non-private: {gaps}. Most of the gap "
            "to real data is the GAN's own, not the privacy noise's, and the accuracy of a "
            "short run's final generator varies a lot between seeds, private or not (its AUC "
            "much less: the forest's threshold moves); longer runs did not help on validation "
            "(tuning rows 34-37)."
        )
    cgan = _cell(result, "dpcgan", DEFAULT_EPSILON)
    if cgan:
        out.append(
            f"- dpcgan's AUC ({fmt(cgan['auc'])}) varies far less than its accuracy "
            f"({fmt(cgan['accuracy'], 1, 100)} %): its synthetic rows rank test rows well, but "
            "the forest's 0.5 threshold sits in a different place from seed to seed."
        )
    return out or ["- (no cells to compare)"]


def tuning_markdown(rows: list[dict]) -> list[str]:
    """The tuning log as a table."""
    out = [
        "## Tuning (validation split of balanced adult.data; adult.test never read)",
        "",
        "Fit on 80 % (12,012 rows) of the balanced adult.data, scored on the other 20 % (3,004 "
        "rows) with the same random forest; accuracy and AUC are means over the seeds (0, 1, "
        "...). In order of trial; the epochs fix the number of steps, the accountant sets σ.",
        "",
        "| # | variant | ε | change from defaults | seeds | steps | σ | accuracy % | AUC | fit s "
        "| note |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for i, r in enumerate(rows, start=1):
        out.append(
            f"| {i} | {r['variant']} | {r['epsilon']:g} | `{r['changes']}` | {r['seeds']} | "
            f"{r['steps']} | {r['sigma']:.3f} | {r['accuracy'] * 100:.1f} | {r['auc']:.3f} | "
            f"{r['fit_seconds']:.0f} | {r.get('note', '')} |"
        )
    return out
