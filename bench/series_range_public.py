"""A declared channel range for z-normalised series against the DP range estimate, chosen on
PUBLIC series only (GunPoint, ArrowHead, OSULeaf as :mod:`series_move_public`: resampled to 24
points, z-normalised), then measured once on ItalyPowerDemand (``--italy``).

A series of length L z-normalised with the population standard deviation has every value
within sqrt(L - 1) in absolute value, so [-sqrt(L - 1), sqrt(L - 1)] is a public range that
reads no data. Declaring the range leaves the schema nothing to estimate: no metadata release,
and the anchor's noise is calibrated to the budget the range estimate would have spent. The
candidates (``CANDIDATES``), each its own fit of the library's series default:

* ``default``: no range declared: the DP range estimate (metadata share 0.1);
* ``declared``: [-sqrt(L - 1), sqrt(L - 1)] declared;
* ``declared3``: [-3, 3] declared (values beyond are clipped).

Public round: each (set, seed) at ``series_move_public.matched_epsilon`` with the record count
given (the earlier rounds' protocol), 3 sampling seeds (10,000 + 100 d + seed), 1-NN DTW on the
30 %; one JSON line per (set, seed, candidate) to ``--log`` as it comes. ``--italy``:
ItalyPowerDemand's test split at ``--epsilon`` (3), ``bench_series.py``'s fit (metadata share
0.1, the record count released), one sampling seed (10,000 + seed). From bench/,
``OMP_NUM_THREADS=1 PYTHONPATH=../src nice -n 10``::

    python series_range_public.py --seeds 0,1,2 --log results/series_range_public.jsonl
    python series_range_public.py --italy --candidates default,declared --seeds 10 \\
        --log results/series_range_italy.jsonl

(bench/results/series_range_public.md holds the decision rule and the figures.)
"""

from __future__ import annotations

import argparse
import math
import time
from dataclasses import replace

import numpy as np
import torch

import harness
import series_move_public as rounds
from dpforge import Synthesizer
from dpforge.datasets.series import load_italy_power_demand
from dpforge.schema.array import ArraySchema, Channel

SAMPLE_SEEDS = 3
METADATA_SHARE = 0.1  # bench_series.py's (the range estimate's share when nothing is declared)
CANDIDATES = ("default", "declared", "declared3")


def declared_bound(candidate: str, length: int) -> float | None:
    """The declared |value| bound of ``candidate`` (None: the range is estimated under DP)."""
    return {"default": None, "declared": math.sqrt(length - 1), "declared3": 3.0}[candidate]


def with_range(schema: ArraySchema, bound: float | None) -> ArraySchema:
    """``schema`` with every channel's range declared as [-bound, bound] (None: unchanged)."""
    if bound is None:
        return schema
    return replace(schema, channels=tuple(Channel(c.name, -bound, bound) for c in schema.channels))


def run(name: str, seed: int, candidate: str, log: str, epsilon: float) -> None:
    t0 = time.process_time()
    if name == "italy":
        train, test, schema = load_italy_power_demand(seed=0, test_size=0.3)
        count, sample_seeds = None, [10_000 + seed]
    else:
        train, test, schema = rounds.public_set(name)
        epsilon, _ = rounds.matched_epsilon(train, len(schema.classes), 1e-4)
        schema = replace(schema, channels=(Channel("value"),))  # undeclared: public_set's own
        count, sample_seeds = len(train), [10_000 + 100 * d + seed for d in range(SAMPLE_SEEDS)]
    bound = declared_bound(candidate, schema.shape[-1])
    synth = Synthesizer(with_range(schema, bound), epsilon=epsilon, delta=1e-4, seed=seed,
                        metadata_share=METADATA_SHARE, progress=False, record_count=count,
                        out_of_bounds="clip")  # fmt: skip
    synth.fit(train)
    fit_cpu = time.process_time() - t0
    knns = [rounds.knn(synth.sample(len(train), seed=s), test, schema, seed) for s in sample_seeds]
    channel = synth.schema_.channels[0] if hasattr(synth, "schema_") else None
    row = dict(set=name, seed=seed, candidate=candidate, epsilon=round(epsilon, 3),
               bound=bound, n_train=len(train), n_test=len(test),
               range=None if channel is None else [channel.lower, channel.upper],
               clipped=round(float(np.mean(np.abs(train.values) > bound)), 5) if bound else None,
               **rounds.fit_figures(synth, t0, fit_cpu),
               knn=round(float(np.mean(knns)), 4), knns=knns)  # fmt: skip
    harness.log_row(log, row)


def main() -> None:
    p = argparse.ArgumentParser()
    rounds.add_public_sets(p)
    rounds.add_italy_option(p)
    p.add_argument("--candidates", default=",".join(CANDIDATES))
    p.add_argument("--log", required=True)
    a = p.parse_args()
    torch.set_num_threads(1)
    for seed in harness.seeds(a):
        for name in ["italy"] if a.italy else a.sets.split(","):
            for candidate in a.candidates.split(","):
                run(name, seed, candidate, a.log, a.epsilon)


if __name__ == "__main__":
    main()
