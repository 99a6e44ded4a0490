"""Speed of one DP critic step with ghost clipping for convolutional (and LSTM) critics.

The MNIST preset is the DCGAN-like conditional critic of DP-CGAN on 28x28 images, the label
broadcast as 10 constant channels: Conv2d(11 -> 32, k4 s2 p1) -> LeakyReLU(0.2) -> Conv2d(32 ->
64, k4 s2 p1) -> GroupNorm(8, 64) -> LeakyReLU(0.2) -> Flatten -> Linear(64*7*7 -> 1). The LSTM
preset is a series critic, DPLSTM(1 + 2 label channels -> 64) -> Linear(64 -> 1), on series of
length 24 (ItalyPowerDemand's shape). A step sees B real and B fake records. Timed side by side:

1. ``nonprivate``: forward of the real and the fake records, BCE-with-logits (mean), backward, SGD;
2. ``dp_ghost``: :func:`dpforge.privacy.clipping.clipped_gradient_sum` on the 2B concatenated
   records (per-example losses), Gaussian noise N(0, sigma^2 C^2) added once to the sum, division
   by the expected batch size, written to ``.grad``, SGD;
3. ``dp_vmap`` (reference): the same DP step with per-example gradients from
   ``torch.func.vmap(torch.func.grad(...))``; slow, so timed a few times only.

The non-private and ghost steps are interleaved (alternating which runs first) so that the other
jobs on the shared machine slow both alike; ``paired`` ratios are medians over rounds of (step
time / non-private time in the same round).

Example::

    python bench/bench_clipping_conv.py --threads 2 1 --presets mnist lstm --batch-sizes 600 64 \\
        --out bench/results/clipping_speed_conv.json
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
from dpforge.nets.recurrent import DPLSTM
from dpforge.privacy.clipping import clipped_gradient_sum
from timing import alone, interleaved, load_average, paired_ratio, summaries

LR = 0.05
N_CLASSES = {"mnist": 10, "lstm": 2}


def make_critic(preset: str, seed: int) -> nn.Sequential:
    """The preset's critic, initialised from a seeded generator (no global RNG)."""
    if preset == "mnist":
        model = nn.Sequential(
            nn.Conv2d(1 + 10, 32, 4, 2, 1),
            nn.LeakyReLU(0.2),
            nn.Conv2d(32, 64, 4, 2, 1),
            nn.GroupNorm(8, 64),
            nn.LeakyReLU(0.2),
            nn.Flatten(),
            nn.Linear(64 * 7 * 7, 1),
        )
    else:
        model = nn.Sequential(DPLSTM(1 + 2, 64), nn.Linear(64, 1))
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            bound = 1.0 / (p[0].numel() if p.dim() > 1 else p.shape[0]) ** 0.5
            p.copy_((torch.rand(p.shape, generator=gen) * 2 - 1) * bound)
    return model


