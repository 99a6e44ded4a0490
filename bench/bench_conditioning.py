"""Conditioning side by side on scikit-learn's 8x8 digits: each GAN alone vs feature anchoring.

For each (way, epsilon): fit on the 1,437 training digits, sample 1,000 images with labels in
turn, and report label fidelity (the share a logistic regression trained on the REAL training
images assigns to the requested class, overall and the worst class), and the accuracy on the
360 real test digits of a logistic regression trained on the synthetic images (real-data
reference: the same classifier on the real training images). Privacy from each run's ledger.

    nice -n 10 python bench/bench_conditioning.py --out bench/results/digits_conditioning.md
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import numpy as np
import torch
from sklearn.linear_model import LogisticRegression

import harness
from dpforge import Synthesizer
from dpforge.datasets.images import load_digits_images
from dpforge.methods import METHODS
from dpforge.statistics.features import FeatureAnchorConfig

# GAN settings: the methods' defaults at batch 64 (conv generator and critic), 30 epochs.
GAN_EPOCHS = 30.0


def _flat(data) -> np.ndarray:
    return data.values.reshape(len(data), -1) / 16.0


def fit(way: str, epsilon: float, train, schema, seed: int) -> tuple[Synthesizer, float]:
    """``way`` is a method name (the GAN alone) or "anchor" (feature anchoring, defaults)."""
    timer = harness.Timer()
    if way == "anchor":
        synth = Synthesizer(
            schema, epsilon=epsilon, delta=1e-5, seed=seed, progress=False,
            anchor=FeatureAnchorConfig(),
        )  # fmt: skip
    else:
        config = METHODS[way][1](batch_size=64)
        synth = Synthesizer(
            schema, method=way, epsilon=epsilon, delta=1e-5, epochs=GAN_EPOCHS,
            method_options=config, seed=seed, progress=False, anchor=None,
        )  # fmt: skip
    synth.fit(train)
    return synth, timer.elapsed


def score(synth, reference, test, seed: int) -> dict:
    labels = [str(k % 10) for k in range(1000)]
    parts = [synth.sample(100, conditions={"label": k}, seed=seed + int(k)) for k in labels[:10]]
    values = np.concatenate([p.values for p in parts])
    requested = np.repeat(np.arange(10), 100)
    predicted = reference.predict(values.reshape(1000, -1) / 16.0)
    per_class = [(predicted[requested == k] == k).mean() for k in range(10)]
    tstr = LogisticRegression(max_iter=2000).fit(values.reshape(1000, -1) / 16.0, requested)
    accuracy = tstr.score(_flat(test), test.labels.astype(int))
    report = synth.privacy_spent()
    return {
        "label_fidelity": float(np.mean(per_class)),
        "worst_class": float(np.min(per_class)),
        "tstr_lr_accuracy": float(accuracy),
        "epsilon": report.epsilon,
    }


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--ways", default="anchor,dpcgan,dpwgan")
    p.add_argument("--epsilons", default="10,inf")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, default=None, help="results .md or .json (both written)")
    args = p.parse_args(argv)
    record = harness.provenance(__file__, argv)
    torch.set_num_threads(1)
    train, test, schema = load_digits_images()
    reference = LogisticRegression(max_iter=2000).fit(_flat(train), train.labels.astype(int))
    real = reference.score(_flat(test), test.labels.astype(int))
    rows = []
    for epsilon in (float(e) for e in args.epsilons.split(",")):
        for way in args.ways.split(","):
            synth, seconds = fit(way, epsilon, train, schema, args.seed)
            row = {"way": way, "target_epsilon": epsilon, "fit_seconds": round(seconds, 1)}
            row.update(score(synth, reference, test, args.seed))
            print(json.dumps(row), flush=True)
            rows.append(row)
    if args.out is not None:
        record.update(rows=rows, real_tstr_lr_accuracy=real)
        harness.write_results(args.out.with_suffix(".json"), record, TITLE, markdown(rows, real))


TITLE = "Conditioning on sklearn 8x8 digits: GANs alone vs feature anchoring"


def markdown(rows: list[dict], real: float) -> list[str]:
    """The Markdown body: one row per way and epsilon."""
    lines = [
        f"GANs: method defaults, batch 64, {GAN_EPOCHS:g} epochs, anchor=None. Anchor: "
        "FeatureAnchorConfig() defaults. 1,000 samples, 100 per requested class. Reference "
        f"and TSTR classifier: logistic regression; real-data TSTR accuracy {real:.3f}.",
        "",
        "| way | epsilon (ledger) | label fidelity | worst class | TSTR LR accuracy | fit s |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        eps = "inf (non-private)" if math.isinf(r["epsilon"]) else f"{r['epsilon']:.2f}"
        lines.append(
            f"| {r['way']} | {eps} | {r['label_fidelity']:.3f} | {r['worst_class']:.2f} | "
            f"{r['tstr_lr_accuracy']:.3f} | {r['fit_seconds']} |"
        )
    return lines


if __name__ == "__main__":
    main()
