"""Trials for issue 24 part 4 (series): per-class Gaussians on the validation split of
ItalyPowerDemand's TRAINING part (bench_series.py --validation's split; the test split is
never read), and the z-normalisation of samples as post-processing.

``--exact``: per-class mean and covariance of the fit part, exactly (no DP; a ceiling), each
class's top ``rank`` principal directions, sampled with a temperature. Otherwise: the library's
two moment releases (``dpforge.statistics.moments``: a DP principal subspace, then per-class
moments in it) at noise multiplier ``sigma`` (1.785 = 1.2622 * sqrt(2): two releases with the
privacy of the series anchor's one release at epsilon 3), the records first scaled to the DP
channel range of seed 0 (+-2.83) and, with ``--clip B``, to L2 norm B (u = x / B instead of
x / sqrt(24): more signal per unit of noise). One JSON line per run on stdout. Example (from
bench/, ``OMP_NUM_THREADS=1 PYTHONPATH=../src``)::

    python series_moment_trials.py --sigma 1.785 --rank 8 --clip 0.8 --znorm
"""

from __future__ import annotations

import argparse
import json
import math

import numpy as np
from sklearn.model_selection import train_test_split

from dpforge.datasets.series import load_italy_power_demand
from dpforge.evaluation.series import _dtw_cross
from dpforge.statistics.moments import class_moments, gaussian_parameters, principal_subspace

SCALE, D, CLASSES = 2.8284271247461903, 24, ("1", "2")


def split():
    train, _, _ = load_italy_power_demand(seed=0)
    fx, vx, fy, vy = train_test_split(train.values, train.labels, test_size=0.2,
                                      stratify=train.labels, random_state=12345)  # fmt: skip
    return (fx.reshape(len(fx), -1), np.asarray(fy).astype(str),
            vx.reshape(len(vx), -1), np.asarray(vy).astype(str))  # fmt: skip


def knn(sx, sy, vx, vy) -> float:
    d = _dtw_cross(sx[:, None, :], vx[:, None, :], None)
    d = d if d.shape == (len(sx), len(vx)) else d.T
    return round(float((np.asarray(sy)[d.argmin(0)] == vy).mean()), 4)


def znorm(x):
    return (x - x.mean(1, keepdims=True)) / x.std(1, keepdims=True).clip(1e-6)


def exact(fx, fy, n, rng, rank, temp):
    out = []
    for c in CLASSES:
        xc = fx[fy == c]
        values, vectors = np.linalg.eigh(np.cov(xc.T))
        values = np.clip(values, 0, None)
        values[: len(values) - rank] = 0
        out.append(xc.mean(0) + temp * (rng.normal(size=(n, D)) * np.sqrt(values)) @ vectors.T)
    return np.concatenate(out)


def private(fx, fy, n, rng, rank, sigma, clip):
    y = np.array([CLASSES.index(c) for c in fy])
    x = np.clip(fx / SCALE, -1, 1)
    if clip:
        x = x * np.minimum(1, clip / np.linalg.norm(x, axis=1, keepdims=True)) * math.sqrt(D) / clip
    bound = clip or math.sqrt(D)
    sub = principal_subspace(x, 2, rank, sigma, 0.5, rng)
    means, factors = gaussian_parameters(class_moments(x, y, 2, sub, sigma, 0.5, rng))
    offset = sub.mean - sub.basis @ (sub.basis.T @ sub.mean)
    parts = [offset + (means[k] + rng.normal(size=(n, sub.rank)) @ factors[k].T) @ sub.basis.T
             for k in range(2)]  # fmt: skip
    return np.concatenate(parts) * bound * SCALE


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--exact", action="store_true")
    p.add_argument("--rank", type=int, default=8)
    p.add_argument("--temp", type=float, default=1.0)
    p.add_argument("--sigma", type=float, default=1.785)
    p.add_argument("--clip", type=float, default=0.0)
    p.add_argument("--znorm", action="store_true")
    p.add_argument("--seeds", default="0,1,2")
    a = p.parse_args()
    fx, fy, vx, vy = split()
    n = len(fx) // 2
    for seed in (int(s) for s in a.seeds.split(",")):
        rng = np.random.default_rng(seed)
        if a.exact:
            sx = exact(fx, fy, n, rng, a.rank, a.temp)
        else:
            sx = private(fx, fy, n, rng, a.rank, a.sigma, a.clip)
        sx = znorm(sx) if a.znorm else sx
        print(json.dumps({**vars(a), "seed": seed, "knn": knn(sx, np.repeat(CLASSES, n), vx, vy)}))


if __name__ == "__main__":
    main()
