"""Z-normalised samples for series declared z-normalised, chosen on PUBLIC series only: UCR
sets that sktime ships offline (GunPoint, ArrowHead, OSULeaf as :mod:`series_move_public`,
each series resampled to 24 points and z-normalised), never ItalyPowerDemand.

UCR series are z-normalised one by one (mean 0, standard deviation 1 over each series' time
steps). That is a public property of how a data set was prepared, declared as a channel
range is declared; a sampler told so can give its samples the same property, reading
nothing but its own samples (post-processing: no ledger entry). The candidates, each applied
to THE SAME fit and THE SAME draws of the library's series default (moved, the default):

* ``default``: ``synth.sample(n, seed)`` as a user gets it (moved 100 Adam steps at lr 0.03);
* ``znorm``: the default's samples, each z-normalised afterwards (in the channel's units);
* ``znorm-move``: the same unmoved draws moved through the z-normalisation (each step's
  series is z-normalised before the feature map sees it, so the moved samples match the
  release AS z-normalised series), then z-normalised (already so up to the final clip).

Fit per (set, seed): the library's default at the epsilon matched to ItalyPowerDemand's
noise-to-signal at eps 3 (``series_move_public.matched_epsilon``); ``SAMPLE_SEEDS`` sampling
seeds per fit; 1-NN DTW on the 30 % (mean over the sampling seeds). One JSON line per
(set, seed) to ``--log`` as it comes. Example (from bench/, ``OMP_NUM_THREADS=1
PYTHONPATH=../src nice -n 10``)::

    python series_znorm_public.py --sets gunpoint,arrow_head,osuleaf --seeds 0,1,2 \\
        --log results/series_znorm_public.jsonl

``--italy`` runs the same three on ItalyPowerDemand's test split (329 series) instead, with
``bench_series.py``'s fit (DP range estimate, metadata share 0.1) and its one sampling seed
(10,000 + seed): the measurement ONCE after the public decision.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace

import numpy as np
import torch

import harness
from dpforge import Synthesizer
from dpforge.data.arrays import ArrayData
from dpforge.datasets.series import load_italy_power_demand
from dpforge.schema.array import Channel
from dpforge.statistics.features import feature_anchor_defaults
from dpforge.statistics.particles import MoveSettings
from series_move_public import (
    add_italy_option,
    add_public_sets,
    fit_figures,
    knn,
    matched_epsilon,
    public_set,
)

SAMPLE_SEEDS = 3
CANDIDATES = ("default", "znorm", "znorm-move")


def znorm(values: np.ndarray) -> np.ndarray:
    """Each series (and channel) to mean 0 and standard deviation 1 over its time steps."""
    mean = values.mean(axis=-1, keepdims=True)
    std = values.std(axis=-1, keepdims=True)
    return (values - mean) / np.where(std > 0, std, 1.0)


def moved_through_znorm(synth, draws: ArrayData, settings: MoveSettings) -> np.ndarray:
    """The unmoved draws moved ``settings.steps`` Adam steps on the release's loss, each step's
    series z-normalised (in the channel's units) before the loss sees it; returns the moved
    series in the channel's units, z-normalised."""
    enc = synth.encoder_
    lower, upper = (torch.as_tensor(a, dtype=torch.float32) for a in (enc._lower, enc._upper))
    x, labels = (torch.as_tensor(a) for a in enc.transform(draws))
    loss = synth.sample_release_.loss()
    labels_t = None if labels is None else labels.long()

    def project(p: torch.Tensor) -> torch.Tensor:  # encoded -> z-normalised, encoded again
        v = lower + (torch.tanh(p) + 1.0) / 2.0 * (upper - lower)
        z = (v - v.mean(-1, keepdim=True)) / v.std(-1, unbiased=False, keepdim=True).clamp_min(1e-6)
        return 2.0 * (z - lower) / (upper - lower) - 1.0

    with torch.enable_grad():
        p = torch.atanh(x.float().clamp(-0.999, 0.999)).requires_grad_(True)
        opt = torch.optim.Adam([p], lr=settings.lr)
        for _ in range(settings.steps):
            value = loss(project(p), labels_t)
            opt.zero_grad()
            value.backward()
            opt.step()
    v = lower + (torch.tanh(p.detach()) + 1.0) / 2.0 * (upper - lower)
    return znorm(v.double().numpy())


def scored(synth, n: int, test: ArrayData, schema, seed: int, sample_seed: int) -> dict:
    default = synth.sample(n, seed=sample_seed)
    draws = synth.sample(n, seed=sample_seed, move=False)
    through = moved_through_znorm(synth, draws, MoveSettings())
    variants = {
        "default": default,
        "znorm": ArrayData(znorm(default.values), default.labels),
        "znorm-move": ArrayData(through, draws.labels),
    }
    return {name: knn(data, test, schema, seed) for name, data in variants.items()}


def run(name: str, seed: int, log: str, italy: bool, epsilon: float, count_weight) -> None:
    t0 = time.process_time()
    if italy:
        train, test, schema = load_italy_power_demand(seed=0, test_size=0.3)
        anchor = "auto" if count_weight is None else replace(
            feature_anchor_defaults("timeseries"), count_weight=count_weight
        )
        synth = Synthesizer(schema, epsilon=epsilon, delta=1e-4, metadata_share=0.1, seed=seed,
                            progress=False, anchor=anchor)  # fmt: skip
        sample_seeds = [10_000 + seed]
    else:
        train, test, schema = public_set(name)
        epsilon, _ = matched_epsilon(train, len(schema.classes), 1e-4)
        schema = replace(schema, channels=(Channel("value", -3.0, 3.0),))
        synth = Synthesizer(schema, epsilon=epsilon, delta=1e-4, seed=seed, progress=False,
                            record_count=len(train), out_of_bounds="clip")  # fmt: skip
        sample_seeds = [10_000 + 100 * d + seed for d in range(SAMPLE_SEEDS)]
    synth.fit(train)
    fit_cpu = time.process_time() - t0
    runs = [scored(synth, len(train), test, schema, seed, s) for s in sample_seeds]
    scores = {c: {"knn": round(float(np.mean([r[c] for r in runs])), 4),
                  "knns": [r[c] for r in runs]} for c in CANDIDATES}  # fmt: skip
    row = dict(set="italy" if italy else name, seed=seed, epsilon=round(epsilon, 3),
               n_train=len(train), n_test=len(test), **fit_figures(synth, t0, fit_cpu),
               count_weight=synth.sample_release_.count_weight,
               scores=scores)  # fmt: skip
    harness.log_row(log, row)


def main() -> None:
    p = argparse.ArgumentParser()
    add_public_sets(p)
    add_italy_option(p)
    p.add_argument("--count-weight", type=float, default=None,
                   help="--italy only: the series default's count weight, replaced")  # fmt: skip
    p.add_argument("--log", required=True)
    a = p.parse_args()
    torch.set_num_threads(1)
    for seed in harness.seeds(a):
        for name in ["italy"] if a.italy else a.sets.split(","):
            run(name, seed, a.log, a.italy, a.epsilon, a.count_weight)


if __name__ == "__main__":
    main()
