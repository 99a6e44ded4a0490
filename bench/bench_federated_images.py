"""Federated images, GS-WGAN's setting (issue 23.3): traffic per step and the debugging case.

MNIST (the first ``--images`` training images) is split at random into ``--sites`` sites; the
first ``--inverted`` sites hold their images with inverted intensities (x -> 255 - x, the data
bug of GS-WGAN's federated experiment, after Augenstein et al. 2020). A generator is trained
over Flower messages (:mod:`dpforge.engines.federated_images_run`) on three federations: all
sites, only the inverted sites, only the normal ones. For each: both guarantees (per record and
per site, from the accountant), the bytes per generator step in each direction against
exchanging the critic's and generator's parameters, CPU seconds, the share of generated images
whose mean intensity is above half the range ("inverted-looking"; real MNIST images: about 0.13
mean intensity, inverted ones about 0.87) and a sample grid (PNG, one row per class).

    nice -n 10 python bench/bench_federated_images.py --out bench/results/federated_images.json
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).parent))

from harness import Timer, add_data_dir, add_out, data_dir, provenance, write_results  # noqa: E402

from dpforge.data.arrays import ArrayData  # noqa: E402
from dpforge.datasets.images import load_idx_dataset  # noqa: E402
from dpforge.engines.federated_images import FederatedImageConfig, split_images  # noqa: E402
from dpforge.engines.federated_images_run import run_summary, simulate_images  # noqa: E402

OUT = Path("bench/results/federated_images.json")


def federations(parts: list[ArrayData], inverted: int) -> dict[str, list[ArrayData]]:
    return {"all sites": parts, "inverted sites": parts[:inverted], "normal sites": parts[inverted:]}


def grid_png(samples: np.ndarray, path: Path, per_class: int) -> None:
    """Samples (classes * per_class, 28, 28) in 0..255 as one grey PNG, a row per class."""
    from PIL import Image

    n_classes = len(samples) // per_class
    tiles = samples.reshape(n_classes, per_class, *samples.shape[1:])
    rows = [np.concatenate(list(row), axis=1) for row in tiles]
    picture = np.concatenate(rows, axis=0).clip(0, 255).astype(np.uint8)
    image = Image.fromarray(picture, mode="L").resize(
        (picture.shape[1] * 2, picture.shape[0] * 2), Image.NEAREST
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    image.save(path)


def samples_by_class(server, per_class: int) -> np.ndarray:
    labels = torch.arange(server.n_classes).repeat_interleave(per_class)
    gen = torch.Generator().manual_seed(1234)
    with torch.no_grad():
        z = server.generator.sample_latent(len(labels), gen)
        x = server.generator(z, labels)
    return ((x[:, 0].numpy() + 1.0) * 127.5).astype(np.float64)


def one_run(name: str, parts, schema, config, seed: int, pictures: Path) -> dict:
    with Timer() as timer:
        server, grid = simulate_images(parts, schema, config, seed)
    samples = samples_by_class(server, 10)
    png = pictures / f"{name.replace(' ', '_')}.png"
    grid_png(samples, png, 10)
    row = run_summary(server, grid.traffic)
    row.update(
        federation=name,
        sites=len(parts),
        cpu_seconds=timer.cpu_seconds,
        wall_seconds=timer.seconds,
        inverted_looking=float(np.mean(samples.mean(axis=(1, 2)) > 127.5)),
        mean_intensity=float(samples.mean() / 255.0),
        picture=str(png),
    )
    print(name, row["guarantees"], row["inverted_looking"], f"{timer.cpu_seconds:.0f} s CPU")
    return row


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_data_dir(p)
    add_out(p, OUT)
    p.add_argument("--images", type=int, default=4000)
    p.add_argument("--sites", type=int, default=10)
    p.add_argument("--inverted", type=int, default=3)
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--critics-per-site", type=int, default=4)
    p.add_argument("--critic-training", default="frozen")
    p.add_argument("--warm-start-steps", type=int, default=200)
    p.add_argument("--epsilon", type=float, default=10.0, help="per-record target")
    p.add_argument("--noise-multiplier", type=float, default=None)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    train, _, schema = load_idx_dataset("mnist", data_dir(args.data_dir), n_train=args.images)
    parts = split_images(train, args.sites, False, np.random.default_rng(args.seed))
    for i in range(args.inverted):
        parts[i] = ArrayData(255.0 - parts[i].values, parts[i].labels)
    config = FederatedImageConfig(
        steps=args.steps, critics_per_site=args.critics_per_site, epsilon=args.epsilon,
        noise_multiplier=args.noise_multiplier, critic_training=args.critic_training,
        warm_start_steps=args.warm_start_steps,
    )  # fmt: skip
    record = {**provenance(__file__, argv), "settings": vars(args), "runs": []}
    pictures = Path(args.out).with_suffix("")
    for name, sites in federations(parts, args.inverted).items():
        run_config = replace(config, sites_per_step=None)
        record["runs"].append(one_run(name, sites, schema, run_config, args.seed, pictures))
        write_results(Path(args.out), record, "Federated images (GS-WGAN's setting)", None)


if __name__ == "__main__":
    main()
