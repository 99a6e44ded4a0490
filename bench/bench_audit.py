"""Empirical privacy audits of dpforge's DP-SGD, and of three deliberately broken variants.

    cd <repo> && PYTHONPATH=$PWD/src OMP_NUM_THREADS=1 nice -n 10 python bench/bench_audit.py

Writes bench/results/audit.json (every result as it comes) and bench/results/audit.md.

* one-run audit (Steinke, Nasr & Jagielski 2023): 1,000 Dirac gradient canaries in DP-CGAN's
  discriminator DP-SGD on the Thyroid training table (3,772 records, from
  ``$DPFORGE_DATA_DIR`` or ../shared/datasets), q = 0.1, 50 steps, three noise multipliers;
* many-runs audit: the DP-SGD step on crafted gradient records, with and without a canary,
  Clopper-Pearson bounds; one full-batch step (q = 1) at δ = 1e-2, and one epoch of 5 steps at
  q = 0.2 and δ = 1e-3.

Each configuration runs the package's parts and the broken ones from tests/privacy/broken_parts.py
(no noise; the batch mean clipped instead of each example; shuffled fixed-size batches with the
Poisson accountant). Those live in the tests only; this script imports them from there.
"""

from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "privacy"))

from broken_parts import BATCH_MEAN, NO_NOISE, shuffled_parts  # noqa: E402

from bench_common import machine  # noqa: E402
from dpforge.audit import ManyRunsConfig, OneRunConfig, many_runs_audit, one_run_audit  # noqa: E402
from dpforge.audit.parts import package_parts  # noqa: E402
from dpforge.datasets.thyroid import load_thyroid  # noqa: E402

RESULTS = ROOT / "bench" / "results"
COMMAND = "PYTHONPATH=$PWD/src OMP_NUM_THREADS=1 nice -n 10 python bench/bench_audit.py"


def _data_dir() -> Path:
    return Path(os.environ.get("DPFORGE_DATA_DIR", ROOT.parent / "shared" / "datasets"))


def one_run_results(records: list[dict]) -> None:
    train, _, schema = load_thyroid(_data_dir() / "thyroid")
    schema = replace(schema, label_prior="uniform")  # the audit's generator: a public prior
    for sigma in (1.0, 1.5, 3.0):
        config = OneRunConfig(noise_multiplier=sigma)
        batch = round(config.sample_rate * len(train))
        variants = [package_parts(), NO_NOISE, BATCH_MEAN, shuffled_parts(batch)]
        for parts in variants:
            seeds = (0, 1, 2) if parts.name == "dpforge" else (0,)
            for seed in seeds:
                start = time.perf_counter()
                result = one_run_audit(train, schema, config, torch.Generator().manual_seed(seed),
                                       parts)  # fmt: skip
                _record(records, result, seed, time.perf_counter() - start)


def many_runs_results(records: list[dict]) -> None:
    settings = [
        (ManyRunsConfig(runs=20_000, delta=1e-2), 100),
        (ManyRunsConfig(runs=10_000, sample_rate=0.2, steps=5, delta=1e-3), 20),
    ]
    for config, batch in settings:
        variants = [package_parts(), NO_NOISE, BATCH_MEAN, shuffled_parts(batch)]
        if config.steps > 1:
            variants = [package_parts(), shuffled_parts(batch)]
        for parts in variants:
            start = time.perf_counter()
            result = many_runs_audit(config, np.random.default_rng(0), parts)
            _record(records, result, 0, time.perf_counter() - start)


def _record(records: list[dict], result, seed: int, seconds: float) -> None:
    row = {**result.to_dict(), "seed": seed, "seconds": round(seconds, 1)}
    records.append(row)
    print(result.summary(), f"[{seconds:.0f} s]", flush=True)
    payload = {"command": COMMAND, "machine": machine(), "results": records}
    (RESULTS / "audit.json").write_text(json.dumps(payload, indent=2, default=str) + "\n")


def _setting(row: dict) -> str:
    config = row["details"]["config"]
    if row["kind"] == "one-run":
        details = row["details"]
        return (f"Thyroid N = {details['records']}, q = {details['sample_rate']:.3f}, "
                f"σ = {config['noise_multiplier']:g}, {config['steps']} steps, "
                f"{config['canaries']} canaries")  # fmt: skip
    return (f"{config['records']} records, q = {config['sample_rate']:g}, σ = "
            f"{config['noise_multiplier']:g}, {config['steps']} step(s), "
            f"{config['runs']:,} runs per side")  # fmt: skip


def write_markdown(records: list[dict]) -> None:
    lines = [
        "# Empirical privacy audits (`bench/bench_audit.py`)",
        "",
        f"Command: `{COMMAND}` (single-threaded; run on the shared 2-core machine).",
        "",
        "A lower bound holds with 95 % confidence whatever the implementation does; above the",
        "claimed ε it proves the implementation (or its accounting) wrong. `dpforge` is the",
        "package's own sampler, clipping and noise; the other rows swap one part for a broken",
        "variant from tests/privacy/broken_parts.py.",
        "",
        "| audit | setting | parts | seed | claimed ε | lower bound | verdict | time |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in records:
        verdict = "**VIOLATED**" if row["violated"] else "consistent"
        lines.append(
            f"| {row['kind']} | {_setting(row)} at δ = {row['delta']:g} | {row['parts']} | "
            f"{row['seed']} | {row['claimed_epsilon']:.3f} | {row['lower_bound']:.3f} | "
            f"{verdict} | {row['seconds']:.0f} s |"
        )
    (RESULTS / "audit.md").write_text("\n".join(lines) + "\n")


def main() -> None:
    torch.set_num_threads(1)
    records: list[dict] = []
    one_run_results(records)
    many_runs_results(records)
    write_markdown(records)


if __name__ == "__main__":
    main()
