"""A setting against the default in paired trials (issue 22; session 36's studies of
``class_rows=2`` and ``class_totals``): paired differences and the goal misses either way.

Reads the trials' JSON lines (``quality_trials.py --out``; default
``results/quality_trials_s36_rows.jsonl``), the new setting's runs by ``--new TAGS`` and the
default's by ``--base TAGS`` (comma lists; defaults ``s36-rows`` and ``s36-default``), and
pairs them by (table, epsilon, seed). A (table, epsilon, seed, setting) run twice must give
the same figures (checked; the repeat is dropped). Prints, per table x epsilon x metric, the
mean of each setting and the paired difference (new - default) with its standard error over
the seeds, marking a clear worsening (worse by more than 0.005 and more than 2 standard
errors); then the goal misses against the best of MST/AIM per column (``tables_summary.py``'s
peers) under either setting::

    python bench/paired_trials.py                 # class_rows=2, the tables
    python bench/paired_trials.py --seeds         # and each seed's pair
    python bench/paired_trials.py results/quality_trials_s36_rows.jsonl \
        results/quality_trials_s36_totals.jsonl --new s36-totals --base s36-default,s36-totals-off
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from statistics import mean, stdev

import harness
import tables_summary as ts

ROWS, DEFAULT = "new", "base"  # the two settings' keys
CLEAR = 0.005  # a clear worsening: worse by more than this and more than 2 standard errors


def paired(paths: list, new: tuple[str, ...], base: tuple[str, ...]) -> dict:
    """{(table, epsilon): {seed: {setting: run}}} of both settings (``new``'s and ``base``'s
    tags), repeats checked and dropped."""
    out: dict = {}
    setting = {**{t: ROWS for t in new}, **{t: DEFAULT for t in base}}
    for line in (line for p in paths for line in Path(p).read_text().splitlines()):
        r = json.loads(line)
        if r["tag"] not in setting:
            continue
        key = setting[r["tag"]]
        runs = out.setdefault((r["table"], r["epsilon"]), {}).setdefault(r["seed"], {})
        if key in runs:
            same = all(runs[key][m] == r[m] for m in ts.METRICS)
            print(f"repeat {r['table']} eps={r['epsilon']:g} seed={r['seed']} [{key}]: "
                  f"{'identical' if same else 'DIFFERS'}")  # fmt: skip
            continue
        runs[key] = r
    return out


def metrics_of(table: str) -> tuple[str, ...]:
    return (*ts.METRICS, "mlp_auc") if table == "thyroid" else ts.METRICS


def differences(seeds: dict, metric: str) -> tuple[list[int], list[float]]:
    both = sorted(s for s, runs in seeds.items() if len(runs) == 2)
    return both, [seeds[s][ROWS][metric] - seeds[s][DEFAULT][metric] for s in both]


def worse(metric: str, d: float) -> float:
    """How much worse a difference is (positive: worse)."""
    return d if metric in ts.LOWER else -d


def table_lines(pairs: dict, per_seed: bool) -> tuple[list[str], dict]:
    """The markdown rows of paired differences, and each (table, eps)'s means per setting."""
    head = "| table | ε | seeds | " + " | ".join(ts.METRICS) + " | mlp_auc |"
    lines = [head, "|" + "---|" * (len(ts.METRICS) + 4)]
    means = {}
    for (table, eps), seeds in sorted(pairs.items()):
        both, _ = differences(seeds, "tvd_1way")
        if not both:
            continue
        cells = []
        means[(table, eps)] = {ROWS: {}, DEFAULT: {}}
        for metric in (*ts.METRICS, "mlp_auc"):
            if metric not in metrics_of(table):
                cells.append("")
                continue
            _, d = differences(seeds, metric)
            a = mean(seeds[s][DEFAULT][metric] for s in both)
            b = mean(seeds[s][ROWS][metric] for s in both)
            means[(table, eps)][DEFAULT][metric], means[(table, eps)][ROWS][metric] = a, b
            se = stdev(d) / math.sqrt(len(d)) if len(d) > 1 else math.nan
            dm = mean(d)
            clear = worse(metric, dm) > CLEAR and worse(metric, dm) > 2 * se
            digits = 4 if metric in ts.LOWER else 3
            text = f"{a:.{digits}f} → {b:.{digits}f} ({dm:+.{digits}f} ± {se:.{digits}f})"
            cells.append(f"**{text} worse**" if clear else text)
        seeds_text = f"{both[0]}-{both[-1]}" if both == list(range(both[0], both[-1] + 1)) else \
            ",".join(map(str, both))  # fmt: skip
        lines.append(f"| {table} | {eps:g} | {seeds_text} | " + " | ".join(cells) + " |")
        if per_seed:
            for metric in metrics_of(table):
                _, d = differences(seeds, metric)
                per = " / ".join(
                    f"{seeds[s][DEFAULT][metric]:.3f}→{seeds[s][ROWS][metric]:.3f}" for s in both
                )
                lines.append(f"|  | | {metric} | {per} |")
    return lines, means


def goal_lines(means: dict, tables: list[str]) -> list[str]:
    """Each table x epsilon's misses under the default and class_rows (ours: the paired means
    where they exist, else tables_summary's default for both), and the totals."""
    out, totals = [], {DEFAULT: [0, 0.0], ROWS: [0, 0.0]}
    for name in tables:
        runs, _ = ts.runs_of(name)
        headline = "mlp_auc" if name == "thyroid" else "rf_auc"
        for eps in ts.epsilons(runs):
            found = ts.groups(runs, eps, headline)
            best = found.get("best of MST/AIM, each column")
            if not best or "dpforge" not in found:
                continue
            ours = means.get((name, eps))
            said = {}
            for tag in (DEFAULT, ROWS):
                figures = ours[tag] if ours else found["dpforge"]
                gaps = []
                for m in metrics_of(name):
                    if m not in figures or m not in best:
                        continue
                    gap = figures[m] - best[m] if m in ts.LOWER else best[m] - ts.SLACK - figures[m]
                    if gap > 5e-4:
                        gaps.append((m, gap))
                totals[tag][0] += len(gaps)
                totals[tag][1] += sum(g for _, g in gaps)
                said[tag] = "; ".join(f"{m} {g:.3f}" for m, g in gaps) or "none"
            source = "paired means" if ours else "unchanged (tables_summary's default)"
            out.append(f"- {name}, ε = {eps:g} ({source}): default: {said[DEFAULT]} | "
                       f"new: {said[ROWS]}")  # fmt: skip
    for tag in (DEFAULT, ROWS):
        out.append(f"- total, {tag}: {totals[tag][0]} misses, summed size {totals[tag][1]:.3f}")
    return out


def _option(argv: list[str], name: str, default: str) -> tuple[str, ...]:
    return tuple(argv[argv.index(name) + 1].split(",")) if name in argv else (default,)


def main(argv: list[str]) -> None:
    values = {argv[i + 1] for i, a in enumerate(argv[:-1]) if a in ("--new", "--base")}
    paths = [a for a in argv if not a.startswith("--") and a not in values]
    paths = paths or [harness.RESULTS / "quality_trials_s36_rows.jsonl"]
    pairs = paired(
        paths, _option(argv, "--new", "s36-rows"), _option(argv, "--base", "s36-default")
    )
    lines, means = table_lines(pairs, "--seeds" in argv)
    print("\n".join(lines))
    tables = ["adult", "thyroid", "psid", "nmes", "fair", "healthins", "wage"]
    print("\nGoal misses (how far beyond the goal), default | new:\n")
    print("\n".join(goal_lines(means, tables)))


if __name__ == "__main__":
    main(sys.argv[1:])
