"""Trials for issue 24 part 4 (series): public perceptual features for the series anchor, on
the validation split of ItalyPowerDemand's TRAINING part (bench_series.py --validation's split:
fit on 613, score on 154; the test split is never read).

The public set: UCR/UEA sets that sktime ships offline, NOT ItalyPowerDemand (``PUBLIC``), each
channel of each series resampled to length 24 (linear interpolation) and z-normalised, plus
random crops (a window of 1/4 to all of the series, resampled to 24) as augmentation. A small
1-D convolutional extractor learns to tell the (set, class) pairs apart; its pooled layer
activations, each layer scaled to norm 1, are the perceptual features. The release: per-class
sums of those features and of the library's random features (values + differences), as two
Gaussian releases with one noise multiplier (1.785 = 1.2622 * sqrt(2), the same privacy as the
library's one release at 1.2622 for epsilon 3 after the metadata; 0: non-private). A Conv1d
generator (the library's) is trained on the sum of both losses. ``--perceptual-weight 0`` with
``--sigma 1.2622`` is the library's own anchor (one release). The channel range is fixed at the
DP estimate of seed 0 (+-2.83), as in series_trials.py. One JSON line per run to ``--log``.
Example (from bench/, ``OMP_NUM_THREADS=1 PYTHONPATH=../src``)::

    python series_perceptual_trials.py --sigma 1.785 --seed 0 --tag p1
"""

from __future__ import annotations

import argparse
import json
import math
import time

import numpy as np
import torch
from sklearn.model_selection import train_test_split
from torch import nn

from dpforge.data.arrays import ArrayData
from dpforge.datasets.series import load_italy_power_demand
from dpforge.evaluation.series import tstr_accuracy
from dpforge.nets.conv1d import Conv1dGenerator
from dpforge.nets.init import initialise
from dpforge.statistics.anchor import train_anchor
from dpforge.statistics.features import FeatureAnchorConfig, RandomFeatures

PUBLIC = ("unit_test", "gunpoint", "arrow_head", "osuleaf", "acsf1", "basic_motions")
SCALE = 2.8284271247461903
LENGTH = 24
POOLS = (6, 3, 1)


def resample(x: np.ndarray, length: int) -> np.ndarray:
    """(n, T) -> (n, length) by linear interpolation."""
    t_old = np.linspace(0, 1, x.shape[1])
    t_new = np.linspace(0, 1, length)
    return np.stack([np.interp(t_new, t_old, row) for row in x])


def znorm(x: np.ndarray) -> np.ndarray:
    return (x - x.mean(1, keepdims=True)) / x.std(1, keepdims=True).clip(1e-6)


