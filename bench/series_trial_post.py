"""Trials for issue 24: post-processing of saved synthetic series (series_trials.py --mult 4):
1-NN DTW on the validation split with N, 2N or 4N synthetic series, and after Wilson editing
(drop a synthetic series whose k nearest synthetic neighbours by DTW mostly carry the other
label). Usage (from bench/): python series_trial_post.py TAG SEED [SAMPLES_DIR [LOG]]."""

import json
import sys

import numpy as np
from sklearn.model_selection import train_test_split

from dpforge.datasets.series import load_italy_power_demand
from dpforge.evaluation.series import _dtw_cross

tag, seed = sys.argv[1], int(sys.argv[2])
folder = sys.argv[3] if len(sys.argv) > 3 else "/tmp"
log = sys.argv[4] if len(sys.argv) > 4 else "results/italy_series_trials.jsonl"
train, test, schema = load_italy_power_demand(seed=0, test_size=0.3)
fx, vx, fy, vy = train_test_split(
    train.values, train.labels, test_size=0.2, stratify=train.labels, random_state=12345
)
classes = list(schema.classes)
yv = np.array([classes.index(str(lab_)) for lab_ in vy])
d = np.load(f"{folder}/syn_{tag}_{seed}.npz")
xs, ys = d["x"], d["y"]
n = len(fx)


def cross(a, b):
    return np.concatenate([_dtw_cross(a[i : i + 60], b, None) for i in range(0, len(a), 60)])


Dt = cross(vx, xs)  # (154, 4n)


def acc(idx):
    nn = np.asarray(idx)[Dt[:, idx].argmin(1)]
    return float((ys[nn] == yv).mean())


res = {
    "tag": tag,
    "seed": seed,
    "base_n": acc(np.arange(n)),
    "all_4n": acc(np.arange(len(xs))),
    "base_2n": acc(np.arange(2 * n)),
}
m = 2 * n
Ds = cross(xs[:m], xs[:m])
np.fill_diagonal(Ds, np.inf)
for k in (1, 3, 5):
    nb = np.argsort(Ds, 1)[:, :k]
    agree = (ys[:m][nb] == ys[:m, None]).mean(1)
    keep = np.where(agree > 0.5)[0]
    keep_n = np.where(agree[:n] > 0.5)[0]
    res[f"edit{k}_from_n(kept {len(keep_n)})"] = acc(keep_n)
    res[f"edit{k}_from_2n_first_n"] = acc(keep[:n])
print(json.dumps(res))
with open(log, "a") as f:
    f.write(json.dumps(res) + "\n")
