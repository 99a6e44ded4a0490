"""Matched against unmatched rows of the same fits, per table and epsilon (issue 22).

Reads our default's runs (``bench_tables.py``'s ``tables_<name>.json`` and, for Adult, the
trials' JSON lines with tag ``matched``), each of which scored the matched rows (the default)
and the same fit's draws as they come (``unmatched``, ``move=False``), and prints one markdown
row per table and epsilon: means over the seeds, matched / unmatched.

    python bench/matching_summary.py wage healthins fair nmes psid thyroid adult

With ``--trials FILE`` it reads ``matching_trials.py``'s JSON lines instead and prints, per
table and epsilon, each variant's means over the seeds side by side (one fit per seed, every
variant sampled from it with the same seed)::

    python bench/matching_summary.py --trials results/matching_balance.jsonl \
        --variants random-order,sorted,repeats,unmatched adult thyroid psid nmes fair healthins wage
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from statistics import mean

import harness

KEYS = ("tvd_1way", "tvd_2way", "rf_auc", "lr_auc", "rf_bal_acc", "lr_bal_acc")


def runs(name: str) -> list[dict]:
    """Our default's runs of one table that scored the unmatched draws too."""
    if name == "adult":
        lines = (harness.RESULTS / "quality_trials.jsonl").read_text().splitlines()
        rows = [json.loads(line) for line in lines]
        rows = [r for r in rows if r["table"] == name and r["tag"] in ("matched", "np-matched")]
    else:
        doc = json.loads((harness.RESULTS / f"tables_{name}.json").read_text())
        rows = [r for r in doc["runs"] if r["method"] == "dpforge" and r["status"] == "ok"]
    return [r for r in rows if "unmatched" in r]


def table(names: list[str]) -> str:
    head = "| table | ε | seeds | " + " | ".join(KEYS) + " | sample CPU s |"
    lines = [head, "|" + "---|" * (len(KEYS) + 4)]
    for name in names:
        by_eps: dict[float, list[dict]] = {}
        for r in runs(name):
            by_eps.setdefault(float(r["epsilon"]), []).append(r)
        for eps, rows in sorted(by_eps.items()):
            cells = []
            for k in KEYS:
                ours, plain = mean(r[k] for r in rows), mean(r["unmatched"][k] for r in rows)
                better = ours < plain if k.startswith("tvd") else ours > plain
                mark = "**" if better and abs(ours - plain) > 1e-9 else ""
                cells.append(f"{mark}{ours:.4f}{mark} / {plain:.4f}")
            cpu = mean(r.get("sample_cpu_seconds", float("nan")) for r in rows)
            row = f"| {name} | {eps:g} | {len(rows)} | " + " | ".join(cells)
            lines.append(row + f" | {cpu:.1f} |")
    return "\n".join(lines)


def variants_table(path: str, names: list[str], variants: list[str]) -> str:
    """Per table, epsilon and variant: the means over the seeds of the trials' rows."""
    rows = [json.loads(line) for line in Path(path).read_text().splitlines()]
    head = "| table | ε | variant | seeds | " + " | ".join(KEYS) + " | sample CPU s |"
    lines = [head, "|" + "---|" * (len(KEYS) + 5)]
    for name in names:
        for eps in sorted({float(r["epsilon"]) for r in rows if r["table"] == name}):
            for tag in variants:
                got = [r for r in rows if r["table"] == name and r["tag"] == tag
                       and float(r["epsilon"]) == eps]  # fmt: skip
                if not got:
                    continue
                cells = [f"{mean(r[k] for r in got):.4f}" for k in KEYS]
                cpu = mean(r.get("sample_cpu_seconds", float("nan")) for r in got)
                lead = f"| {name} | {eps:g} | {tag} | {len(got)} | "
                lines.append(lead + " | ".join(cells) + f" | {cpu:.1f} |")
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("tables", nargs="+")
    p.add_argument("--trials", help="matching_trials.py's JSON lines")
    p.add_argument("--variants", default="repeats,unmatched")
    args = p.parse_args()
    if args.trials:
        print(variants_table(args.trials, args.tables, args.variants.split(",")))
    else:
        print(table(args.tables))


if __name__ == "__main__":
    main()
