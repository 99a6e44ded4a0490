"""Sampling-time remedies for the draw-to-draw spread of moved series (issue 24), on THE SAME
fit and sampling seeds as the library's default; rule in bench/results/series_spread.md
(written and committed before any figure of these candidates existed).

Each candidate reads only the fitted generator, the stored release and the public feature
map (post-processing: no ledger entry), and returns ``n`` series:

* ``default``: ``synth.sample(n, seed=s)`` as a user gets it (labels drawn from the prior,
  latents drawn, moved 100 Adam steps to the release);
* ``best4``: four sets sampled as the default, with seeds ``s`` (the default's own set) and
  ``s + 1,000,003 k`` (k = 1, 2, 3); kept: the set whose moved per-class mean embedding is
  nearest the release (the embedding gap, the moving's own loss);
* ``balanced``: the same generator and moving, with the class counts exactly ``n`` times the
  prior (largest remainders) and antithetic latents within each class (``z`` and ``-z``),
  from a generator seeded ``s``.

The fit is the library's default (``series_spread.fit_apart`` with release = train = seed):
ItalyPowerDemand as ``italy_series_views.py`` fits it (or a folder that ``series_spread.py
--save-models`` saved for that seed), public UCR sets as ``series_znorm_public.py`` does. 1-NN
DTW on each set's test split. One JSON line per (set, seed) to ``--log``. Example (from
bench/, ``OMP_NUM_THREADS=1 PYTHONPATH=../src nice -n 10``)::

    python series_spread_sampling.py --sets gunpoint,arrow_head,osuleaf --seeds 0,1,2 \\
        --sample-seeds 20000,20001,20002,20003 --log results/series_spread_public.jsonl
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import torch

import dpforge
import harness
from dpforge.data.arrays import ArrayData
from dpforge.privacy.noise import make_generator
from dpforge.statistics.particles import MoveSettings, move_samples
from series_move_public import add_public_sets, knn
from series_runs import gap
from series_spread import fit_apart, load

CANDIDATES = ("default", "best4", "balanced")
BEST_OF, STRIDE = 4, 1_000_003


def exact_counts(prior: np.ndarray, n: int) -> np.ndarray:
    """``n`` split by ``prior`` with largest remainders (sums to ``n``)."""
    raw = np.asarray(prior, dtype=np.float64) * n
    counts = np.floor(raw).astype(int)
    order = np.argsort(-(raw - counts), kind="stable")
    counts[order[: n - counts.sum()]] += 1
    return counts


def balanced(synth, n: int, seed: int) -> ArrayData:
    """Exact class counts, antithetic latents per class, moved as the default moves."""
    generator = make_generator(seed, "cpu")
    net = synth.generator_
    counts = exact_counts(synth.label_prior_, n)
    labels = torch.cat([torch.full((int(c),), k, dtype=torch.long) for k, c in enumerate(counts)])
    latents = []
    for c in counts:
        half = net.sample_latent((int(c) + 1) // 2, generator)
        latents.append(torch.cat([half, -half])[: int(c)])
    with torch.no_grad():
        x = net(torch.cat(latents), labels)
    moved = move_samples(x, labels, synth.sample_release_.loss(), MoveSettings())
    return synth.encoder_.inverse_transform(moved.detach().cpu().numpy(), labels.numpy())


def scored(synth, n: int, test, schema, seed: int, sample_seed: int) -> dict:
    sets = [synth.sample(n, seed=sample_seed + STRIDE * k) for k in range(BEST_OF)]
    gaps = [gap(synth, s) for s in sets]
    chosen = int(np.argmin(gaps))
    other = balanced(synth, n, sample_seed)
    out = {"default": knn(sets[0], test, schema, seed)}
    out["best4"] = out["default"] if chosen == 0 else knn(sets[chosen], test, schema, seed)
    out["balanced"] = knn(other, test, schema, seed)
    out["best4_chosen"] = chosen
    out["gaps"] = [round(g, 6) for g in gaps]
    out["balanced_gap"] = round(gap(synth, other), 6)
    return out


def fitted(name: str, seed: int, epsilon: float, data, models: str | None):
    """The library's default fit of ``seed``: a saved folder if there is one, else fitted."""
    folder = (
        None if models is None else Path(models) / f"{name}_eps{epsilon:g}_r{seed}_t{seed}_mNone"
    )
    if folder is not None and folder.exists():
        return dpforge.load(folder), None
    return fit_apart(seed, seed, None, epsilon, data)


def run(name: str, seed: int, sample_seeds: list[int], epsilon: float, log: str, models) -> None:
    data = load(name)
    train, test, schema, _ = data
    t0 = time.process_time()
    synth, fit_cpu = fitted(name, seed, epsilon, data, models)
    runs = {str(s): scored(synth, len(train), test, schema, seed, s) for s in sample_seeds}
    summary = {c: round(float(np.mean([r[c] for r in runs.values()])), 4) for c in CANDIDATES}
    row = dict(set=name, seed=seed, cli_epsilon=epsilon, epsilon=round(synth.epsilon, 4),
               n_train=len(train), n_test=len(test),
               fit_cpu=None if fit_cpu is None else round(fit_cpu, 1), loaded=fit_cpu is None,
               cpu=round(time.process_time() - t0, 1),
               epsilon_pld=synth.privacy_spent().epsilon_pld, mean=summary, runs=runs)  # fmt: skip
    harness.log_row(log, row)


def main() -> None:
    p = argparse.ArgumentParser()
    add_public_sets(p)
    p.add_argument("--sample-seeds", default="20000,20001,20002,20003",
                   help="comma list; 'italy' for 10,000 + seed only")  # fmt: skip
    p.add_argument("--epsilon", type=float, default=3.0, help="ItalyPowerDemand only")
    p.add_argument("--models", default=None, help="series_spread.py --save-models' folder")
    p.add_argument("--log", required=True)
    a = p.parse_args()
    torch.set_num_threads(1)
    for name in a.sets.split(","):
        for seed in harness.seeds(a):
            if a.sample_seeds == "italy":
                samples = [10_000 + seed]
            else:
                samples = [int(s) for s in a.sample_seeds.split(",")]
            run(name, seed, samples, a.epsilon, a.log, a.models)


if __name__ == "__main__":
    main()