def make_batch(preset: str, batch: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Real-like and fake-like records with the one-hot label as constant extra channels."""
    gen = torch.Generator().manual_seed(seed)
    shape = (1, 28, 28) if preset == "mnist" else (1, 24)
    n_classes = N_CLASSES[preset]

    def records() -> torch.Tensor:
        x = torch.rand(batch, *shape, generator=gen) * 2 - 1
        y = F.one_hot(torch.randint(0, n_classes, (batch,), generator=gen), n_classes).float()
        cond = y.view(batch, n_classes, *([1] * (len(shape) - 1))).expand(-1, -1, *shape[1:])
        return torch.cat([x, cond], dim=1)

    return records(), records()


def dp_ghost_step(model, opt, real, fake, targets, noise_gen) -> None:
    """DP step with ghost clipping."""

    def loss(logits: torch.Tensor) -> torch.Tensor:
        return F.binary_cross_entropy_with_logits(logits[:, 0], targets, reduction="none")

    clipped = clipped_gradient_sum(model, torch.cat([real, fake]), loss, CLIP)
    noisy_update(model, opt, clipped.grads, real.shape[0], noise_gen)


def time_batch(preset: str, batch: int, args: argparse.Namespace) -> dict:
    """Time the three steps at one batch size (B real + B fake records)."""
    real, fake = make_batch(preset, batch, seed=1)
    targets = torch.cat([torch.ones(batch), torch.zeros(batch)])
    noise_gen = torch.Generator().manual_seed(2)
    models = {name: make_critic(preset, seed=0) for name in ("np", "dp", "vm")}
    opts = {name: torch.optim.SGD(m.parameters(), lr=LR) for name, m in models.items()}
    steps: dict[str, Callable[[], None]] = {
        "nonprivate": lambda: nonprivate_step(models["np"], opts["np"], real, fake),
        "dp_ghost": lambda: dp_ghost_step(models["dp"], opts["dp"], real, fake, targets, noise_gen),
        "dp_vmap": lambda: dp_vmap_step(models["vm"], opts["vm"], real, fake, targets, noise_gen),
    }
    timed = ["nonprivate", "dp_ghost"]
    samples = interleaved({name: steps[name] for name in timed}, args.repeats, args.warmup)
    paired = {
        "dp_ghost/nonprivate": paired_ratio(
            [w for w, _ in samples["dp_ghost"]], [w for w, _ in samples["nonprivate"]]
        )
    }
    if args.vmap_repeats > 0:
        samples["dp_vmap"] = alone(steps["dp_vmap"], args.vmap_repeats)
    wall, cpu = summaries(samples)
    base_wall, base_cpu = wall["nonprivate"]["median_ms"], cpu["nonprivate"]["median_ms"]
    return {
        "rows_per_step": {"real": batch, "fake": batch},
        "wall": wall,
        "cpu": cpu,
        "ratios": {
            "paired_wall_median": paired,
            "wall_median": {f"{k}/nonprivate": v["median_ms"] / base_wall for k, v in wall.items()},
            "cpu_median": {f"{k}/nonprivate": v["median_ms"] / base_cpu for k, v in cpu.items()},
        },
    }


NETWORKS = {
    "mnist": "11x28x28 -> Conv2d 32 k4 s2 p1 -> LeakyReLU(0.2) -> Conv2d 64 k4 s2 p1 -> "
    "GroupNorm(8, 64) -> LeakyReLU(0.2) -> Flatten -> Linear 3136 -> 1",
    "lstm": "3x24 -> DPLSTM(3 -> 64, last hidden state) -> Linear 64 -> 1",
}


def run(args: argparse.Namespace) -> dict:
    """Time every preset at every batch size, for each thread count, and return the figures."""
    machine = harness.machine()  # the load average before, among the rest
    runs = {}
    for threads in args.threads:
        torch.set_num_threads(threads)
        runs[str(threads)] = {
            preset: {
                "network": NETWORKS[preset],
                "batches": {str(b): time_batch(preset, b, args) for b in args.batch_sizes},
            }
            for preset in args.presets
        }
    return {
        "benchmark": "DP critic step, ghost clipping vs non-private vs torch.func vmap",
        "noise": {"sigma": SIGMA, "clip_norm": CLIP},
        "repeats": args.repeats,
        "vmap_repeats": args.vmap_repeats,
        "warmup": args.warmup,
        "threads": runs,
        "machine": {**machine, "load_average_1min_after": load_average()},
    }


def _print(result: dict) -> None:
    for threads, presets in result["threads"].items():
        for preset, figures in presets.items():
            print(f"{threads} thread(s), {preset}: {figures['network']}")
            for batch, batch_figures in figures["batches"].items():
                _print_batch(batch, batch_figures)


def _print_batch(batch: str, figures: dict) -> None:
    print(f"  B = {batch} real + {batch} fake")
    for name, w in figures["wall"].items():
        c = figures["cpu"][name]
        print(
            f"    {name:>10}: wall median {w['median_ms']:9.1f} ms (p25 {w['p25_ms']:.1f}, "
            f"p75 {w['p75_ms']:.1f}, min {w['min_ms']:.1f}); cpu median {c['median_ms']:9.1f}"
        )
    ratios = figures["ratios"]
    paired = ratios["paired_wall_median"]["dp_ghost/nonprivate"]
    text = ", ".join(f"{k.split('/')[0]} {v:.2f}x" for k, v in ratios["wall_median"].items())
    print(f"    ratios (wall medians): {text}; dp_ghost paired {paired:.2f}x")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--presets", nargs="+", choices=sorted(NETWORKS), default=["mnist", "lstm"])
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[600, 64])
    parser.add_argument("--repeats", type=int, default=40)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--vmap-repeats", type=int, default=3, help="0 skips the vmap step")
    parser.add_argument(
        "--threads", type=int, nargs="+", default=[2], help="torch thread counts to time"
    )
    harness.add_out(parser)
    args = parser.parse_args(argv)
    result = run(args)
    _print(result)
    if args.out is not None:  # JSON only: the .md next to it is the hand-written analysis
        result.update(harness.provenance(__file__, argv), machine=result["machine"])
        harness.write_results(args.out, result, result["benchmark"], None)


if __name__ == "__main__":
    main()
