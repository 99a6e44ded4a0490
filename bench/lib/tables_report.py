"""The report of tables.py: tables per dataset x epsilon, checks against AIM and the
issue's targets, and how to read them (the Markdown body under the harness header)."""

from __future__ import annotations

from typing import Any

from lib.stats import fmt, mean_std
from lib.tables_runs import DATASETS, EPSILONS, GANS, METHOD_ORDER, PEERS, SAMPLE_SEED, SAMPLERS

TITLE = "Issue 10, part 5: side-by-side benchmark of tables"
LABELS = {
    "dpforge": "dpforge (default)",
    "dpcgan": "dpcgan",
    "dpwgan": "dpwgan",
    "gswgan": "gswgan",
    "mst": "MST",
    "aim": "AIM",
    "real": "real data",
}


def columns(dataset: str) -> list[tuple[str, str, int]]:
    """(run key, header, digits) of a dataset's table."""
    cols = [("mlp_auc", "MLP macro AuROC", 3)] if dataset == "thyroid" else []
    auc = "macro AuROC" if dataset == "thyroid" else "AUC"
    cols += [
        ("tvd_1way", "1-way TVD", 3),
        ("tvd_2way", "2-way TVD", 3),
        ("rf_auc", f"RF {auc}", 3),
        ("rf_bal_acc", "RF bal. acc.", 3),
        ("lr_auc", f"LR {auc}", 3),
        ("lr_bal_acc", "LR bal. acc.", 3),
        ("fit_seconds", "fit s", 0),
        ("epsilon_spent", "ε spent", 2),
    ]
    return cols


def primary(dataset: str) -> str:
    """The score that picks the better peer sampler (the issue's headline utility figure)."""
    return "mlp_auc" if dataset == "thyroid" else "rf_auc"


def rows(doc: dict[str, Any], dataset: str, epsilon: float) -> list[dict[str, Any]]:
    """One row per method (peers: per sampler), in METHOD_ORDER: label, stats, notes."""
    out = []
    for method in METHOD_ORDER:
        for sampler in SAMPLERS if method in PEERS else (None,):
            eps = None if method == "real" else epsilon
            runs = [
                r
                for r in doc["runs"]
                if (r["dataset"], r["epsilon"], r["method"], r.get("sampler"))
                == (dataset, eps, method, sampler)
            ]
            if not runs:
                continue
            ok = sorted((r for r in runs if r["status"] == "ok"), key=lambda r: r["seed"])
            label = LABELS[method] + (f" ({sampler})" if sampler else "")
            stats = {
                key: mean_std([r.get(key) for r in ok]) if ok else None
                for key, _, _ in columns(dataset)
            }
            notes = [
                f"seed {r['seed']}: {r['status']} ({r.get('note', '')})"
                for r in runs
                if r["status"] != "ok"
            ]
            settings = sorted({r["setting"] for r in ok})
            out.append(
                {
                    "method": method,
                    "sampler": sampler,
                    "label": label,
                    "stats": stats,
                    "n": len(ok),
                    "seeds": [r["seed"] for r in ok],
                    "notes": notes,
                    "settings": settings,
                }
            )
    for method in PEERS:  # mark the better sampler (by the primary score's mean)
        pair = [r for r in out if r["method"] == method and r["stats"].get(primary(dataset))]
        if len(pair) == 2:
            best = max(pair, key=lambda r: r["stats"][primary(dataset)]["mean"])
            best["label"] += " ★"
    return out


def table(doc: dict[str, Any], dataset: str, epsilon: float) -> list[str]:
    """The Markdown table of one dataset x epsilon: a row per method (and sampler)."""
    cols = columns(dataset)
    head = ["method", "n", *[h for _, h, _ in cols]]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in rows(doc, dataset, epsilon):
        if row["n"] == 0:
            lines.append(
                f"| {row['label']} | 0 | " + "; ".join(row["notes"]) + " |" + " |" * (len(cols) - 1)
            )
            continue
        cells = [fmt(row["stats"][key], digits) for key, _, digits in cols]
        lines.append(f"| {row['label']} | {row['n']} | " + " | ".join(cells) + " |")
    return lines


def checks(doc: dict[str, Any], dataset: str, epsilon: float) -> list[str]:
    """Our default against the better AIM sampler, metric by metric, and the issue's targets."""
    table_rows = {(r["method"], r["sampler"]): r for r in rows(doc, dataset, epsilon)}
    ours = table_rows.get(("dpforge", None))
    if ours is None or ours["n"] == 0:
        return []
    out = []
    aims = [table_rows[k] for k in (("aim", s) for s in SAMPLERS) if k in table_rows]
    aims = [r for r in aims if r["n"]]
    if aims:
        best = max(aims, key=lambda r: r["stats"][primary(dataset)]["mean"])
        verdicts = []
        for key, head, _ in columns(dataset):
            if key == "epsilon_spent":
                continue
            a, b = ours["stats"][key], best["stats"][key]
            lower_better = key.startswith("tvd") or key == "fit_seconds"
            good = a["mean"] <= b["mean"] if lower_better else a["mean"] >= b["mean"]
            verdicts.append(
                f"{head} {'≥' if good else '<'} AIM"
                if not lower_better
                else f"{head} {'at or below' if good else 'above'} AIM"
            )
        speed = best["stats"]["fit_seconds"]["mean"] / max(
            ours["stats"]["fit_seconds"]["mean"], 1e-9
        )
        out.append(
            f"- dpforge vs {best['label'].removesuffix(' ★')}: "
            + "; ".join(verdicts)
            + f" (means; fit {speed:.1f}× faster than AIM)."
        )
    targets = {
        ("adult", 1.0): [("rf_auc", ">=", 0.845), ("tvd_1way", "<=", 0.02)],
        ("adult", 3.0): [("rf_auc", ">=", 0.86)],
        ("thyroid", 3.7): [("mlp_auc", ">=", 0.98)],
    }
    for key, op, value in targets.get((dataset, epsilon), []):
        mean = ours["stats"][key]["mean"]
        met = mean >= value if op == ">=" else mean <= value
        out.append(
            f"- Issue 10 target {key} {op} {value}: dpforge {mean:.3f} "
            f"({'met' if met else 'NOT met'})."
        )
    return out