def public_set(rng: np.random.Generator, crops: int) -> tuple[np.ndarray, np.ndarray]:
    """Public series (n, 1, 24) in [-1, 1] and (set, class) labels."""
    from sktime import datasets

    xs, ys, base = [], [], 0
    for name in PUBLIC:
        parts = [getattr(datasets, f"load_{name}")(split=s, return_type="numpy3D") for s in
                 ("train", "test")]  # fmt: skip
        x = np.concatenate([p[0] for p in parts]).astype(np.float64)
        y = np.unique(np.concatenate([p[1] for p in parts]).astype(str), return_inverse=True)[1]
        flat = x.reshape(-1, x.shape[-1])  # each channel its own series
        lab = np.repeat(y, x.shape[1]) + base
        views = [resample(flat, LENGTH)]
        for _ in range(crops):
            width = rng.integers(max(LENGTH, flat.shape[1] // 4), flat.shape[1] + 1)
            start = rng.integers(0, flat.shape[1] - width + 1)
            views.append(resample(flat[:, start : start + width], LENGTH))
        xs += [znorm(v) for v in views]
        ys += [lab] * len(views)
        base = lab.max() + 1
    x = np.clip(np.concatenate(xs) / SCALE, -1, 1)[:, None, :]
    return x.astype(np.float32), np.concatenate(ys)


class Extractor1d(nn.Module):
    """Three 5-wide 1-D convolution blocks and a linear head (for training only)."""

    def __init__(self, n_out: int, widths=(16, 32, 32)):
        super().__init__()
        blocks, c_in = [], 1
        for i, w in enumerate(widths):
            pool = [nn.MaxPool1d(2)] if i < len(widths) - 1 else []
            blocks.append(nn.Sequential(nn.Conv1d(c_in, w, 5, padding=2), nn.ReLU(), *pool))
            c_in = w
        self.blocks = nn.ModuleList(blocks)
        self.head = nn.Linear(c_in, n_out)

    def layers(self, x):
        out = []
        for b in self.blocks:
            x = b(x)
            out.append(x)
        return out

    def forward(self, x):
        return self.head(self.layers(x)[-1].mean(2))

    def features(self, x):
        parts = []
        for act, g in zip(self.layers(x), POOLS, strict=True):
            p = nn.functional.adaptive_avg_pool1d(act, g).flatten(1)
            parts.append(p / p.norm(dim=1, keepdim=True).clamp_min(1e-12))
        return torch.cat(parts, 1) / math.sqrt(len(parts))


def train_extractor(x, y, seed: int, steps: int) -> Extractor1d:
    g = torch.Generator().manual_seed(seed)
    net = Extractor1d(int(y.max()) + 1)
    initialise(net, g)
    opt = torch.optim.Adam(net.parameters(), lr=2e-3)
    xt, yt = torch.as_tensor(x), torch.as_tensor(y, dtype=torch.long)
    for _ in range(steps):
        idx = torch.randint(len(xt), (128,), generator=g)
        loss = nn.functional.cross_entropy(net(xt[idx]), yt[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
    net.eval()
    for p in net.parameters():
        p.requires_grad_(False)
    return net, float(loss.detach())


def release(phi: np.ndarray, y: np.ndarray, sigma: float, rng) -> torch.Tensor:
    """Noisy per-class mean embeddings (sums and c-weighted counts, sensitivity sqrt(1+c^2))."""
    c, k = 0.5, 2
    sums = np.stack([phi[y == j].sum(0) for j in range(k)])
    counts = np.bincount(y, minlength=k).astype(float)
    if sigma > 0:
        std = sigma * math.sqrt(1 + c * c)
        sums = sums + rng.normal(0, std, sums.shape)
        counts = (c * counts + rng.normal(0, std, k)) / c
    return torch.as_tensor(sums / np.maximum(counts, 1)[:, None], dtype=torch.float32)


def class_gap(ph, labels, targets):
    m = nn.functional.one_hot(labels, targets.shape[0]).to(ph).T
    means = m @ ph / m.sum(1, keepdim=True).clamp_min(1)
    return ((means - targets) ** 2).sum(1).mean()


def move_particles(x0, labels, loss, steps: int, lr: float) -> np.ndarray:
    """The generated series themselves optimised on the loss (kernel-herding-like spreading):
    post-processing of the releases; parameterised through tanh to stay in [-1, 1]."""
    p = torch.atanh(torch.as_tensor(x0, dtype=torch.float32).clamp(-0.999, 0.999))
    p.requires_grad_(True)
    opt = torch.optim.Adam([p], lr=lr)
    for _ in range(steps):
        value = loss(torch.tanh(p), labels)
        opt.zero_grad()
        value.backward()
        opt.step()
    return torch.tanh(p).detach().numpy()


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--sigma", type=float, default=1.785)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--perceptual-weight", type=float, default=1.0)
    p.add_argument("--rff-weight", type=float, default=1.0)
    p.add_argument("--extractor-steps", type=int, default=400)
    p.add_argument("--crops", type=int, default=3)
    p.add_argument("--steps", type=int, default=600)
    p.add_argument("--znorm", action="store_true", help="also score z-normalised samples")
    p.add_argument(
        "--particles",
        type=int,
        default=0,
        help="then move the samples themselves this many Adam steps on the loss",
    )
    p.add_argument("--particle-lr", type=float, default=0.01)
    p.add_argument(
        "--test",
        action="store_true",
        help="REPORTING only: fit on the whole training part, score on the test split",
    )
    p.add_argument("--tag", default="")
    p.add_argument("--log", default="results/italy_series_perceptual_trials.jsonl")
    a = p.parse_args()
    torch.set_num_threads(1)
    t0 = time.process_time()
    train, test, schema = load_italy_power_demand(seed=0, test_size=0.3)
    fx, vx, fy, vy = train_test_split(train.values, train.labels, test_size=0.2,
                                      stratify=train.labels, random_state=12345)  # fmt: skip
    if a.test:  # a setting chosen on the validation split, reported on the test split
        fx, fy, vx, vy = train.values, train.labels, test.values, test.labels
    classes = list(schema.classes)
    x = np.clip(fx / SCALE, -1, 1).astype(np.float32)
    y = np.array([classes.index(str(v)) for v in fy])
    rng = np.random.default_rng(a.seed)
    xt = torch.as_tensor(x)
    rff = RandomFeatures((1, LENGTH), ("values", "differences"),
                         FeatureAnchorConfig(bandwidths=(0.1, 0.2)),
                         torch.Generator().manual_seed(1000 + a.seed))  # fmt: skip
    with torch.no_grad():
        t_rff = release(rff(xt).double().numpy(), y, a.sigma, rng)
    net, ext_loss = None, None
    if a.perceptual_weight > 0:
        px, py = public_set(np.random.default_rng(a.seed), a.crops)
        net, ext_loss = train_extractor(px, py, a.seed, a.extractor_steps)
        with torch.no_grad():
            t_per = release(net.features(xt).double().numpy(), y, a.sigma, rng)

    def loss(xg, labels):
        out = a.rff_weight * class_gap(rff(xg), labels, t_rff)
        if net is not None:
            out = out + a.perceptual_weight * class_gap(net.features(xg), labels, t_per)
        return out

    grng = torch.Generator().manual_seed(a.seed)
    gen = Conv1dGenerator(100, 2, (1, LENGTH), (64, 32), 256)
    initialise(gen, torch.Generator().manual_seed(a.seed))
    cfg = FeatureAnchorConfig(steps=a.steps, batch_size=500)
    final = train_anchor(gen, loss, 2, cfg, grng, betas=(0.5, 0.999), one_thread=False)
    fit_cpu = time.process_time() - t0
    gen.eval()
    lab = torch.as_tensor(np.random.default_rng(a.seed + 7).integers(0, 2, len(x)))
    with torch.no_grad():
        xs = gen(gen.sample_latent(len(x), grng), lab).numpy() * SCALE
    before = None
    if a.particles:  # the same samples scored before they move: the same-run baseline
        before = tstr_accuracy(ArrayData(xs, np.array([classes[i] for i in lab.numpy()],
                               dtype=object)), ArrayData(vx, vy), classes, models=("knn_dtw",),
                               seed=a.seed)["knn_dtw"].value  # fmt: skip
        xs = move_particles(xs / SCALE, lab, loss, a.particles, a.particle_lr) * SCALE
    names = np.array([classes[i] for i in lab.numpy()], dtype=object)
    val = ArrayData(vx, vy)
    r = tstr_accuracy(ArrayData(xs, names), val, classes, seed=a.seed)
    row = dict(tag=a.tag, sigma=a.sigma, seed=a.seed, pw=a.perceptual_weight, rw=a.rff_weight,
               ext_steps=a.extractor_steps, crops=a.crops, steps=a.steps,
               particles=a.particles, plr=a.particle_lr,
               knn=round(r["knn_dtw"].value, 4), rf=round(r["random_forest"].value, 4),
               knn_before_particles=before, test=a.test, loss=round(final, 5),
               ext_loss=ext_loss, fit_cpu=round(fit_cpu, 1))  # fmt: skip
    if a.znorm:
        zs = znorm(xs.reshape(len(xs), -1)).reshape(xs.shape)
        rz = tstr_accuracy(ArrayData(zs, names), val, classes, models=("knn_dtw",), seed=a.seed)
        row["knn_znorm"] = round(rz["knn_dtw"].value, 4)
    print(json.dumps(row), flush=True)
    with open(a.log, "a") as f:
        f.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
