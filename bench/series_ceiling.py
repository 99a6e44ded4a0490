"""Ceilings for issue 24 (series): how well 1-NN DTW on ItalyPowerDemand can do when the
generator is an EXACT (non-private) model of a given family fitted to the training series.

Not a DP run and not a tuning run: nothing here picks a setting of the library. It asks
whether a family of per-class statistics could reach the goal (1-NN DTW >= 0.95 at epsilon 3)
if its statistics were released without noise; a family that falls short here cannot reach it
privately. Families: ``gaussian`` (per-class mean and full covariance, what moment anchoring
releases), ``gmm:K:COV`` (a per-class Gaussian mixture, scikit-learn, K components, covariance
type COV), ``jitter:H`` (the training series themselves plus N(0, H^2) noise per value: how
close to real records a generator must come). Samples as many series as the training set,
half per class, and scores 1-NN DTW on the test split of
``load_italy_power_demand(--split-seed)`` (0: bench_series.py's split; the seeds vary the
sampling only, as there). One JSON line per (family, seed) to ``--out``. Example (from bench/)::

    OMP_NUM_THREADS=1 python series_ceiling.py --families gaussian,gmm:8:diag,jitter:0.3 \\
        --seeds 3 --out results/italy_series_ceiling.jsonl
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
from sklearn.mixture import GaussianMixture

import harness
from dpforge.data.arrays import ArrayData
from dpforge.datasets.series import load_italy_power_demand
from dpforge.evaluation.series import tstr_accuracy


def sample_class(family: str, xc: np.ndarray, n: int, rng: np.random.Generator, seed: int):
    """``n`` series of one class from the exact model ``family`` of its records ``xc``."""
    name, *args = family.split(":")
    if name == "gaussian":
        return rng.multivariate_normal(xc.mean(0), np.cov(xc.T), size=n)
    if name == "gmm":
        model = GaussianMixture(int(args[0]), covariance_type=args[1], random_state=seed)
        return model.fit(xc).sample(n)[0]
    if name == "jitter":
        picked = xc[rng.integers(0, len(xc), size=n)]
        return picked + rng.normal(0.0, float(args[0]), size=picked.shape)
    raise SystemExit(f"unknown family {family!r}: gaussian, gmm:K:COV or jitter:H")


def run(family: str, seed: int, split_seed: int) -> dict:
    """Fit ``family`` per class on the training split, sample with ``seed``; 1-NN DTW on the
    test split."""
    train, test, schema = load_italy_power_demand(seed=split_seed)
    x = np.asarray(train.values, float).reshape(len(train.values), -1)
    labels, rng = np.asarray(train.labels), np.random.default_rng(seed)
    n = len(x) // len(schema.classes)
    parts = [sample_class(family, x[labels == c], n, rng, seed) for c in schema.classes]
    values = np.concatenate(parts).reshape(-1, *train.values.shape[1:])
    synthetic = ArrayData(values, np.repeat(np.array(schema.classes, dtype=object), n))
    score = tstr_accuracy(synthetic, test, schema.classes, models=("knn_dtw",), seed=seed)
    accuracy = round(score["knn_dtw"].value, 4)
    return {"family": family, "split_seed": split_seed, "seed": seed, "knn_dtw": accuracy}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--families", default="gaussian")
    parser.add_argument("--split-seed", type=int, default=0, help="the train/test split [0]")
    harness.add_seeds(parser)
    harness.add_out(parser)
    args = parser.parse_args()
    for family in args.families.split(","):
        for seed in harness.seeds(args):
            cpu = time.process_time()
            row = run(family, seed, args.split_seed)
            row["cpu_s"] = round(time.process_time() - cpu, 1)
            print(json.dumps(row), flush=True)
            if args.out:
                with open(args.out, "a") as log:
                    log.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
