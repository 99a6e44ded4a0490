"""Choosing how far generated series are moved (``MoveSettings``: steps, step size) on PUBLIC
series only: UCR sets that sktime ships offline, NOT ItalyPowerDemand.

Each public set (``--sets``) is pooled (train + test), each series resampled to length 24 by
linear interpolation and z-normalised (the shape of ItalyPowerDemand's records, which is
public), and split 70/30 stratified (seed 0). For each seed the library fits on the 70 %
(``Synthesizer`` defaults for series, the embedding anchor) at the epsilon whose noise,
relative to the per-class counts, is ItalyPowerDemand's at eps 3 (``matched_epsilon``: these
sets are 2-5 times smaller, and at eps 3 their release is pure noise; the range is declared and
the count given: public data), draws as many series as the 70 % holds (``move=False``), and
moves THE SAME draws with each setting of the grid (``dpforge.statistics.particles.
move_samples`` on the stored release, as ``sample`` does); 1-NN DTW trained on the moved series
is scored on the 30 %. One JSON line per (set, seed) to ``--log`` as it comes. Example (from
bench/, ``OMP_NUM_THREADS=1 PYTHONPATH=../src``)::

    python series_move_public.py --sets gunpoint,arrow_head,osuleaf --seeds 0,1

``--grid pool`` compares not moving, the default and herded selection from ``pool`` times as
many draws (``MoveSettings.pool``, :mod:`dpforge.statistics.herding`), through
``Synthesizer.sample(move=MoveSettings(...))`` as a user gets it (a pool draws other series
than the plain draws; every setting from the same seed).

``--grid stop`` compares not moving, the default (100 @ 0.03) and the default with
``stop_at_noise`` instead of the steps x lr grid (bench/results/italy_series_stop.md).
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace

import numpy as np
import torch
from sklearn.model_selection import train_test_split

import harness
from dpforge import Synthesizer
from dpforge.data.arrays import ArrayData
from dpforge.evaluation.series import tstr_accuracy
from dpforge.schema.array import ArraySchema, Channel
from dpforge.statistics.particles import MoveSettings, embedding_gap, move_samples

LENGTH = 24
GRID = [(0, 0.01)] + [(s, lr) for s in (100, 300, 1000) for lr in (0.003, 0.01, 0.03)]
# --grid stop: not moved, the default (100 @ 0.03) and the default with stop_at_noise
STOP_GRID = [(0, 0.01), (100, 0.03), (100, 0.03, "stop")]
# --grid pool: (steps, lr, pool); not moved, the default, herding alone, herding then moving
POOL_GRID = [(0, 0.03, 1, "herding"), (100, 0.03, 1, "herding"), (100, 0.03, 4, "herding"),
             (100, 0.03, 2, "margin"), (100, 0.03, 4, "margin")]  # fmt: skip
# --grid pool: sampling seeds per fit (a pool draws other series than the plain draws, so one
# draw per setting mixes the draw's luck into the comparison; averaged over several here)
SAMPLE_SEEDS = 3


PUBLIC_SETS = "gunpoint,arrow_head,osuleaf"  # the UCR sets every public series round judges on


def add_public_sets(parser: argparse.ArgumentParser, seeds: str = "0,1,2") -> None:
    """``--sets`` (comma list of :func:`public_set` names, default PUBLIC_SETS) and
    ``--seeds``, as every public series round takes them."""
    parser.add_argument("--sets", default=PUBLIC_SETS)
    harness.add_seeds(parser, seeds)


def add_italy_option(parser: argparse.ArgumentParser) -> None:
    """``--italy`` (ItalyPowerDemand's test split instead of the public sets: the measurement
    made once after a public decision) and its ``--epsilon``."""
    parser.add_argument(
        "--italy", action="store_true", help="ItalyPowerDemand's test split instead"
    )
    parser.add_argument("--epsilon", type=float, default=3.0, help="--italy only")


def fit_figures(synth, started_cpu: float, fit_cpu: float) -> dict:
    """A series fit's CPU seconds (the fit; the fit and its scoring, from ``started_cpu``),
    its PLD epsilon and the anchor's noise multiplier, for a result row."""
    return dict(fit_cpu=round(fit_cpu, 1), cpu=round(time.process_time() - started_cpu, 1),
                epsilon_pld=synth.privacy_spent().epsilon_pld,
                anchor_sigma=synth.sample_release_.embedding.noise_multiplier)  # fmt: skip


def public_set(name: str) -> tuple[ArrayData, ArrayData, ArraySchema]:
    """A public UCR set as length-24 z-normalised curves, split 70/30 (stratified, seed 0)."""
    from sktime import datasets

    parts = [getattr(datasets, f"load_{name}")(split=s, return_type="numpy3D")
             for s in ("train", "test")]  # fmt: skip
    x = np.concatenate([p[0][:, 0, :] for p in parts]).astype(np.float64)
    y = np.concatenate([p[1] for p in parts]).astype(str).astype(object)
    grid = np.linspace(0, 1, LENGTH)
    x = np.stack([np.interp(grid, np.linspace(0, 1, x.shape[1]), row) for row in x])
    x = (x - x.mean(1, keepdims=True)) / x.std(1, keepdims=True)
    classes = tuple(sorted(set(y)))
    a, b, ya, yb = train_test_split(x, y, test_size=0.3, stratify=y, random_state=0)
    schema = ArraySchema("timeseries", (1, LENGTH), (Channel("value"),), label="class",
                         classes=classes)  # fmt: skip
    return ArrayData(a[:, None, :], ya), ArrayData(b[:, None, :], yb), schema


def knn(synthetic: ArrayData, test: ArrayData, schema: ArraySchema, seed: int) -> float:
    r = tstr_accuracy(synthetic, test, schema.classes, models=("knn_dtw",), seed=seed)
    return round(r["knn_dtw"].value, 4)