def markdown(doc: dict[str, Any]) -> list[str]:
    """The Markdown body under the harness header: commands, versions, notes, tables."""
    lines = [
        "All commands that wrote this file (a resumed run keeps the earlier runs):",
        "",
        *[command_entry(c) for c in doc["commands"]],
        "",
        "Versions: " + ", ".join(f"{k} {val}" for k, val in doc["versions"].items()) + ".",
    ]
    for method, pv in sorted(doc["peer_versions"].items()):
        lines.append(
            f"Peer {method.upper()} (own venv): "
            + ", ".join(f"{k} {val}" for k, val in pv.items())
            + "."
        )
    return [*lines, "", *method_notes(doc), "", *sections(doc)]


def command_entry(entry: dict[str, Any]) -> str:
    """One command that wrote the file: date, command, minutes, code state."""
    git = entry.get("git") or {}
    state = f", at {git['commit'][:10]}" if git.get("commit") else ""
    if git.get("changed"):
        state += " with uncommitted changes to " + ", ".join(line[3:] for line in git["changed"])
    return f"- {entry['date']}: `{entry['command']}` ({entry['wall_seconds'] / 60:.1f} min{state})"


def sections(doc: dict[str, Any]) -> list[str]:
    """The tables: one section per dataset x epsilon."""
    lines = []
    for dataset in DATASETS:
        epsilons = sorted(
            {
                r["epsilon"]
                for r in doc["runs"]
                if r["dataset"] == dataset and r["epsilon"] is not None
            }
        )
        if not epsilons and any(r["dataset"] == dataset for r in doc["runs"]):
            epsilons = EPSILONS[dataset]
        info = doc["data"].get(dataset, {})
        for epsilon in epsilons:
            lines += [
                f"## {dataset.capitalize()}, ε = {epsilon:g}, δ = {doc['delta']:g}",
                "",
                f"{info.get('n_train', '?')} training rows, {info.get('n_test', '?')} test "
                "rows; mean ± std over the n seeds.",
                "",
                *table(doc, dataset, epsilon),
                "",
                *checks(doc, dataset, epsilon),
                *settings_notes(doc, dataset, epsilon),
                "",
            ]
    return lines


def settings_notes(doc: dict[str, Any], dataset: str, epsilon: float) -> list[str]:
    """Notes under a table: capped GAN epochs, failed or skipped seeds."""
    out = []
    for row in rows(doc, dataset, epsilon):
        if row["method"] in GANS and row["settings"]:
            out.append(f"- {row['label']}: {'; '.join(row['settings'])}.")
        if row["notes"] and row["n"]:
            out.append(f"- {row['label']}: " + "; ".join(row["notes"]) + ".")
    return out


def method_notes(doc: dict[str, Any]) -> list[str]:
    """How to read the tables."""
    return [
        "How to read it:",
        "",
        f"- 1-way / 2-way TVD: mean total-variation distance of every 1-way and 2-way marginal "
        f"to the real TRAINING rows, on the public cells of `marginal_fidelity` "
        f"({doc['eval_bins']} per numeric column). Lower is better.",
        "- RF / LR: random forest (200 trees) and logistic regression trained on the synthetic "
        "rows, tested on the real test rows (`dpforge.evaluation.utility`). Adult: AUC of "
        "'>50K'; Thyroid: one-vs-rest macro AuROC, and the MLP (the issue's Thyroid figure) "
        "first. bal. acc.: balanced accuracy (mean recall over the classes) at the argmax.",
        "- fit s: wall clock of `fit` (ours) or the fit time smartnoise reports (peers, "
        "possibly from the cache, i.e. from an earlier run on the same machine). ε spent: "
        "the ledger's (PLD when it applies), metadata included; the peers spend their target.",
        "- dpforge (default): `Synthesizer(schema, epsilon, delta, seed)`, marginal anchoring "
        "(the default for tables). dpcgan, dpwgan, gswgan: `anchor=None`, library defaults "
        "unless the epochs are capped (said under each table).",
        f"- MST, AIM: smartnoise-synth in its own venv on the same public schema, "
        f"{doc['peer_bins']} public cells per numeric column, decoded to values inside the "
        "cells; 'default' is smartnoise's sampler, 'iid' i.i.d. rows from the fitted "
        "Private-PGM model (same fit). ★ marks the better sampler by the table's headline "
        "utility score (Adult RF AUC, Thyroid MLP AuROC); dpforge is compared with that one.",
        "- real data: the real training rows as the synthetic set (classifier seeds vary); its "
        "TVD is the real TEST rows' against the training rows (sampling noise, for scale).",
        "- Synthetic sets have as many rows as the training table; seed s fits with seed s and "
        f"samples with seed {SAMPLE_SEED} + s. The test rows never train, tune or select.",
    ]


def summary_line(run: dict[str, Any], dataset: str) -> str:
    """One run's figures on one console line."""
    parts = [
        f"{h} {run[k]:.{max(d, 3) if k != 'fit_seconds' else 0}f}"
        for k, h, d in columns(dataset)
        if run.get(k) is not None
    ]
    if run.get("cached") is not None:
        parts.append("cached" if run["cached"] else "fitted now")
    return ", ".join(parts)
