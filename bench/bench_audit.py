"""Empirical privacy audits of the code paths a fit really runs, each with planted defects.

    cd <repo> && PYTHONPATH=$PWD/src OMP_NUM_THREADS=1 nice -n 10 python bench/bench_audit.py

Writes bench/results/audit.json (every result as it comes) and bench/results/audit.md.

* releases (:mod:`dpforge.audit.releases`): the table marginals of the first anchoring round,
  the fine histograms that place numeric cells, the images' per-class moments and principal
  subspace, the mean embedding, and the DP label prior (a metadata estimate), each through the
  package's real function with and without a canary record; 2,000 runs per side (the subspace,
  whose released mean hides the second moments: 20,000), σ = 1, δ = 1e-2;
* the discriminator step as training calls it (:mod:`dpforge.audit.training_step`): DP-CGAN
  per example (8 other records), DP-CGAN with one microbatch (a partner record), DP-WGAN with
  its gradient penalty; 2,000 runs per side, q = 1, σ = 1, δ = 1e-2.

Each runs as the package is, then with each planted defect of tests/privacy/broken_parts.py
(noise divided by 4; a sensitivity off by 2x). Those live in the tests only; this script
imports them from there. About 6-8 minutes single-threaded on the shared 2-core machine.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "privacy"))

from broken_parts import RELEASE_DEFECTS, STEP_DEFECTS, planted  # noqa: E402

import harness  # noqa: E402
from dpforge.audit.releases import ReleaseAuditConfig, release_audit  # noqa: E402
from dpforge.audit.training_step import StepAuditConfig, step_audit  # noqa: E402

RESULTS = ROOT / "bench" / "results"
COMMAND = "PYTHONPATH=$PWD/src OMP_NUM_THREADS=1 nice -n 10 python bench/bench_audit.py"
RELEASE_RUNS = {"subspace": 20_000}
STEP_CONFIGS = {
    "dpcgan": {"method": "dpcgan"},
    "dpcgan, microbatches": {"method": "dpcgan", "microbatches": 1},
    "dpwgan": {"method": "dpwgan", "others": 0},
}


def release_results(records: list[dict]) -> None:
    for target, defects in RELEASE_DEFECTS.items():
        config = ReleaseAuditConfig(target=target, runs=RELEASE_RUNS.get(target, 2000))
        for defect in [None, *defects]:
            name = "dpforge" if defect is None else defect.name
            start = time.perf_counter()
            with planted(defect):
                result = release_audit(config, np.random.default_rng(0), name)
            _record(records, target, result, time.perf_counter() - start)


def step_results(records: list[dict]) -> None:
    for path, defects in STEP_DEFECTS.items():
        config = StepAuditConfig(runs=2000, **STEP_CONFIGS[path])
        for defect in [None, *defects]:
            name = "dpforge" if defect is None else defect.name
            start = time.perf_counter()
            with planted(defect):
                result = step_audit(config, torch.Generator().manual_seed(0), name)
            _record(records, path, result, time.perf_counter() - start)


def _record(records: list[dict], path: str, result, seconds: float) -> None:
    row = {**result.to_dict(), "path": path, "seconds": round(seconds, 1)}
    records.append(row)
    print(path, result.summary(), f"[{seconds:.0f} s]", flush=True)
    payload = {"command": COMMAND, "machine": harness.machine(), "results": records}
    (RESULTS / "audit.json").write_text(json.dumps(payload, indent=2, default=str) + "\n")


def write_markdown(records: list[dict]) -> None:
    lines = [
        "# Empirical privacy audits of the paths a fit runs (`bench/bench_audit.py`)",
        "",
        f"Command: `{COMMAND}` (single-threaded; the shared 2-core machine).",
        "",
        "Many runs with and without one canary record through the package's real code, fixed",
        "events, exact Clopper-Pearson intervals: a lower bound on ε with 95 % confidence",
        "whatever the code does; above the claimed ε it proves the code (or its accounting)",
        "wrong. `dpforge`: the package as it is; the other rows plant one defect on that path",
        "(tests/privacy/broken_parts.py). All at σ = 1, δ = 1e-2 (claimed ε = 2.318), seed 0.",
        "",
        "| path | kind | runs per side | parts | claimed ε | lower bound | verdict | time |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in records:
        verdict = "**VIOLATED** (caught)" if row["violated"] else "consistent"
        runs = row["details"]["config"]["runs"]
        lines.append(
            f"| {row['path']} | {row['kind']} | {runs:,} | {row['parts']} | "
            f"{row['claimed_epsilon']:.3f} | {row['lower_bound']:.3f} | {verdict} | "
            f"{row['seconds']:.0f} s |"
        )
    (RESULTS / "audit.md").write_text("\n".join(lines) + "\n")


def main() -> None:
    argparse.ArgumentParser(description=__doc__.split("\n\n")[0]).parse_args()
    torch.set_num_threads(1)
    records: list[dict] = []
    release_results(records)
    step_results(records)
    write_markdown(records)


if __name__ == "__main__":
    main()
