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

Opacus lives in its own virtual environment (see bench/results/speed.md for its install); without
it installed, the Opacus steps are skipped and the results say so.

Example::

    PYTHONPATH=$PWD/src OMP_NUM_THREADS=1 ~/.cache/opacus-venv/bin/python bench/bench_speed.py \\
        --batch-sizes 64 128 --rounds 30 --out bench/results/speed.json
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import torch
from torch import nn

from bench_common import machine  # noqa: E402 (bench/ is on sys.path when run)
from dpforge.nets.conv import condition_channels, conv_critic
from dpforge.privacy.clipping import clipped_gradient_sum
from dpforge.privacy.ghost_penalty import clipped_gradient_sum_with_penalty
from dpforge.privacy.per_example import clip_and_sum, per_example_gradients

SIGMA, CLIP, LR, GP = 1.0, 1.0, 0.01, 10.0
SHAPE, CLASSES = (1, 28, 28), 10


def make_critic(seed: int) -> nn.Sequential:
    """dpwgan's default MNIST critic, initialised from a seeded generator."""
    model = conv_critic(SHAPE, CLASSES, (32, 64), "none")
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            bound = 1.0 / math.sqrt(p[0].numel() if p.dim() > 1 else p.shape[0])
            p.copy_((torch.rand(p.shape, generator=gen) * 2 - 1) * bound)
    return model


class Batch:
    """Real-like records, generated-like rows, partners' interpolates and one-hot labels."""

    def __init__(self, b: int, seed: int) -> None:
        gen = torch.Generator().manual_seed(seed)
        self.real = torch.rand(b, *SHAPE, generator=gen) * 2 - 1
        self.fake = torch.rand(b, *SHAPE, generator=gen) * 2 - 1
        partners = torch.rand(b, *SHAPE, generator=gen) * 2 - 1
        mix = torch.rand(b, 1, 1, 1, generator=gen)
        self.hat = mix * self.real + (1 - mix) * partners
        labels = torch.randint(0, CLASSES, (b,), generator=gen)
        self.onehot = nn.functional.one_hot(labels, CLASSES).float()
        self.real_in = condition_channels(self.real, self.onehot)
        self.fake_in = condition_channels(self.fake, self.onehot)
        self.both_in = torch.cat([self.real_in, self.fake_in])
        self.signs = torch.cat([-torch.ones(b), torch.ones(b)])
        self.b = b

    def join(self, x: torch.Tensor) -> torch.Tensor:
        return condition_channels(x, self.onehot)


def penalty(slopes: torch.Tensor) -> torch.Tensor:
    """Per row: GP (||slope|| - 1)^2, as dpwgan computes it."""
    return GP * (torch.sqrt(slopes.flatten(1).square().sum(1) + 1e-12) - 1.0) ** 2


def _real_loss(scores: torch.Tensor) -> torch.Tensor:
    return -scores[:, 0]


def _fake_loss(scores: torch.Tensor) -> torch.Tensor:
    return scores[:, 0]


def _noisy_step(model, opt, summed, b: int, gen: torch.Generator) -> None:
    with torch.no_grad():
        for p, g in zip(model.parameters(), summed, strict=True):
            noise = torch.randn(g.shape, generator=gen, dtype=g.dtype)
            p.grad = g.add_(noise, alpha=SIGMA * CLIP).div_(b)
    opt.step()


# ------------------------------------------------------------------------------------- steps


def np_plain(model, opt, batch: Batch) -> None:
    opt.zero_grad(set_to_none=True)
    loss = -model(batch.real_in)[:, 0].mean() + model(batch.fake_in)[:, 0].mean()
    loss.backward()
    opt.step()


def np_gp(model, opt, batch: Batch) -> None:
    opt.zero_grad(set_to_none=True)
    hat = batch.hat.clone().requires_grad_(True)
    (slopes,) = torch.autograd.grad(model(batch.join(hat))[:, 0].sum(), hat, create_graph=True)
    loss = -model(batch.real_in)[:, 0].mean() + model(batch.fake_in)[:, 0].mean()
    (loss + penalty(slopes).mean()).backward()
    opt.step()


