"""One markdown table of every benchmark table's rows (issue 22: every table, not an average).

Reads ``bench/results/tables_<name>.json`` (written by ``bench_tables.py --out``) and prints,
per table and epsilon, our default, the better-by-RF-AUC sampler of MST and of AIM where they
ran, and the real rows, with the gaps of ours to the best peer:

    python bench/tables_summary.py psid nmes fair healthins wage
"""

from __future__ import annotations

import json
import sys
from statistics import mean

import harness

METRICS = ("tvd_1way", "tvd_2way", "rf_auc", "lr_auc", "rf_bal_acc", "lr_bal_acc")


def averaged(runs: list[dict]) -> dict:
    """Mean of each metric over the seeds of one method and sampler; n and fit seconds."""
    out = {m: mean(r[m] for r in runs) for m in METRICS}
    out["n"] = len(runs)
    out["fit"] = mean(r.get("fit_cpu_seconds") or r["fit_seconds"] or 0 for r in runs)
    out["cpu"] = all(r.get("fit_cpu_seconds") is not None for r in runs)
    return out


def groups(doc: dict, epsilon) -> dict[str, dict]:
    """{label: averaged figures} of one epsilon: ours, each peer's better sampler, real."""
    ok = [r for r in doc["runs"] if r["status"] == "ok"]
    found = {}
    for method in ("dpforge", "mst", "aim"):
        samplers = {}
        for r in ok:
            if r["method"] == method and r["epsilon"] == epsilon:
                samplers.setdefault(r.get("sampler"), []).append(r)
        if samplers:
            best = max(samplers.items(), key=lambda kv: mean(r["rf_auc"] for r in kv[1]))
            label = method if best[0] is None else f"{method.upper()} ({best[0]})"
            found[label] = averaged(best[1])
    real = [r for r in ok if r["method"] == "real"]
    if real:
        found["real rows"] = averaged(real)
    return found


def lines(name: str) -> list[str]:
    doc = json.loads((harness.RESULTS / f"tables_{name}.json").read_text())
    n = doc["data"][name]["n_train"]
    out = []
    for epsilon in sorted({r["epsilon"] for r in doc["runs"] if r["epsilon"] is not None}):
        found = groups(doc, epsilon)
        for label, f in found.items():
            fit = "" if label == "real rows" else f"{f['fit']:.0f} s{' CPU' if f['cpu'] else ''}"
            out.append(
                f"| {name} ({n:,} rows), {epsilon:g} | {label} | {f['n']} | "
                f"{f['tvd_1way']:.3f} | {f['tvd_2way']:.3f} | {f['rf_auc']:.3f} | "
                f"{f['lr_auc']:.3f} | {f['rf_bal_acc']:.3f} | {f['lr_bal_acc']:.3f} | {fit} |"
            )
    return out


def main(names: list[str]) -> None:
    print("| table, ε | method | seeds | 1-way TVD | 2-way TVD | RF AUC | LR AUC | RF bal. acc. "
          "| LR bal. acc. | fit |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name in names:
        print("\n".join(lines(name)))


if __name__ == "__main__":
    main(sys.argv[1:])
