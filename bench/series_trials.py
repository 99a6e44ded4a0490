"""Trials for issue 24 (series): feature views of the series embedding anchor, on the
validation split of ItalyPowerDemand's TRAINING part (the same split as bench_series.py
--validation; the test split is never read unless --test).

A stripped copy of the library's path (statistics/features.py, nets/conv1d.py,
statistics/anchor.train_anchor) with the views as an option, to try views without changing the
library: ``v`` values, ``d`` first differences, ``d2`` second differences, ``wL/S`` windows of
L values every S hours (each its own view), ``eL/S`` windows of values and their differences.
The channel range is fixed at the one the DP range estimate gave on seed 0 (+-2.83) and
``--sigma`` is the noise multiplier of the one release (1.2622: what the library calibrates
for epsilon = 3 after the metadata; 0: non-private). ``--mult M`` samples M times as many
series as the fit part and saves them (``--samples``) for series_trial_post.py; the scores
use the first N. One JSON line per run is appended to ``--log``. Example (from bench/)::

    python series_trials.py --views v,d,w8/4 --sigma 0 --tag np
"""

import argparse
import json
import math
import time

import numpy as np
import torch
from sklearn.model_selection import train_test_split

from dpforge.data.arrays import ArrayData
from dpforge.datasets.series import load_italy_power_demand
from dpforge.evaluation.series import tstr_accuracy
from dpforge.nets.conv1d import Conv1dGenerator
from dpforge.nets.init import initialise
from dpforge.statistics.anchor import train_anchor
from dpforge.statistics.features import FeatureAnchorConfig

p = argparse.ArgumentParser()
p.add_argument("--views", default="v,d")
p.add_argument("--bw", default="0.1,0.2")
p.add_argument("--nf", type=int, default=2000)
p.add_argument("--sigma", type=float, default=1.2622)
p.add_argument("--seed", type=int, default=0)
p.add_argument("--steps", type=int, default=600)
p.add_argument("--batch", type=int, default=500)
p.add_argument("--test", action="store_true")
p.add_argument("--tag", default="")
p.add_argument("--log", default="results/italy_series_trials.jsonl")
p.add_argument("--samples", default="/tmp")
p.add_argument("--mult", type=int, default=1)
a = p.parse_args()
torch.set_num_threads(1)
t0 = time.process_time()
train, test, schema = load_italy_power_demand(seed=0, test_size=0.3)
if not a.test:
    fx, vx, fy, vy = train_test_split(
        train.values, train.labels, test_size=0.2, stratify=train.labels, random_state=12345
    )
    train, test = ArrayData(fx, fy), ArrayData(vx, vy)
SCALE = 2.8284271247461903
x = np.clip(train.values / SCALE, -1, 1)
classes = list(schema.classes)
y = np.array([classes.index(str(lab_)) for lab_ in train.labels])
bws = tuple(float(b) for b in a.bw.split(","))


def view_fns(spec):
    out = []
    for s in spec.split(","):
        if s == "v":
            out.append((s, lambda t: t.flatten(1)))
        elif s == "d":
            out.append((s, lambda t: (t[..., 1:] - t[..., :-1]).flatten(1)))
        elif s == "d2":
            out.append((s, lambda t: (t[..., 2:] - 2 * t[..., 1:-1] + t[..., :-2]).flatten(1)))
        elif s.startswith("w") or s.startswith("e"):  # wL/S windows of values, eL/S of values+diffs
            L, S = (int(u) for u in s[1:].split("/"))
            for st in range(0, 24 - L + 1, S):
                if s[0] == "w":
                    out.append((f"{s}@{st}", lambda t, st=st, L=L: t[..., st : st + L].flatten(1)))
                else:
                    out.append(
                        (
                            f"{s}@{st}",
                            lambda t, st=st, L=L: torch.cat(
                                [
                                    t[..., st : st + L],
                                    t[..., st + 1 : st + L] - t[..., st : st + L - 1],
                                ],
                                -1,
                            ).flatten(1),
                        )
                    )
    return out


views = view_fns(a.views)
g = torch.Generator().manual_seed(1000 + a.seed)
probe = torch.zeros(1, 1, 24)
W = []
for _name, fn in views:
    dim = fn(probe).shape[1]
    counts = np.diff(np.linspace(0, a.nf, len(bws) + 1).round()).astype(int)
    W.append(
        torch.cat(
            [
                torch.randn(c, dim, generator=g) / (b * math.sqrt(dim))
                for c, b in zip(counts, bws, strict=True)
            ]
        )
    )


def feats(t):
    sc = 1 / math.sqrt(len(views))
    parts = []
    for (_name, fn), w in zip(views, W, strict=True):
        pr = fn(t) @ w.T
        parts += [
            torch.cos(pr) * sc / math.sqrt(w.shape[0]),
            torch.sin(pr) * sc / math.sqrt(w.shape[0]),
        ]
    return torch.cat(parts, 1)


with torch.no_grad():
    phi = feats(torch.as_tensor(x, dtype=torch.float32)).double().numpy()
K = 2
sums = np.stack([phi[y == k].sum(0) for k in range(K)])
counts = np.bincount(y, minlength=K).astype(float)
rng = np.random.default_rng(a.seed)
c = 0.5
std = a.sigma * math.sqrt(1 + c * c)
if a.sigma > 0:
    sums = sums + rng.normal(0, std, sums.shape)
    counts = (c * counts + rng.normal(0, std, K)) / c
targets = torch.as_tensor(sums / np.maximum(counts, 1)[:, None], dtype=torch.float32)


def loss(xg, labels):
    ph = feats(xg)
    m = torch.nn.functional.one_hot(labels, K).to(ph).T
    means = m @ ph / m.sum(1, keepdim=True).clamp_min(1)
    return ((means - targets) ** 2).sum(1).mean()


grng = torch.Generator().manual_seed(a.seed)
gen = Conv1dGenerator(100, K, (1, 24), (64, 32), 256)
initialise(gen, torch.Generator().manual_seed(a.seed))  # weights from a generator, no global seed
cfg = FeatureAnchorConfig(steps=a.steps, batch_size=a.batch)
final = train_anchor(gen, loss, K, cfg, grng, betas=(0.5, 0.999), one_thread=False)
fit_cpu = time.process_time() - t0
gen.eval()
n = len(x) * a.mult
lab = torch.as_tensor(np.random.default_rng(a.seed + 7).integers(0, K, n))
with torch.no_grad():
    xs = gen(gen.sample_latent(n, grng), lab).numpy() * SCALE
np.savez(f"{a.samples}/syn_{a.tag}_{a.seed}.npz", x=xs, y=lab.numpy())
syn = ArrayData(xs, np.array([classes[i] for i in lab.numpy()], dtype=object))
r = tstr_accuracy(ArrayData(xs[: len(x)], syn.labels[: len(x)]), test, classes, seed=a.seed)
row = dict(
    tag=a.tag,
    views=a.views,
    bw=a.bw,
    nf=a.nf,
    sigma=a.sigma,
    seed=a.seed,
    steps=a.steps,
    test=a.test,
    knn=round(r["knn_dtw"].value, 4),
    rf=round(r["random_forest"].value, 4),
    loss=final,
    fit_cpu=round(fit_cpu, 1),
    nviews=len(views),
)
print(json.dumps(row))
with open(a.log, "a") as f:
    f.write(json.dumps(row) + "\n")