def dp_gp_ghost(model, opt, batch: Batch, gen: torch.Generator) -> None:
    real = clipped_gradient_sum_with_penalty(
        model, batch.real_in, _real_loss, batch.hat, batch.join, penalty, CLIP
    )
    fake = clipped_gradient_sum(model, batch.fake_in, _fake_loss, CLIP)
    summed = [r + f for r, f in zip(real.grads, fake.grads, strict=True)]
    _noisy_step(model, opt, summed, batch.b, gen)


def dp_gp_torchfunc(model, opt, batch: Batch, gen: torch.Generator) -> None:
    def example_loss(forward, x_real, x_hat, y):
        score = forward(x_real.unsqueeze(0))[0, 0]
        slope = torch.func.grad(lambda x: forward(condition_channels(x[None], y[None]))[0, 0])(
            x_hat
        )
        return -score + penalty(slope[None])[0]

    grads, losses = per_example_gradients(
        model, example_loss, (batch.real_in, batch.hat, batch.onehot)
    )
    real = clip_and_sum(model, grads, losses, CLIP)
    fake = clipped_gradient_sum(model, batch.fake_in, _fake_loss, CLIP)
    summed = [r + f for r, f in zip(real.grads, fake.grads, strict=True)]
    _noisy_step(model, opt, summed, batch.b, gen)


def dp_plain_ghost(model, opt, batch: Batch, gen: torch.Generator) -> None:
    signs = batch.signs
    clipped = clipped_gradient_sum(model, batch.both_in, lambda s: signs * s[:, 0], CLIP)
    _noisy_step(model, opt, clipped.grads, batch.b, gen)


# ------------------------------------------------------------------------------------ Opacus


class _WassersteinLoss(nn.Module):
    """Per row: sign * score (-1 for records, +1 for generated rows); Opacus' criterion API."""

    def __init__(self) -> None:
        super().__init__()
        self.reduction = "sum"

    def forward(self, scores: torch.Tensor, signs: torch.Tensor) -> torch.Tensor:
        per_row = signs * scores[:, 0]
        return per_row if self.reduction == "none" else per_row.sum()


def _make_private(mode: str, batch: Batch, seed: int, sigma: float, lr: float):
    """An Opacus-wrapped critic (``make_private``) and its step; None without Opacus."""
    try:
        import opacus
    except ImportError:
        return None
    loader = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(batch.both_in, batch.signs), batch_size=2 * batch.b
    )
    model = make_critic(seed)
    engine = opacus.PrivacyEngine(accountant="rdp")
    made = engine.make_private(
        module=model,
        optimizer=torch.optim.SGD(model.parameters(), lr=lr),
        criterion=_WassersteinLoss(),
        data_loader=loader,
        noise_multiplier=sigma,
        max_grad_norm=CLIP,
        loss_reduction="sum",
        poisson_sampling=False,
        grad_sample_mode=mode,
    )
    return model, _opacus_step(mode, made, batch)


def opacus_steps(batch: Batch, seed: int) -> dict[str, Callable[[], None]]:
    """Opacus' hooks and ghost DP steps on the plain critic loss ({} without Opacus)."""
    steps = {}
    for mode in ("hooks", "ghost"):
        made = _make_private(mode, batch, seed, SIGMA, LR)
        if made is not None:
            steps[f"opacus_{mode}"] = made[1]
    return steps


def same_update_as_opacus(batch: Batch, seed: int) -> dict[str, float]:
    """Check that the compared steps compute the same thing: with sigma = 0 and lr 1, Opacus'
    update (with loss_reduction="sum" it does not divide the clipped sum) against our clipped
    sum; the max difference relative to the largest coordinate."""
    ours = clipped_gradient_sum(
        make_critic(seed), batch.both_in, lambda s: batch.signs * s[:, 0], CLIP
    ).grads
    out = {}
    for mode in ("hooks", "ghost"):
        made = _make_private(mode, batch, seed, 0.0, 1.0)
        if made is None:
            continue
        model, step = made
        before = [p.detach().clone() for p in model.parameters()]
        step()
        after = model.parameters()
        update = torch.cat([(b - a.detach()).flatten() for b, a in zip(before, after, strict=True)])
        expected = torch.cat([g.flatten() for g in ours])
        out[mode] = float((update - expected).abs().max() / expected.abs().max())
    return out


