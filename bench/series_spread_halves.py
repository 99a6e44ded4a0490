"""Is the draw-to-draw spread of moved series a property of 1-NN on a few hundred series, or of
synthetic sets? 1-NN DTW on ItalyPowerDemand's test split, trained on

* ``real``: random halves (383 series, stratified) of the REAL training split, ``--draws``
  of them (halves of one pool of 767 overlap, so their spread understates that of fresh
  draws of 383 by about sqrt(1 - 383 / 767) = 0.71);
* ``synthetic``: 383 moved series sampled from one saved default fit (``series_spread.py
  --save-models``), ``--draws`` sampling seeds (fresh draws).

Reads the real training split only to score a real-data reference (as every Italy bench does
for its "real training series" row). One JSON line to ``--log``. Example (from bench/,
``OMP_NUM_THREADS=1 PYTHONPATH=../src``)::

    python series_spread_halves.py --model /tmp/spread_models/italy_eps3_r2_t2_mNone \\
        --log results/series_spread_halves.jsonl
"""

from __future__ import annotations

import argparse

import numpy as np
import torch
from sklearn.model_selection import train_test_split

import dpforge
import harness
from dpforge.data.arrays import ArrayData
from dpforge.datasets.series import load_italy_power_demand
from series_move_public import knn


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--model", required=True)
    p.add_argument("--draws", type=int, default=8)
    p.add_argument("--log", required=True)
    a = p.parse_args()
    torch.set_num_threads(1)
    train, test, schema = load_italy_power_demand(seed=0, test_size=0.3)
    half = len(train) // 2
    real = []
    for d in range(a.draws):
        x, _, y, _ = train_test_split(train.values, train.labels, train_size=half,
                                      stratify=train.labels, random_state=d)  # fmt: skip
        real.append(knn(ArrayData(x, y), test, schema, 0))
    synth = dpforge.load(a.model)
    synthetic = [knn(synth.sample(half, seed=30_000 + d), test, schema, 0) for d in range(a.draws)]
    row = {"model": a.model, "n": half, "real": real, "synthetic": synthetic,
           "real_mean": float(np.mean(real)), "real_sd": float(np.std(real, ddof=1)),
           "synthetic_mean": float(np.mean(synthetic)),
           "synthetic_sd": float(np.std(synthetic, ddof=1))}  # fmt: skip
    harness.log_row(a.log, row)


if __name__ == "__main__":
    main()
