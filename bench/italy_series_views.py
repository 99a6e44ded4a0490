"""Richer public feature maps on ItalyPowerDemand, measured ONCE next to the current default.

For each seed, each map (``--candidates``, names out of ``series_views_public.CANDIDATES``,
the default first) is fitted as ``bench_series.py`` fits the library's default for series
(``Synthesizer(schema, epsilon, delta=1e-4, metadata_share=0.1, seed=seed, anchor=...)``: the
channel range estimated under DP, the label prior uniform, the anchor alone) with the map's
fields replacing the series default's, then samples as many series as the training split
(sampling seed 10,000 + seed, moved: the library's default, as ``bench_series.py``); the random
forest and 1-NN DTW trained on them are scored on the test split (329 series). The maps were
chosen on PUBLIC UCR sets (``series_views_public.py``, bench/results/series_views_public.md),
never on ItalyPowerDemand; every map run here is reported. One JSON line per (seed, map) to
``--log`` as it comes. Example (from bench/, ``OMP_NUM_THREADS=1 PYTHONPATH=../src``)::

    python italy_series_views.py --candidates default,+windows --seeds 0,1,2 \\
        --log results/italy_series_views.jsonl
"""

from __future__ import annotations

import argparse
import json
import time

import torch

import harness
from dpforge import Synthesizer
from dpforge.datasets.series import load_italy_power_demand
from series_runs import gap, scores
from series_views_public import CANDIDATES, candidate


def run(name: str, seed: int, epsilon: float, stamp: dict, log: str) -> None:
    train, test, schema = load_italy_power_demand(seed=0, test_size=0.3)
    t0 = time.process_time()
    synth = Synthesizer(schema, epsilon=epsilon, delta=1e-4, metadata_share=0.1, seed=seed,
                        progress=False, anchor=candidate(name))  # fmt: skip
    synth.fit(train)
    fit_cpu = time.process_time() - t0
    synthetic = synth.sample(len(train), seed=10_000 + seed)
    row = {
        "commit": stamp.get("git", {}).get("commit"), "command": stamp.get("command"),
        "epsilon": epsilon, "seed": seed, "map": name, "fields": CANDIDATES[name],
        "fit_cpu": round(fit_cpu, 1),
        "anchor_sigma": synth.sample_release_.embedding.noise_multiplier,
        "epsilon_pld": synth.privacy_spent().epsilon_pld,
        "tstr": scores(synthetic, test, schema, seed, None),
        "embedding_gap": round(gap(synth, synthetic), 5),
    }  # fmt: skip
    print(json.dumps(row, default=list), flush=True)
    harness.append_jsonl(log, row)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--candidates", required=True, help="comma-separated CANDIDATES names")
    p.add_argument("--epsilon", type=float, default=3.0)
    harness.add_seeds(p, "0,1,2")
    p.add_argument("--log", required=True)
    a = p.parse_args()
    torch.set_num_threads(1)
    stamp = harness.provenance(__file__)
    names = a.candidates.split(",")
    unknown = [n for n in names if n not in CANDIDATES]
    if unknown:
        raise SystemExit(f"unknown candidates {unknown}: out of {list(CANDIDATES)}")
    for seed in harness.seeds(a):
        for name in names:
            run(name, seed, a.epsilon, stamp, a.log)


if __name__ == "__main__":
    main()
