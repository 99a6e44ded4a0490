"""The summary of bench/related.py: means (and spread) over seeds per pair, arm and ε, and
issue 45's goal per pair: at ε = 3, parent x child 2-way TVD and child-count TVD at least as
good as the flattened baseline, and the parent-level task within 0.02 AUC of SDV's HMA."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import numpy as np

from lib import harness

__all__ = ["summary"]

METRICS = (
    ("table_tvd_1way", "TVD 1-way"), ("table_tvd_2way", "TVD 2-way"),
    ("parent_child_tvd", "parent x child TVD"), ("child_count_tvd", "child-count TVD"),
    ("task_auc_synthetic", "task AUC"), ("attack_auc", "attack AUC"),
    ("fit_seconds", "fit s"), ("sample_seconds", "sample s"),
)  # fmt: skip
READING = [
    "Arms (`bench/lib/related_arms.py`): `dpforge` the RelationalSynthesizer at ε; `flat` the "
    "child joined with its parent (a childless parent one row with empty child columns), the "
    "single-table default with the parent key as its privacy unit and the same k, split back "
    "with each sampled row one parent and its child (the flat table holds no key to group "
    "children by: its child-count TVD measures what flattening loses); `alone` each table at "
    "ε / 2, children given random parents; `hma` SDV's HMA, non-private, fitted on the "
    "training tables cut to k; `real` the held-out parents' real tables (the floor: two "
    "samples of the same population differ too; its task AUC is the real baseline).",
    "",
    "Every figure compares with the real training parents (a third of the parents held out, "
    "seed 0, for the task and the attack); TVDs are means over tables, pairs or children; "
    "task AUC is the mean of logistic regression and a random forest (macro AuROC on the "
    "held-out parents); attack AUC is the distance-to-closest-record attack on parents "
    "(0.5: guessing). Fit and sample seconds on 2 cores shared with other jobs. HMA's tables "
    "barely change with the seed given (SDV 2.0 seeds its per-table samplers itself), so "
    "its spread is mostly the classifiers'.",
    "",
]
GOAL_EPSILON = 3.0
AUC_MARGIN = 0.02


def _groups(rows: list[dict]) -> dict[tuple, dict[str, list[float]]]:
    out: dict[tuple, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    seen = set()
    for row in rows:
        key = (row["pair"], row["arm"], row["epsilon"])
        if (*key, row["seed"]) in seen:  # a run made twice (two processes): the first counts
            continue
        seen.add((*key, row["seed"]))
        for metric, _ in METRICS:
            if row.get(metric) is not None:
                out[key][metric].append(float(row[metric]))
        out[key]["seeds"].append(row["seed"])
    return out


def _cell(values: list[float] | None) -> str:
    if not values:
        return "n/a"
    mean = float(np.mean(values))
    return f"{mean:.3f} ± {np.std(values):.3f}" if len(values) > 1 else f"{mean:.3f}"


def _table(groups) -> list[str]:
    lines = ["| pair | arm | ε | seeds | " + " | ".join(n for _, n in METRICS) + " |",
             "|" + " --- |" * (4 + len(METRICS))]  # fmt: skip
    for (pair, arm, eps), values in sorted(groups.items(), key=lambda kv: _order(kv[0])):
        cells = [_cell(values.get(m)) for m, _ in METRICS]
        seeds = ",".join(str(s) for s in sorted(values["seeds"]))
        lines.append(f"| {pair} | {arm} | {eps or '∞'} | {seeds} | " + " | ".join(cells) + " |")
    return lines


def _order(key: tuple) -> tuple:
    pair, arm, eps = key
    arms = ("dpforge", "flat", "alone", "hma", "real")
    return (pair, eps is None, eps or 0, arms.index(arm) if arm in arms else 9)


def _mean(groups, key, metric) -> float | None:
    values = groups.get(key, {}).get(metric)
    return float(np.mean(values)) if values else None


def goal(groups, pair: str) -> list[str]:
    """The goal's three checks on ``pair``: hit or miss, and by how much."""
    ours, flat, hma = (
        (pair, "dpforge", GOAL_EPSILON),
        (pair, "flat", GOAL_EPSILON),
        (pair, "hma", None),
    )
    lines = []
    for metric, name in (("parent_child_tvd", "parent x child TVD"),
                         ("child_count_tvd", "child-count TVD")):  # fmt: skip
        a, b = _mean(groups, ours, metric), _mean(groups, flat, metric)
        if a is None or b is None:
            lines.append(f"| {pair} | {name} <= flat | n/a | not run |")
            continue
        verdict = "hit" if a <= b else "miss"
        lines.append(
            f"| {pair} | {name} <= flat | {a:.3f} vs {b:.3f} | {verdict} by {abs(b - a):.3f} |"
        )
    a, b = _mean(groups, ours, "task_auc_synthetic"), _mean(groups, hma, "task_auc_synthetic")
    if a is None or b is None:
        lines.append(f"| {pair} | task AUC >= HMA - {AUC_MARGIN} | n/a | not run |")
    else:
        verdict = "hit" if a >= b - AUC_MARGIN else "miss"
        lines.append(f"| {pair} | task AUC >= HMA - {AUC_MARGIN} | {a:.3f} vs {b:.3f} | "
                     f"{verdict} (difference {a - b:+.3f}) |")  # fmt: skip
    return lines


def summary(log: Path, out: Path) -> None:
    """Write ``out`` (JSON: the means per group) and its Markdown from the runs in ``log``."""
    rows = harness.read_jsonl(log)
    groups = _groups(rows)
    pairs = sorted({r["pair"] for r in rows})
    body = [*READING, "Means ± standard deviation over the seeds listed (ε ∞: non-private)."]
    body += [""]
    body += [*_table(groups), "", f"## Goal (ε = {GOAL_EPSILON:g}, means over seeds)", ""]
    body += ["| pair | check | dpforge vs baseline | result |", "| --- | --- | --- | --- |"]
    for pair in pairs:
        body += goal(groups, pair)
    provenance = {k: v for k, v in harness.provenance("related.py").items() if k != "command"}
    record = {
        **provenance,  # of the summary; each run's command is in its row of the log
        "runs": len(rows),
        "groups": [{"pair": p, "arm": a, "epsilon": e, **{m: v for m, v in vals.items()}}
                   for (p, a, e), vals in groups.items()],
    }  # fmt: skip
    harness.write_results(out, record, "Related tables (issue 45)", body)
