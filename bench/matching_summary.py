"""Matched against unmatched rows of the same fits, per table and epsilon (issue 22).

Reads our default's runs (``bench_tables.py``'s ``tables_<name>.json`` and, for Adult, the
trials' JSON lines with tag ``matched``), each of which scored the matched rows (the default)
and the same fit's draws as they come (``unmatched``, ``move=False``), and prints one markdown
row per table and epsilon: means over the seeds, matched / unmatched.

    python bench/matching_summary.py wage healthins fair nmes psid thyroid adult
"""

from __future__ import annotations

import json
import sys
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


if __name__ == "__main__":
    print(table(sys.argv[1:]))
