"""Empirical privacy audits of the code paths a fit really runs, each with planted defects;
``attacks``: the membership attacks against overfitted and DP releases (lib/attacks.py).

    cd <repo> && PYTHONPATH=$PWD/src OMP_NUM_THREADS=1 nice -n 10 python bench/audits.py
    python bench/audits.py attacks --releases copy,holdout,anchor-overfit,anchor-dp --seeds 0,1,2

Writes bench/results/audits/audit.json (every result as it comes) and audit.md next to it.

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
from lib import attacks  # noqa: E402

TITLE = "Empirical privacy audits of the paths a fit runs (`bench/audits.py`)"
RELEASE_RUNS = {"subspace": 20_000}
STEP_CONFIGS = {
    "dpcgan": {"method": "dpcgan"},
    "dpcgan, microbatches": {"method": "dpcgan", "microbatches": 1},
    "dpwgan": {"method": "dpwgan", "others": 0},
}


def release_results(records: list[dict], args: argparse.Namespace) -> None:
    for target, defects in RELEASE_DEFECTS.items():
        runs = RELEASE_RUNS.get(target, 2000) * args.runs // 2000
        config = ReleaseAuditConfig(target=target, runs=runs)
        for defect in [None, *defects]:
            name = "dpforge" if defect is None else defect.name
            start = time.perf_counter()
            with planted(defect):
                result = release_audit(config, np.random.default_rng(0), name)
            _record(records, target, result, time.perf_counter() - start, args)


def step_results(records: list[dict], args: argparse.Namespace) -> None:
    for path, defects in STEP_DEFECTS.items():
        config = StepAuditConfig(runs=args.runs, **STEP_CONFIGS[path])
        for defect in [None, *defects]:
            name = "dpforge" if defect is None else defect.name
            start = time.perf_counter()
            with planted(defect):
                result = step_audit(config, torch.Generator().manual_seed(0), name)
            _record(records, path, result, time.perf_counter() - start, args)


def _record(records: list[dict], path: str, result, seconds: float, args) -> None:
    """Keep one audit's result and rewrite the JSON (so a stopped run keeps what it found)."""
    row = {**result.to_dict(), "path": path, "seconds": round(seconds, 1)}
    records.append(row)
    print(path, result.summary(), f"[{seconds:.0f} s]", flush=True)
    record = {**harness.provenance(__file__), "results": records}
    harness.write_results(args.out, record, TITLE, None)


def markdown(records: list[dict]) -> list[str]:
    """The Markdown body: one line per path and defect."""
    lines = [
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
    return lines


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--runs", type=int, default=2000, help="runs per side, at least 100 (the subspace: 10x)"
    )
    harness.add_out(p, harness.results("audits", "audit.json"))
    args = p.parse_args(argv)
    if args.runs < 100:
        p.error(f"--runs {args.runs}: the audits need at least 100 runs per side")
    torch.set_num_threads(1)
    records: list[dict] = []
    release_results(records, args)
    step_results(records, args)
    record = {**harness.provenance(__file__), "results": records}
    harness.write_results(args.out, record, TITLE, markdown(records))


if __name__ == "__main__":
    if sys.argv[1:2] == ["attacks"]:
        attacks.main(sys.argv[2:])
    else:
        main()
