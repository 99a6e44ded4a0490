"""Free sample-time selection for the moments generator: does it buy realism? (issue 24)

Both variants read only the released per-class Gaussians (post-processing, no ledger entry):

- **truncation** ``tau``: latent draws scaled by ``tau`` < 1, so samples sit nearer their
  class mean (the GAN "truncation trick");
- **QDA filter** ``margin``: keep a draw only when its own class's released Gaussian gives it a
  log-density ``margin`` above every other class's (draw again until ``n`` are kept).

One fit per (data set, epsilon, seed) at the library's defaults; every variant samples 10,000
images from the same seed and is scored like ``bench_images.py`` (5-epoch CNN trained on the
samples, tested on the real test set; label fidelity and Fréchet distance of a reference CNN
trained on the real training images). Rows go to ``--log`` as they come. Example::

    OMP_NUM_THREADS=1 python images_sample_selection.py --dataset mnist --epsilon 10 --seeds 0
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

import harness
from dpforge import Synthesizer
from dpforge.datasets.images import load_idx_dataset
from dpforge.evaluation.images import tstr_cnn_accuracy
from dpforge.evaluation.reference import ReferenceClassifier

VARIANTS = (("base", 1.0, None), ("tau0.8", 0.8, None), ("tau0.6", 0.6, None),
            ("qda0", 1.0, 0.0), ("qda2", 1.0, 2.0), ("qda5", 1.0, 5.0))  # fmt: skip


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dataset", default="mnist", choices=("mnist", "fashion-mnist"))
    p.add_argument("--epsilon", type=float, default=10.0)
    harness.add_seeds(p, "1")
    harness.add_data_dir(p)
    p.add_argument("--log", default="results/images_sample_selection.jsonl")
    return p.parse_args(argv)


def class_log_densities(gen: torch.nn.Module, coords: torch.Tensor) -> torch.Tensor:
    """log N(coords; mean_k, F_k F_k^T) up to a shared constant, for every class k (n, K)."""
    columns = []
    for mean, factor in zip(gen.means.double(), gen.factors.double(), strict=True):
        solved = torch.linalg.solve_triangular(factor, (coords - mean).T, upper=False)
        columns.append(-0.5 * (solved**2).sum(0) - torch.log(torch.diagonal(factor)).sum())
    return torch.stack(columns, 1)


def draw(synth, n: int, rng: torch.Generator, tau: float, margin: float | None):
    """``n`` decoded images of the fitted moments generator, truncated and/or filtered, and
    the share of draws the filter kept."""
    gen, k = synth.generator_, len(synth.generator_.means)
    xs, ys, have, drawn = [], [], 0, 0
    while have < n:
        drawn += n
        y = torch.randint(0, k, (n,), generator=rng)
        z = torch.randn(n, gen.latent_dim, generator=rng) * tau
        with torch.no_grad():
            if margin is not None:
                coords = (gen.means[y] + torch.einsum("nij,nj->ni", gen.factors[y], z)).double()
                logp = class_log_densities(gen, coords)
                own = logp[torch.arange(n), y].clone()
                logp[torch.arange(n), y] = -float("inf")
                kept = own - logp.max(1).values > margin
                y, z = y[kept], z[kept]
            xs.append(gen(z, y))
        ys.append(y)
        have += len(y)
    x, y = torch.cat(xs)[:n].numpy(), torch.cat(ys)[:n].numpy()
    return synth.encoder_.inverse_transform(x, y), have / drawn


def run(args: argparse.Namespace, seed: int) -> None:
    data_dir = harness.data_dir(args.data_dir)
    train, test, schema = load_idx_dataset(args.dataset, data_dir, None)
    synth = Synthesizer(schema, epsilon=args.epsilon, delta=1e-5, seed=seed, progress=False)
    synth.fit(train)
    reference = ReferenceClassifier(schema.classes, 3, seed).fit(train)
    for name, tau, margin in VARIANTS:
        start = time.process_time()
        images, kept = draw(synth, 10000, torch.Generator().manual_seed(seed + 1), tau, margin)
        row = {
            "dataset": args.dataset, "epsilon": args.epsilon, "seed": seed, "variant": name,
            "kept": kept, "sample_cpu_s": round(time.process_time() - start, 1),
            "cnn_accuracy": tstr_cnn_accuracy(images, test, schema.classes, 5, seed).value,
            "label_fidelity": reference.label_fidelity(images).value,
            "frechet_distance": float(np.real(reference.frechet(images, test))),
        }  # fmt: skip
        print(row, flush=True)
        harness.append_jsonl(args.log, row)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    torch.set_num_threads(1)
    for seed in harness.seeds(args):
        run(args, seed)


if __name__ == "__main__":
    main()
