"""Speed of one WGAN critic step on the conv critic: non-private, ours (DP), Opacus 1.6 (DP).

The critic is dpwgan's default image critic for MNIST (``dpforge.nets.conv.conv_critic``:
11x28x28 input, the label as 10 constant channels -> Conv2d 32 k4 s2 p1 -> LeakyReLU(0.2) ->
Conv2d 64 k4 s2 p1 -> LeakyReLU(0.2) -> Flatten -> Linear 3136 -> 1). A step sees B real records,
B generated rows and (with the gradient penalty) B interpolates. Steps timed side by side, in one
process, single-threaded, interleaved round by round (the order rotates every round, so that the
other jobs on the shared machine slow every step alike). Each step's process CPU time is recorded
next to its wall time: on the shared, oversubscribed machine the wall time mostly measures
waiting for a core, the CPU time the work (medians and same-round ratios of both are written):

with the gradient penalty (WGAN-GP, lambda = 10; what dpwgan trains):

* ``np_gp``: non-private: -D(x) + D(f) + lambda (||grad D(x_hat)|| - 1)^2, batch means, autograd
  (create_graph for the penalty), SGD;
* ``dp_gp_ghost``: ours: per record, the gradient of -D(x_i) + penalty_i clipped to C by the
  ghost path (``clipped_gradient_sum_with_penalty``), each generated row's gradient clipped
  (``clipped_gradient_sum``), N(0, sigma^2 C^2) noise once, / B, SGD (dpwgan's critic step);
* ``dp_gp_torchfunc``: the same DP step with the records' gradients from torch.func
  (``per_example_gradients``: dpwgan's path before the ghost path; kept as the test oracle);

without the penalty (the plain DP critic step; Opacus cannot clip a per-example gradient
penalty: its hooks see first-order gradients only):

* ``np_plain``: non-private -D(x) + D(f), batch means, SGD;
* ``dp_plain_ghost``: ours, ``clipped_gradient_sum`` on the 2B rows, noise, SGD;
* ``opacus_hooks``: Opacus 1.6 ``PrivacyEngine.make_private(grad_sample_mode="hooks")``;
* ``opacus_ghost``: Opacus 1.6 ``grad_sample_mode="ghost"`` (fast gradient / ghost clipping).

Opacus lives in its own virtual environment (see bench/results/dpsgd_speed/critic_step.md for
its install); without it installed, the Opacus steps are skipped and the results say so.

Example::

    PYTHONPATH=$PWD/src OMP_NUM_THREADS=1 ~/.cache/opacus-venv/bin/python bench/dpsgd_speed.py \\
        --batch-sizes 64 128 --rounds 30 --out bench/results/dpsgd_speed/critic_step.json
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Callable

import torch

from lib import harness
from lib.speed_steps import (
    CLIP,
    GP,
    LR,
    SIGMA,
    Batch,
    dp_gp_ghost,
    dp_gp_torchfunc,
    dp_plain_ghost,
    make_critic,
    np_gp,
    np_plain,
    opacus_steps,
    same_update_as_opacus,
)
from lib.timing import interleaved, load_average, paired_ratio

RATIOS = (
    ("dp_gp_ghost", "np_gp"),
    ("dp_gp_torchfunc", "np_gp"),
    ("dp_gp_torchfunc", "dp_gp_ghost"),
    ("dp_plain_ghost", "np_plain"),
    ("opacus_hooks", "dp_plain_ghost"),
    ("opacus_ghost", "dp_plain_ghost"),
    ("opacus_hooks", "np_plain"),
    ("opacus_ghost", "np_plain"),
)


def _steps(batch: Batch, seed: int) -> dict[str, Callable[[], None]]:
    """Every step on its own critic and optimizer, ready to be called."""
    gen = torch.Generator().manual_seed(seed + 1)
    models = {name: make_critic(seed) for name in ("npp", "npg", "dgg", "dgt", "dpg")}
    opts = {k: torch.optim.SGD(m.parameters(), lr=LR) for k, m in models.items()}
    steps = {
        "np_plain": lambda: np_plain(models["npp"], opts["npp"], batch),
        "dp_plain_ghost": lambda: dp_plain_ghost(models["dpg"], opts["dpg"], batch, gen),
        "np_gp": lambda: np_gp(models["npg"], opts["npg"], batch),
        "dp_gp_ghost": lambda: dp_gp_ghost(models["dgg"], opts["dgg"], batch, gen),
        "dp_gp_torchfunc": lambda: dp_gp_torchfunc(models["dgt"], opts["dgt"], batch, gen),
    }
    steps.update(opacus_steps(batch, seed))
    return steps


def time_batch(b: int, rounds: int, warmup: int) -> dict:
    """Interleaved rounds of every step at B = b; medians and same-round ratios."""
    samples = interleaved(_steps(Batch(b, seed=1), seed=0), rounds, warmup, rotate=True)
    wall = {n: [w for w, _ in t] for n, t in samples.items()}
    cpu = {n: [c for _, c in t] for n, t in samples.items()}
    return {
        "cpu_median_ms": {n: statistics.median(t) for n, t in cpu.items()},
        "wall_median_ms": {n: statistics.median(t) for n, t in wall.items()},
        "cpu_min_ms": {n: min(t) for n, t in cpu.items()},
        "ratios_paired_median_cpu": _ratios(cpu),
        "ratios_paired_median_wall": _ratios(wall),
        "cpu_ms": cpu,
        "wall_ms": wall,
    }


def _ratios(times: dict[str, list[float]]) -> dict[str, float]:
    """Median over rounds of (a's time / b's time in the same round)."""
    return {
        f"{a}/{b}": paired_ratio(times[a], times[b]) for a, b in RATIOS if a in times and b in times
    }


def opacus_version() -> str | None:
    """Opacus' version, None when it is not installed (its steps are then skipped)."""
    try:
        import opacus
    except ImportError:
        return None
    return opacus.__version__


def print_results(results: dict) -> None:
    """Medians and paired ratios per batch size, on the console."""
    for b, r in results.items():
        for kind in ("cpu", "wall"):
            medians = r[f"{kind}_median_ms"].items()
            print(f"B = {b}, {kind} medians (ms): " + ", ".join(f"{k} {v:.1f}" for k, v in medians))
            ratios = r[f"ratios_paired_median_{kind}"].items()
            print(f"  paired {kind} ratios: " + ", ".join(f"{k} {v:.2f}" for k, v in ratios))


def main(argv: list[str] | None = None) -> None:
    """Check the steps agree with Opacus at sigma 0, time them, print, write the files."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[64, 128])
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=2)
    harness.add_out(parser)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    record = harness.provenance(__file__, argv)
    check = same_update_as_opacus(Batch(16, seed=3), seed=0)
    results = {str(b): time_batch(b, args.rounds, args.warmup) for b in args.batch_sizes}
    record["machine"]["load_average_1min_after"] = load_average()
    record.update({
        "benchmark": "WGAN critic step on dpwgan's MNIST conv critic: non-private, ours, Opacus",
        "sigma": SIGMA,
        "clip_norm": CLIP,
        "gp_weight": GP,
        "rounds": args.rounds,
        "opacus": opacus_version() or "not installed: Opacus steps skipped",
        "opacus_update_max_relative_difference_sigma0": check,
        "batches": results,
    })  # fmt: skip
    print_results(results)
    if args.out is not None:
        # JSON only: bench/results/dpsgd_speed/critic_step.md is the hand-written analysis
        harness.write_results(args.out, record, record["benchmark"], None)


if __name__ == "__main__":
    main()
