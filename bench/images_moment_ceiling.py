"""Issue 24 diagnosis: how far can the moments generator's family go? Two rows kinds on the
first ``--n`` MNIST training images, scored as bench_images_device.py scores (a CNN trained on
``--samples`` synthetic images, tested on the real test set; label fidelity and Fréchet
distance from one reference CNN trained on the same ``--n`` images):

- ``exact:R:K``: NOT private, a ceiling: a per-class Gaussian mixture of K full-covariance
  components fitted exactly (scikit-learn) in the top-R PCA subspace (K = 1 is the family
  of the library's moments generator);
- ``dp:R``: the library's moments anchor at ``--epsilon`` with rank R (default 40).

    cd bench && OMP_NUM_THREADS=1 python images_moment_ceiling.py --specs \\
        exact:40:1,exact:40:10,exact:40:30,exact:80:10,dp:40,dp:80,dp:120 \\
        --out results/images_moment_ceiling.json
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch
from sklearn.decomposition import PCA
from sklearn.mixture import GaussianMixture

import harness
from dpforge import Synthesizer
from dpforge.data.arrays import ArrayData
from dpforge.datasets.images import load_idx_dataset
from dpforge.evaluation.images import tstr_cnn_accuracy
from dpforge.evaluation.reference import ReferenceClassifier
from dpforge.statistics.features import feature_anchor_defaults


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    harness.add_data_dir(p)
    p.add_argument("--specs", default="exact:40:1,exact:40:10,dp:40,dp:80")
    p.add_argument("--n", type=int, default=20000)
    p.add_argument("--samples", type=int, default=10000)
    p.add_argument("--epsilon", type=float, default=10.0)
    p.add_argument("--seed", type=int, default=0)
    harness.add_out(p, Path("results/images_moment_ceiling.json"))
    return p.parse_args(argv)


def exact_mixture(train: ArrayData, rank: int, k: int, samples: int, seed: int) -> ArrayData:
    """Samples of per-class K-component Gaussian mixtures fitted exactly in a PCA subspace."""
    x = train.values.reshape(len(train.values), -1).astype(np.float64) / 127.5 - 1.0
    y = np.asarray(train.labels)
    pca = PCA(rank, random_state=seed).fit(x)
    z, classes = pca.transform(x), np.unique(y)
    per = samples // len(classes)
    parts = []
    for c in classes:
        mixture = GaussianMixture(k, covariance_type="full", reg_covar=1e-4, random_state=seed)
        parts.append(pca.inverse_transform(mixture.fit(z[y == c]).sample(per)[0]))
    values = np.clip((np.vstack(parts) + 1.0) * 127.5, 0, 255)
    return ArrayData(values.reshape((-1, *train.values.shape[1:])), np.repeat(classes, per))


def dp_moments(train: ArrayData, schema, rank: int, args: argparse.Namespace) -> ArrayData:
    anchor = replace(feature_anchor_defaults("image"), rank=rank)
    synth = Synthesizer(schema, epsilon=args.epsilon, delta=1e-5, seed=args.seed,
                        progress=False, anchor=anchor).fit(train)  # fmt: skip
    return synth.sample(args.samples, seed=args.seed + 1)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    torch.set_num_threads(1)
    train, test, schema = load_idx_dataset("mnist", harness.data_dir(args.data_dir), args.n)
    reference = ReferenceClassifier(schema.classes, 1, args.seed).fit(train)
    record = {**harness.provenance(__file__, argv), "rows": []}
    for spec in ["real", *args.specs.split(",")]:
        kind, *numbers = spec.split(":")
        started = time.process_time()
        if kind == "real":
            images = ArrayData(train.values[: args.samples], train.labels[: args.samples])
        elif kind == "exact":
            images = exact_mixture(train, int(numbers[0]), int(numbers[1]), args.samples,
                                   args.seed)  # fmt: skip
        else:
            images = dp_moments(train, schema, int(numbers[0]), args)
        cpu = time.process_time() - started
        cnn = tstr_cnn_accuracy(images, test, schema.classes, epochs=2, seed=args.seed)
        record["rows"].append({
            "spec": spec, "cnn_accuracy": cnn.value, "fit_cpu_s": cpu,
            "label_fidelity": reference.label_fidelity(images).value,
            "frechet_distance": reference.frechet(images, test),
        })  # fmt: skip
        title = "Images: the moments family's ceiling"
        harness.write_results(args.out, record, title, _table(record))
        print(record["rows"][-1], flush=True)


def _table(record: dict) -> list[str]:
    lines = ["| spec | CNN | label fidelity | Fréchet | fit CPU s |", "|---|---|---|---|---|"]
    for r in record["rows"]:
        lines.append(f"| {r['spec']} | {r['cnn_accuracy']:.3f} | {r['label_fidelity']:.3f} | "
                     f"{r['frechet_distance']:.1f} | {r['fit_cpu_s']:.1f} |")  # fmt: skip
    return lines


if __name__ == "__main__":
    main()
