"""Selection at sample time on ItalyPowerDemand, measured ONCE next to the current default:
model folders fitted earlier (``bench_series.py --save-models``) are loaded and each sampling
setting draws as many series as the training split (the same sampling seed, 10,000 + seed, as
``bench_series.py``); classifiers trained on them are scored on the test split.

The settings were chosen on PUBLIC UCR sets (``series_move_public.py --grid pool``,
bench/results/series_pool_public.md), never on ItalyPowerDemand; every setting run here is
reported. One JSON line per (seed, setting) to ``--log`` as it comes. Example (from bench/,
``OMP_NUM_THREADS=1 PYTHONPATH=../src``)::

    python italy_series_pool.py --from-models /tmp/ser/main/models --epsilon 3 \\
        --log results/italy_series_pool.jsonl
"""

from __future__ import annotations

import argparse
import time

import torch

import dpforge
import harness
from dpforge.datasets.series import load_italy_power_demand
from dpforge.statistics.particles import MoveSettings
from series_runs import gap, model_path, scores

# (name, sample's move): the library's default, not moved, and the public-set candidates
SETTINGS = [
    ("default (moved, pool 1)", True),
    ("unmoved", False),
    ("herding pool 4, moved", MoveSettings(pool=4)),
    ("margin pool 4, moved", MoveSettings(pool=4, select="margin")),
]


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--from-models", required=True, help="the folders bench_series.py saved")
    p.add_argument("--epsilon", type=float, required=True, help="the folders' epsilon (label)")
    harness.add_seeds(p, "3")
    p.add_argument("--log", required=True)
    a = p.parse_args()
    torch.set_num_threads(1)
    stamp = harness.provenance(__file__)
    train, test, schema = load_italy_power_demand(seed=0, test_size=0.3)
    for seed in harness.seeds(a):
        synth = dpforge.load(model_path(a.from_models, seed, True))
        for name, move in SETTINGS:
            t0 = time.process_time()
            synthetic = synth.sample(len(train), seed=10_000 + seed, move=move)
            cpu = time.process_time() - t0
            row = {
                "commit": stamp.get("git", {}).get("commit"), "command": stamp.get("command"),
                "epsilon": a.epsilon, "seed": seed, "setting": name, "sample_cpu": round(cpu, 1),
                "tstr": scores(synthetic, test, schema, seed, None),
                "embedding_gap": round(gap(synth, synthetic), 5),
            }  # fmt: skip
            harness.log_row(a.log, row)


if __name__ == "__main__":
    main()
