"""GS-WGAN's federated debugging case on a torch device (issue 23.3): pictures within a budget.

MNIST (the first ``--images`` training images) is split at random into ``--sites`` sites and
the first ``--inverted`` sites hold their images with inverted intensities (x -> 255 - x). Three
federations train a generator each over Flower messages
(:func:`dpforge.engines.federated_images_run.simulate_images`, ``--device``): all sites, only
the inverted sites, only the normal ones, with σ calibrated once by the accountant so that the
per-record ε is ``--epsilon`` (every site in every step, so every federation has the same
guarantees). The three run side by side (``--jobs``, one process each on the one device).

``--budget-s`` bounds the wall time from the start: a federation stops stepping when the
budget (less a margin to write) runs out, and writes what it has (its ledger holds the planned
steps: an upper bound). Each federation writes, into ``--out-dir``, snapshots of its samples
while it trains (``NAME_stepN.png``), its final grid (``NAME.png``, a row per class) and its
row (``NAME.json``); the parent then writes ``results.json`` and ``README.md`` there.

    python bench/bench_federated_debug.py --device cuda --out-dir bench/results/federated_debug
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).parent))

from bench_federated_images import federations, grid_png, samples_by_class  # noqa: E402
from dpforge.data.arrays import ArrayData  # noqa: E402
from dpforge.datasets.images import load_idx_dataset  # noqa: E402
from dpforge.engines.federated_images import FederatedImageConfig, split_images  # noqa: E402
from dpforge.engines.federated_images_run import run_summary, simulate_images  # noqa: E402
from dpforge.privacy.federated_gswgan import participations, record_noise_for_target  # noqa: E402
from harness import add_data_dir, add_threads, data_dir, provenance, write_results  # noqa: E402

OUT_DIR = Path("bench/results/federated_debug")
MARGIN_S = 6.0  # left at the end of the budget to sample and write a federation's results
INVERTED_LOOKING = 127.5  # a sample brighter on average than half the range
NAMES = ("inverted sites", "normal sites", "all sites")  # the slowest last


def parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_data_dir(p)
    add_threads(p)
    p.add_argument("--out-dir", type=Path, default=OUT_DIR)
    p.add_argument("--device", default="cpu", help="torch device: cpu, cuda, cuda:1, ...")
    p.add_argument("--budget-s", type=float, default=190.0, help="wall seconds for it all")
    p.add_argument("--jobs", type=int, default=3, help="federations run side by side")
    p.add_argument("--images", type=int, default=60000)
    p.add_argument("--sites", type=int, default=10)
    p.add_argument("--inverted", type=int, default=3)
    p.add_argument("--steps", type=int, default=6000)
    p.add_argument("--critics-per-site", type=int, default=300)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--warm-start-steps", type=int, default=300)
    p.add_argument("--warm-pool", type=int, default=4096)
    p.add_argument("--g-lr", type=float, default=2.2e-4)
    p.add_argument("--d-lr", type=float, default=1e-3)
    p.add_argument("--epsilon", type=float, default=10.0, help="per-record target")
    p.add_argument("--noise-multiplier", type=float, default=None, help="σ instead of --epsilon")
    p.add_argument("--snapshots", type=int, default=4, help="sample grids while training")
    p.add_argument("--critic-training", default="frozen", help="frozen | all (every step)")
    p.add_argument("--only", choices=NAMES, action="append", help="these federations only")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    if args.jobs < 1 or args.snapshots < 0 or args.budget_s <= MARGIN_S:
        p.error(f"give --jobs >= 1, --snapshots >= 0 and --budget-s > {MARGIN_S:g}")
    return args


def config_of(args: argparse.Namespace, sigma: float) -> FederatedImageConfig:
    return FederatedImageConfig(
        steps=args.steps, batch_size=args.batch_size, critics_per_site=args.critics_per_site,
        epsilon=args.epsilon, noise_multiplier=sigma, warm_start_steps=args.warm_start_steps,
        warm_pool=args.warm_pool, g_lr=args.g_lr, d_lr=args.d_lr,
        critic_training=args.critic_training,
    )  # fmt: skip


def calibrate(args: argparse.Namespace) -> float:
    """σ for the per-record target (every site in every step: each takes part in all steps)."""
    if args.noise_multiplier is not None:
        return float(args.noise_multiplier)
    return record_noise_for_target(
        args.epsilon, 1e-5, args.critics_per_site, args.batch_size,
        participations(args.steps, 1, 1),
    )  # fmt: skip


def site_parts(args: argparse.Namespace):
    train, _, schema = load_idx_dataset("mnist", data_dir(args.data_dir), n_train=args.images)
    parts = split_images(train, args.sites, False, np.random.default_rng(args.seed))
    for i in range(args.inverted):
        parts[i] = ArrayData(255.0 - parts[i].values, parts[i].labels)
    return federations(parts, args.inverted), schema


def picture(server, path: Path) -> dict:
    samples = samples_by_class(server, 10)
    grid_png(samples, path, 10)
    return {
        "picture": path.name,
        "inverted_looking": float(np.mean(samples.mean(axis=(1, 2)) > INVERTED_LOOKING)),
        "mean_intensity": float(samples.mean() / 255.0),
    }


def run_federation(args: argparse.Namespace, name: str, sigma: float, deadline: float) -> dict:
    """One federation (in its own process): train until done or the deadline, write its row."""
    torch.set_num_threads(args.threads)
    start, cpu = time.time(), time.process_time()
    feds, schema = site_parts(args)
    tag = name.replace(" ", "_")
    every = max(args.steps // (args.snapshots + 1), 1) if args.snapshots else 0

    def go_on(server) -> bool:
        if every and server.step_index % every == 0 and server.step_index < args.steps:
            picture(server, args.out_dir / f"{tag}_step{server.step_index}.png")
        return time.time() < deadline - MARGIN_S

    server, grid = simulate_images(
        feds[name], schema, config_of(args, sigma), args.seed, args.device, go_on
    )
    row = {"federation": name, "sites": len(feds[name]), **run_summary(server, grid.traffic)}
    row.update(picture(server, args.out_dir / f"{tag}.png"))
    row.update(
        wall_seconds=time.time() - start, cpu_seconds=time.process_time() - cpu,
        stopped_by_budget=server.step_index < args.steps, device=str(args.device),
    )  # fmt: skip
    text = json.dumps(row, indent=2, default=str) + "\n"
    (tmp := args.out_dir / f".{tag}.json.tmp").write_text(text)
    tmp.replace(args.out_dir / f"{tag}.json")
    print(f"{name}: {server.step_index} steps, {row['inverted_looking']:.2f} inverted-looking, "
          f"{row['wall_seconds']:.0f} s", flush=True)  # fmt: skip
    return row


def report(record: dict) -> list[str]:
    s = record["settings"]
    lines = [
        f"Command: `{record['command']}`", "",
        f"sigma = {record['sigma']:.4g}; {s['steps']} steps planned, {s['critics_per_site']} "
        f"critics per site, batch {s['batch_size']}, device {s['device']}.", "",
        "| federation (sites) | steps taken | epsilon per record / per site | inverted-looking "
        "| mean intensity | wall s | samples (a row per class) |",
        "|---|---|---|---|---|---|---|",
    ]  # fmt: skip
    for r in record["runs"]:
        g = r["guarantees"]
        eps = " / ".join(f"{float(g[k]['epsilon']):.3g}" for k in ("per_record", "per_site"))
        lines.append(
            f"| {r['federation']} ({r['sites']}) | {r['steps_taken']} | {eps} "
            f"| {r['inverted_looking']:.2f} | {r['mean_intensity']:.2f} "
            f"| {r['wall_seconds']:.0f} | ![{r['picture']}]({r['picture']}) |"
        )
    return lines


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    args = parse(argv)
    deadline = time.time() + args.budget_s
    args.out_dir.mkdir(parents=True, exist_ok=True)
    sigma = calibrate(args)
    print(f"sigma {sigma:.4g} for per-record epsilon {args.epsilon:g}", flush=True)
    names = [n for n in NAMES if not args.only or n in args.only]
    if args.jobs == 1:
        runs = [run_federation(args, n, sigma, deadline) for n in names]
    else:
        with ProcessPoolExecutor(min(args.jobs, 3), mp_context=get_context("spawn")) as pool:
            futures = [pool.submit(run_federation, args, n, sigma, deadline) for n in names]
            runs = [f.result() for f in futures]
    record = {**provenance(__file__, argv), "settings": vars(args), "sigma": sigma, "runs": runs}
    title = "Federated images: the debugging case on a device (issue 23.3)"
    write_results(args.out_dir / "results.json", record, title, report(record))
    (args.out_dir / "results.md").replace(args.out_dir / "README.md")


if __name__ == "__main__":
    main()
