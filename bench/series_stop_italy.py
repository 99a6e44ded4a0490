"""ItalyPowerDemand, saved fits re-sampled: not moved, moved (``MoveSettings()``: 100 Adam
steps at lr 0.03) and moved with ``stop_at_noise`` (stop once the embedding gap reaches the
release's noise level, ``SampleRelease.noise_levels``), on THE SAME draws of THE SAME fits.

The fits are the model folders bench_series.py saved (``--save-models``); for each seed the
draws are ``sample(767, seed=10_000 + seed, move=False)`` as bench_series.py draws them, then
moved with ``move_samples`` on the stored release (as ``sample`` does); 1-NN DTW (unconstrained
window) trained on them is scored on the test split (30 %). Folders saved before dpforge stored
the release's count weight get ``--count-weight`` (the fits ran with the FeatureAnchorConfig
default, 0.5). Evaluation only: the setting was chosen on public sets
(series_move_public.py --grid stop). Example (from bench/, ``OMP_NUM_THREADS=1
PYTHONPATH=../src``)::

    python series_stop_italy.py --models /tmp/ser/main/models --seeds 0,1,2
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace

import torch

import dpforge
import harness
from dpforge.datasets.series import load_italy_power_demand
from dpforge.evaluation.series import tstr_accuracy
from dpforge.statistics.particles import MoveSettings, embedding_gap, move_samples

SETTINGS = {"unmoved": None, "moved": MoveSettings(), "stop": MoveSettings(stop_at_noise=True)}


def run(folder: str, seed: int, count_weight: float, log: str) -> None:
    train, test, schema = load_italy_power_demand(seed=0, test_size=0.3)
    synth = dpforge.load(f"{folder}/dp_seed{seed}")
    release = synth.sample_release_
    if release.count_weight is None:
        release = replace(release, count_weight=count_weight)
    loss, levels = release.loss(), release.noise_levels()
    draws = synth.sample(len(train), seed=10_000 + seed, move=False)
    x, labels = (torch.as_tensor(a) for a in synth.encoder_.transform(draws))
    row = {"seed": seed, "noise_levels": [round(float(v), 5) for v in levels], "scores": {}}
    for name, settings in SETTINGS.items():
        t0 = time.process_time()
        moved = (
            x
            if settings is None
            else move_samples(x, labels, loss, settings, levels if settings.stop_at_noise else None)
        )
        values = synth.encoder_.inverse_transform(moved.numpy(), labels.numpy())
        r = tstr_accuracy(values, test, schema.classes, models=("knn_dtw",), seed=seed)
        row["scores"][name] = {
            "knn": round(r["knn_dtw"].value, 4),
            "gap": round(embedding_gap(moved, labels, loss), 5),
            "move_cpu": round(time.process_time() - t0, 1),
        }
    harness.log_row(log, row)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--models", required=True, help="bench_series.py's --save-models folder")
    harness.add_seeds(p, "0,1,2")
    p.add_argument(
        "--count-weight",
        type=float,
        default=0.5,
        help="the count weight of folders that do not record it (the fit's config)",
    )
    p.add_argument("--log", default="results/italy_series_stop.jsonl")
    a = p.parse_args()
    torch.set_num_threads(1)
    for seed in harness.seeds(a):
        run(a.models, seed, a.count_weight, a.log)


if __name__ == "__main__":
    main()
