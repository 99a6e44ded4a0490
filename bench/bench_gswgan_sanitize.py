"""GS-WGAN on scikit-learn's 8x8 digits: per-sample sanitizing (the paper) vs one batch release.

Both options at the SAME epsilon (sound accounting, ``dpforge.privacy.gswgan_accounting``) and
the same steps, seeds and networks; the noise multiplier of each is calibrated by the accountant
from the run's own event (``sanitize="per_sample"``: B releases per step; ``"batch"``: one).
Next to them, the non-private run of the same code (sigma = 0, C = inf) and real-data training.

Measures, on 1,000 synthetic images with labels from the uniform prior (the classes are public):

* label fidelity: a logistic regression trained on the REAL training images labels the
  synthetic images; the share that gets the requested label;
* train on synthetic, test on the real test images (360): logistic-regression accuracy and
  macro AuROC, and the small CNN's accuracy (``dpforge.evaluation.images``).

Example (each line a run, written as it finishes)::

    PYTHONPATH=$PWD/src OMP_NUM_THREADS=1 nice -n 10 python bench/bench_gswgan_sanitize.py \\
        --seeds 0,1,2 --epsilon 10 --steps 500 --out bench/results/gswgan_sanitize.jsonl
"""

from __future__ import annotations

import argparse
import json
import math
from dataclasses import asdict
from pathlib import Path

import numpy as np
import torch
from sklearn.linear_model import LogisticRegression

import harness
from dpforge import Synthesizer
from dpforge.data.arrays import ArrayData
from dpforge.datasets.images import load_digits_images
from dpforge.evaluation.images import tstr_auroc, tstr_cnn_accuracy
from dpforge.methods.gswgan import GSWGANConfig

RANGE = (0.0, 16.0)


def label_fidelity(synthetic: ArrayData, train: ArrayData) -> dict:
    """Share of synthetic images a real-trained classifier labels as requested (and per class)."""
    scale = RANGE[1]
    clf = LogisticRegression(max_iter=2000)
    clf.fit(train.values.reshape(len(train), -1) / scale, train.labels.astype(str))
    predicted = clf.predict(synthetic.values.reshape(len(synthetic), -1) / scale)
    requested = synthetic.labels.astype(str)
    per_class = {c: float(np.mean(predicted[requested == c] == c)) for c in sorted(set(requested))}
    return {"overall": float(np.mean(predicted == requested)), "per_class": per_class}


def scores(synthetic: ArrayData, train: ArrayData, test: ArrayData, classes, seed: int) -> dict:
    auroc = tstr_auroc(synthetic, test, classes, ("logistic",), seed=seed, pixel_range=RANGE)
    cnn = tstr_cnn_accuracy(synthetic, test, classes, epochs=10, seed=seed, pixel_range=RANGE)
    return {
        "label_fidelity": label_fidelity(synthetic, train),
        "lr_accuracy": auroc["logistic"].details["accuracy"],
        "lr_auroc_macro": auroc["logistic"].value,
        "cnn_accuracy": cnn.value,
    }


def run_one(variant: str, seed: int, args: argparse.Namespace, data) -> dict:
    train, test, schema = data
    config = GSWGANConfig(sanitize="per_sample" if variant == "nonprivate" else variant)
    k = config.resolved(len(train)).num_discriminators
    timer = harness.Timer()
    synth = Synthesizer(
        schema,
        method="gswgan",
        epsilon=math.inf if variant == "nonprivate" else args.epsilon,
        delta=args.delta,
        epochs=args.steps / k,  # steps = epochs * K (each step queries 1 of K subsets)
        method_options=config,
        seed=seed,
        progress=False,
        anchor=None,
    ).fit(train)
    seconds = timer.elapsed
    synthetic = synth.sample(args.samples, seed=seed + 100)
    report = synth.privacy_spent()
    return {
        "variant": variant,
        "seed": seed,
        "epsilon_rdp": report.epsilon_rdp,
        "delta": args.delta,
        "noise_multiplier": synth.plan_.noise_multiplier,
        "plan": asdict(synth.plan_),
        "num_discriminators": k,
        "batch_size": config.batch_size,
        "fit_seconds": round(seconds, 1),
        **scores(synthetic, train, test, schema.classes, seed),
    }


MEASURES = (
    ("label fidelity", lambda r: r["label_fidelity"]["overall"]),
    ("LR accuracy", lambda r: r["lr_accuracy"]),
    ("LR macro AuROC", lambda r: r["lr_auroc_macro"]),
    ("CNN accuracy", lambda r: r["cnn_accuracy"]),
)


def summary(path: Path) -> str:
    """A markdown table of the runs in ``path``: mean and std over seeds per variant."""
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    lines = [
        "| run | seeds | sigma | epsilon (RDP) | fit s | "
        + " | ".join(name for name, _ in MEASURES)
        + " |",
        "|---" * (5 + len(MEASURES)) + "|",
    ]
    for variant in ("per_sample", "batch", "nonprivate", "real_data"):
        runs = [r for r in rows if r["variant"] == variant]
        if not runs:
            continue
        cells = []
        for _, get in MEASURES:
            values = np.array([get(r) for r in runs])
            cells.append(
                f"{values.mean():.3f} ± {values.std():.3f}" if len(runs) > 1 else f"{values[0]:.3f}"
            )
        seeds = ", ".join(str(r["seed"]) for r in runs) if variant != "real_data" else "-"
        sigma = runs[0].get("noise_multiplier", "-")
        eps = runs[0].get("epsilon_rdp", "-")
        eps = f"{eps:.2f}" if isinstance(eps, float) else eps
        fit = (
            f"{np.mean([r['fit_seconds'] for r in runs]):.0f}" if "fit_seconds" in runs[0] else "-"
        )
        lines.append(
            f"| {variant} | {seeds} | {sigma} | {eps} | {fit} | " + " | ".join(cells) + " |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    harness.add_seeds(parser, "0,1,2")
    parser.add_argument("--variants", nargs="+", default=["per_sample", "batch", "nonprivate"])
    parser.add_argument("--epsilon", type=float, default=10.0)
    parser.add_argument("--delta", type=float, default=1e-5)
    parser.add_argument("--steps", type=int, default=500)
    parser.add_argument("--samples", type=int, default=1000)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--summary", action="store_true", help="print --out's table and exit")
    args = parser.parse_args(argv)
    if args.summary:
        print(summary(args.out), end="")
        return
    torch.set_num_threads(1)
    data = load_digits_images()
    train, test, schema = data
    real = {"variant": "real_data", **scores(train, train, test, schema.classes, 0)}
    harness.append_jsonl(args.out, {**real, **harness.provenance(__file__, argv)})
    for seed in harness.seeds(args):
        for variant in args.variants:
            result = run_one(variant, seed, args, data)
            print(json.dumps({k: v for k, v in result.items() if k != "plan"}), flush=True)
            harness.append_jsonl(args.out, result)


if __name__ == "__main__":
    main()
