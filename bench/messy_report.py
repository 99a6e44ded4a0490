"""The Markdown of bench/messy_tables.py: one line per table x epsilon x method (x sampler),
means and standard deviations over the seeds run, and the seed count of each line."""

from __future__ import annotations

import statistics
from collections import defaultdict
from typing import Any

TITLE = "Side by side on messy public tables (issue 21): dpforge, MST, AIM"
FIGURES = ("tvd_1way", "tvd_2way", "rf_auc", "lr_auc")
ORDER = {"dpforge": 0, "mst": 1, "aim": 2, "nonprivate": 3, "real": 4}


def missing_gaps(run: dict[str, Any]) -> tuple[float, float]:
    """Largest |synthetic - real| empty-cell rate over the nullable columns: overall, and over
    the columns x label classes."""
    overall, by_class = [0.0], [0.0]
    for pair in run.get("missing", {}).values():
        for key, real in pair["real"].items():
            gap = abs(pair["synthetic"].get(key, float("nan")) - real)
            (overall if key == "all" else by_class).append(gap)
    return max(overall), max(by_class)


def _cell(values: list[float]) -> str:
    if not values:
        return "-"
    if len(values) == 1:
        return f"{values[0]:.3f}"
    return f"{statistics.mean(values):.3f} ± {statistics.stdev(values):.3f}"


def _eps(value: Any) -> str:
    return "-" if value is None else ("inf" if value in ("inf", float("inf")) else f"{value:g}")


def markdown(runs: list[dict[str, Any]]) -> list[str]:
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for run in runs:
        key = (run["table"], _eps(run["epsilon"]), run["method"], run.get("sampler") or "")
        groups[key].append(run)
    lines = [
        "Mean ± standard deviation over the seeds run (column `seeds`). TVD: to the real "
        "training rows, the empty cell counted; `real`: the real test rows' TVD to the training "
        "rows (sampling noise). AUC: train on the synthetic rows, test on the real test rows. "
        "`missing gap`: the largest |synthetic − real| empty-cell rate over the nullable "
        "columns, overall and per label class (`real`: test rows against training rows).",
        "",
        "| table | ε | method | sampler | seeds | TVD 1-way | TVD 2-way | RF AUC | LR AUC | "
        "missing gap | missing gap per class | fit s (wall) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    ordered = sorted(groups, key=lambda k: (k[0], k[1], ORDER.get(k[2], 9), k[3]))
    failures = []
    for key in ordered:
        ok = [r for r in groups[key] if r.get("status") == "ok"]
        failures += [r for r in groups[key] if r.get("status") != "ok"]
        if not ok:
            continue
        figures = [_cell([r[f] for r in ok if r.get(f) is not None]) for f in FIGURES]
        gaps = [missing_gaps(r) for r in ok]
        fit = _cell([r["fit_seconds"] for r in ok if r.get("fit_seconds") is not None])
        lines.append(
            f"| {' | '.join(key)} | {len(ok)} | {' | '.join(figures)} | "
            f"{_cell([g[0] for g in gaps])} | {_cell([g[1] for g in gaps])} | {fit} |"
        )
    lines += ["", "Missed comparisons (planned: 3 seeds of every method, dpforge/MST/AIM at ε = 1 "
              "and 3):", ""] + missed(runs)  # fmt: skip
    for r in failures:
        lines.append("")
        lines.append(f"- FAILED: {r['table']} ε={_eps(r['epsilon'])} {r['method']} seed "
                     f"{r['seed']}: {r.get('note')}")  # fmt: skip
    return lines


def missed(runs: list[dict[str, Any]]) -> list[str]:
    """One line per planned (table, epsilon, method) with fewer than 3 seeds that ran."""
    tables = sorted({r["table"] for r in runs})
    plan = [(m, e) for m in ("dpforge", "mst", "aim") for e in ("1", "3")]
    plan += [("nonprivate", "inf"), ("real", "-")]
    lines = []
    for table in tables:
        for method, eps in plan:
            seeds = {r["seed"] for r in runs if r.get("status") == "ok" and r["table"] == table
                     and r["method"] == method and _eps(r["epsilon"]) == eps}  # fmt: skip
            if len(seeds) < 3:
                lines.append(f"- {table} ε={eps} {method}: {len(seeds)} of 3 seeds")
    return lines or ["- none"]