def _opacus_step(mode: str, made: tuple, batch: Batch) -> Callable[[], None]:
    if mode == "hooks":
        module, optimizer, _ = made
        criterion = _WassersteinLoss()
    else:
        module, optimizer, criterion, _ = made
    # With loss_reduction="sum" Opacus does not divide the noisy sum; ours divides by B. The
    # scale differs by a constant only; the work is the same.

    def step() -> None:
        optimizer.zero_grad(set_to_none=True)
        loss = criterion(module(batch.both_in), batch.signs)
        loss.backward()
        optimizer.step()

    return step


# ----------------------------------------------------------------------------------- timing


def _steps(batch: Batch, seed: int) -> dict[str, Callable[[], None]]:
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
    steps = _steps(Batch(b, seed=1), seed=0)
    names = list(steps)
    for _ in range(warmup):
        for name in names:
            steps[name]()
    wall: dict[str, list[float]] = {name: [] for name in names}
    cpu: dict[str, list[float]] = {name: [] for name in names}
    for r in range(rounds):
        shift = r % len(names)
        for name in names[shift:] + names[:shift]:
            start, start_cpu = time.perf_counter(), time.process_time()
            steps[name]()
            cpu[name].append((time.process_time() - start_cpu) * 1e3)
            wall[name].append((time.perf_counter() - start) * 1e3)
    return {
        "cpu_median_ms": {n: statistics.median(t) for n, t in cpu.items()},
        "wall_median_ms": {n: statistics.median(t) for n, t in wall.items()},
        "cpu_min_ms": {n: min(t) for n, t in cpu.items()},
        "ratios_paired_median_cpu": _ratios(cpu),
        "ratios_paired_median_wall": _ratios(wall),
        "cpu_ms": cpu,
        "wall_ms": wall,
    }


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


def _ratios(times: dict[str, list[float]]) -> dict[str, float]:
    """Median over rounds of (a's time / b's time in the same round)."""
    out = {}
    for a, b in RATIOS:
        if a in times and b in times:
            pairs = zip(times[a], times[b], strict=True)
            out[f"{a}/{b}"] = statistics.median(x / y for x, y in pairs)
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[64, 128])
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    try:
        import opacus

        opacus_version = opacus.__version__
    except ImportError:
        opacus_version = None
    load = os.getloadavg()[0]
    check = same_update_as_opacus(Batch(16, seed=3), seed=0)
    results = {str(b): time_batch(b, args.rounds, args.warmup) for b in args.batch_sizes}
    out = {
        "benchmark": "WGAN critic step on dpwgan's MNIST conv critic: non-private, ours, Opacus",
        "sigma": SIGMA,
        "clip_norm": CLIP,
        "gp_weight": GP,
        "rounds": args.rounds,
        "opacus": opacus_version or "not installed: Opacus steps skipped",
        "opacus_update_max_relative_difference_sigma0": check,
        "machine": {**machine(), "load_average_1min_before_after": [load, os.getloadavg()[0]]},
        "batches": results,
    }
    for b, r in results.items():
        for kind in ("cpu", "wall"):
            medians = r[f"{kind}_median_ms"].items()
            print(f"B = {b}, {kind} medians (ms): " + ", ".join(f"{k} {v:.1f}" for k, v in medians))
            ratios = r[f"ratios_paired_median_{kind}"].items()
            print(f"  paired {kind} ratios: " + ", ".join(f"{k} {v:.2f}" for k, v in ratios))
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        tmp = args.out.with_suffix(".tmp")
        tmp.write_text(json.dumps(out, indent=1) + "\n")
        tmp.replace(args.out)


if __name__ == "__main__":
    main()
