"""Speed of one DP discriminator step with ghost-norm clipping, next to a non-private step.

The network is the DP-CGAN MLP discriminator: (data + one-hot label) -> Linear 128 ->
LeakyReLU(0.2) -> Linear 1; a step sees B real and B fake rows. Three steps are timed:

1. ``nonprivate``: forward of the real and the fake rows, BCE-with-logits (mean), backward, SGD;
2. ``dp_ghost``: :func:`dpforge.privacy.clipping.clipped_gradient_sum` on the 2B concatenated rows
   (per-example losses), Gaussian noise N(0, sigma^2 C^2) added once to the sum, division by the
   expected batch size, written to ``.grad``, SGD;
3. ``dp_vmap`` (reference): the same DP step with per-example gradients materialised by
   ``torch.func.vmap(torch.func.grad(...))``.

The non-private and ghost steps are interleaved (one of each per round) so that drift in the
machine's speed hits both alike; the slow vmap step runs afterwards, fewer times.

Example::

    python bench/bench_clipping.py --repeats 300 --out bench/results/clipping_speed.json
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

import harness
from clip_steps import (
    CLIP,
    SIGMA,
    dp_vmap_step,
    noisy_update,
    nonprivate_step,
)
from dpforge.privacy.clipping import clipped_gradient_sum
from timing import alone, interleaved, load_average, paired_ratio, summaries

# (data dimension, number of classes, hidden width)
PRESETS = {
    "mnist": (784, 10, 128),  # 28x28 images, 10 digits: the DP-CGAN MNIST discriminator
    "tabular": (21, 3, 128),  # Thyroid (ann): 21 attributes, 3 classes
}
LR = 0.1


def make_discriminator(in_dim: int, hidden: int, seed: int) -> nn.Sequential:
    """The MLP discriminator, initialised from a seeded generator (no global RNG)."""
    model = nn.Sequential(nn.Linear(in_dim, hidden), nn.LeakyReLU(0.2), nn.Linear(hidden, 1))
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            bound = 1.0 / p.shape[-1] ** 0.5
            p.copy_((torch.rand(p.shape, generator=gen) * 2 - 1) * bound)
    return model


def make_batch(batch: int, data_dim: int, n_classes: int, seed: int):
    """Real-like and fake-like rows with one-hot labels appended, as the discriminator sees."""
    gen = torch.Generator().manual_seed(seed)

    def rows() -> torch.Tensor:
        x = torch.rand(batch, data_dim, generator=gen) * 2 - 1
        y = F.one_hot(torch.randint(0, n_classes, (batch,), generator=gen), n_classes)
        return torch.cat([x, y.to(x.dtype)], dim=1)

    return rows(), rows()


def dp_ghost_step(model, opt, real, fake, targets, noise_gen, microbatches: int = 0) -> None:
    """DP step with ghost-norm clipping; ``microbatches > 0`` clips the means of m random
    microbatches of the real rows and m of the fake rows (DP-CGAN's m < B) instead."""
    inputs = torch.cat([real, fake])

    def loss(logits: torch.Tensor) -> torch.Tensor:
        return F.binary_cross_entropy_with_logits(logits[:, 0], targets, reduction="none")

    groups, units = None, real.shape[0]
    if microbatches > 0:
        m, n = microbatches, real.shape[0]
        real_ids = torch.randint(0, m, (n,), generator=noise_gen)
        groups = torch.cat(
            [real_ids, m + torch.randint(0, m, (fake.shape[0],), generator=noise_gen)]
        )
        units = m
    clipped = clipped_gradient_sum(
        model, inputs, loss, CLIP, groups, num_groups=2 * microbatches or None
    )
    noisy_update(model, opt, clipped.grads, units, noise_gen)


def _ratios(figures: dict[str, dict[str, float]], key: str) -> dict[str, float]:
    """Each step's ``key`` figure divided by the non-private step's."""
    base = figures["nonprivate"][key]
    return {f"{name}/nonprivate": fig[key] / base for name, fig in figures.items()}


def run(args: argparse.Namespace) -> dict:
    """Time the steps and return the figures."""
    machine = harness.machine()  # the load average before, among the rest
    data_dim, n_classes, hidden = PRESETS[args.preset]
    in_dim = data_dim + n_classes
    real, fake = make_batch(args.batch_size, data_dim, n_classes, seed=1)
    targets = torch.cat([torch.ones(args.batch_size), torch.zeros(args.batch_size)])
    noise_gen = torch.Generator().manual_seed(2)

    names = ("np", "dp", "mb", "vm")
    models = {name: make_discriminator(in_dim, hidden, seed=0) for name in names}
    opts = {name: torch.optim.SGD(m.parameters(), lr=LR) for name, m in models.items()}
    mb = args.microbatches
    steps: dict[str, Callable[[], None]] = {
        "nonprivate": lambda: nonprivate_step(models["np"], opts["np"], real, fake),
        "dp_ghost": lambda: dp_ghost_step(models["dp"], opts["dp"], real, fake, targets, noise_gen),
        f"dp_ghost_m{mb}": lambda: dp_ghost_step(
            models["mb"], opts["mb"], real, fake, targets, noise_gen, mb
        ),
        "dp_vmap": lambda: dp_vmap_step(models["vm"], opts["vm"], real, fake, targets, noise_gen),
    }
    timed = ["nonprivate", "dp_ghost"] + ([f"dp_ghost_m{mb}"] if mb > 0 else [])
    # interleaved: drift and other jobs hit every step alike
    samples = interleaved({name: steps[name] for name in timed}, args.repeats, args.warmup)
    # Per-round ratios: a step and the non-private step timed moments apart see the same load.
    paired = {
        f"{name}/nonprivate": paired_ratio(
            [w for w, _ in samples[name]], [w for w, _ in samples["nonprivate"]]
        )
        for name in timed
    }
    if args.vmap_repeats > 0:
        samples["dp_vmap"] = alone(steps["dp_vmap"], args.vmap_repeats)
    wall, cpu = summaries(samples)
    return {
        "benchmark": "DP discriminator step, ghost-norm clipping vs non-private",
        "network": f"{in_dim} -> Linear {hidden} -> LeakyReLU(0.2) -> Linear 1",
        "preset": args.preset,
        "microbatches": mb or None,
        "noise": {"sigma": SIGMA, "clip_norm": CLIP},
        "rows_per_step": {"real": args.batch_size, "fake": args.batch_size},
        "repeats": args.repeats,
        "warmup": args.warmup,
        "wall": wall,
        "cpu": cpu,
        "ratios": {
            "paired_wall_median": paired,
            "wall_median": _ratios(wall, "median_ms"),
            "wall_min": _ratios(wall, "min_ms"),
            "cpu_median": _ratios(cpu, "median_ms"),
        },
        # Other work on the machine slows both steps; the 1-minute load average says how much.
        "machine": {**machine, "load_average_1min_after": load_average()},
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--preset", choices=sorted(PRESETS), default="mnist")
    parser.add_argument("--batch-size", type=int, default=600, help="real rows (= fake rows)")
    parser.add_argument("--repeats", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=30)
    parser.add_argument(
        "--microbatches", type=int, default=0, help="also time m < B microbatch clipping (0: no)"
    )
    parser.add_argument("--vmap-repeats", type=int, default=10, help="0 skips the vmap step")
    harness.add_threads(parser, default=None)
    harness.add_out(parser)
    args = parser.parse_args(argv)
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    result = run(args)
    print(f"torch threads {result['machine']['torch_threads']}, {result['network']}")
    for name in result["wall"]:
        w, c = result["wall"][name], result["cpu"][name]
        print(
            f"{name:>13}: wall median {w['median_ms']:8.2f} ms (p25 {w['p25_ms']:.2f}, "
            f"p75 {w['p75_ms']:.2f}, min {w['min_ms']:.2f}); cpu median {c['median_ms']:8.2f} ms"
        )
    for kind, ratios in result["ratios"].items():
        text = ", ".join(f"{k.split('/')[0]} {v:.2f}x" for k, v in ratios.items() if v != 1.0)
        print(f"ratio to non-private ({kind}): {text}")
    m = result["machine"]
    print(f"load average before/after: {m['load_average_1min']}, {m['load_average_1min_after']}")
    if args.out is not None:  # JSON only: the .md next to it is the hand-written analysis
        result.update(harness.provenance(__file__, argv), machine=result["machine"])
        harness.write_results(args.out, result, result["benchmark"], None)


if __name__ == "__main__":
    main()