ITALY_SIGMA, ITALY_PER_CLASS = 1.2622, 767 / 2  # the anchor's noise multiplier at eps 3


def matched_epsilon(train: ArrayData, n_classes: int, delta: float) -> tuple[float, float]:
    """(epsilon, sigma) at which this set's per-class release is as noisy, relative to its
    per-class counts, as ItalyPowerDemand's at eps 3 (the same feature dimension: length 24):
    sigma = 1.2622 * n_k / 383.5. The range is declared and the count given (public data), so
    the anchor is the ledger's only release and epsilon is that Gaussian's."""
    import dp_accounting

    sigma = ITALY_SIGMA * (len(train) / n_classes) / ITALY_PER_CLASS
    pld = dp_accounting.pld.PLDAccountant()
    pld.compose(dp_accounting.GaussianDpEvent(sigma))
    return pld.get_epsilon(delta) * 0.9999, sigma


def run(name: str, seed: int, epsilon: float, log: str, grid: list) -> None:
    train, test, schema = public_set(name)
    t0 = time.process_time()
    sigma = None
    if epsilon == 0:  # matched to ItalyPowerDemand's noise-to-signal
        epsilon, sigma = matched_epsilon(train, len(schema.classes), 1e-4)
        schema = replace(schema, channels=(Channel("value", -3.0, 3.0),))
    synth = Synthesizer(schema, epsilon=epsilon, delta=1e-4, seed=seed, progress=False,
                        record_count=len(train), out_of_bounds="clip")  # fmt: skip
    synth.fit(train)
    fit_cpu = time.process_time() - t0
    if grid is POOL_GRID:
        scores = pooled(synth, len(train), test, schema, seed)
    else:
        scores = moved(synth, len(train), test, schema, seed, grid)
    real = knn(train, test, schema, seed)
    row = dict(set=name, seed=seed, epsilon=round(epsilon, 3), target_sigma=sigma,
               anchor_sigma=synth.sample_release_.embedding.noise_multiplier,
               n_train=len(train), n_test=len(test), fit_cpu=round(fit_cpu, 1),
               noise_levels=[round(float(v), 5) for v in synth.sample_release_.noise_levels()],
               real_knn=real, scores=scores)  # fmt: skip
    harness.log_row(log, row)


def pooled(synth, n: int, test: ArrayData, schema: ArraySchema, seed: int) -> dict:
    """Each (steps, lr, pool) of POOL_GRID through ``sample(move=MoveSettings(...))``, at
    SAMPLE_SEEDS sampling seeds: the mean 1-NN DTW (``knn``), each seed's (``knns``)."""
    loss, scores = synth.sample_release_.loss(), {}
    for steps, lr, pool, how in POOL_GRID:
        t1, knns, gaps = time.process_time(), [], []
        settings = MoveSettings(steps=steps, lr=lr, pool=pool, select=how)
        for draw in range(SAMPLE_SEEDS):
            values = synth.sample(n, seed=10_000 + 100 * draw + seed, move=settings)
            x, labels = synth.encoder_.transform(values)
            knns.append(knn(values, test, schema, seed))
            gaps.append(embedding_gap(torch.as_tensor(x), torch.as_tensor(labels), loss))
        scores[f"{steps}@{lr}x{pool}" + ("" if how == "herding" else how)] = {
            "knn": round(float(np.mean(knns)), 4), "knns": knns,
            "gap": round(float(np.mean(gaps)), 5),
            "move_cpu": round((time.process_time() - t1) / SAMPLE_SEEDS, 1),
        }  # fmt: skip
    return scores


def moved(synth, n: int, test: ArrayData, schema: ArraySchema, seed: int, grid: list) -> dict:
    """The same plain draws moved with each setting of ``grid``."""
    draws = synth.sample(n, seed=10_000 + seed, move=False)
    x, labels = synth.encoder_.transform(draws)
    x, labels = torch.as_tensor(x), torch.as_tensor(labels)
    loss = synth.sample_release_.loss()
    scores = {}
    for steps, lr, *stop in grid:
        t1 = time.process_time()
        settings = MoveSettings(steps=steps, lr=lr, stop_at_noise=bool(stop))
        levels = synth.sample_release_.noise_levels() if stop else None
        out = move_samples(x, labels, loss, settings, levels)
        values = synth.encoder_.inverse_transform(out.numpy(), labels.numpy())
        scores[f"{steps}@{lr}" + ("+stop" if stop else "")] = {
            "knn": knn(values, test, schema, seed),
            "gap": round(embedding_gap(moved, labels, loss), 5),
            "move_cpu": round(time.process_time() - t1, 1),
        }
    return scores


def main() -> None:
    p = argparse.ArgumentParser()
    add_public_sets(p, "0,1")
    p.add_argument(
        "--epsilon",
        type=float,
        default=0.0,
        help="0 (default): the epsilon that matches ItalyPowerDemand's noise-to-signal",
    )
    p.add_argument("--log", default="results/series_move_public.jsonl")
    p.add_argument(
        "--grid",
        default="steps",
        choices=("steps", "stop", "pool"),
        help="steps: the 3 x 3 grid of steps and lr; stop: not moved, 100@0.03 "
        "and 100@0.03 with stop_at_noise; pool: herded selection (POOL_GRID)",
    )
    a = p.parse_args()
    torch.set_num_threads(1)
    for seed in harness.seeds(a):
        for name in a.sets.split(","):
            grid = {"steps": GRID, "stop": STOP_GRID, "pool": POOL_GRID}[a.grid]
            run(name, seed, a.epsilon, a.log, grid)


if __name__ == "__main__":
    main()
