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
import json
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).parent))

from dpforge.data.arrays import ArrayData  # noqa: E402
from dpforge.datasets.images import load_idx_dataset  # noqa: E402
from dpforge.engines.federated_images import FederatedImageConfig, split_images  # noqa: E402
from dpforge.engines.federated_images_run import run_summary, simulate_images  # noqa: E402
from dpforge.privacy.accounting import epsilon  # noqa: E402
from dpforge.privacy.federated_gswgan import (  # noqa: E402
    participations,
    per_record_event,
    record_noise_for_target,
    site_event,
)
from harness import Timer, add_data_dir, add_out, data_dir, provenance, write_results  # noqa: E402

OUT = Path("bench/results/federated_images.json")


def federations(parts: list[ArrayData], inverted: int) -> dict[str, list[ArrayData]]:
    return {
        "all sites": parts,
        "inverted sites": parts[:inverted],
        "normal sites": parts[inverted:],
    }


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
    device = next(server.generator.parameters()).device
    labels = torch.arange(server.n_classes, device=device).repeat_interleave(per_class)
    gen = torch.Generator(device=device).manual_seed(1234)
    with torch.no_grad():
        z = server.generator.sample_latent(len(labels), gen)
        x = server.generator(z, labels)
    return ((x[:, 0].cpu().numpy() + 1.0) * 127.5).astype(np.float64)


def one_run(name: str, parts, schema, config, seed: int, pictures: Path, tag: str) -> dict:
    with Timer() as timer:
        server, grid = simulate_images(parts, schema, config, seed)
    samples = samples_by_class(server, 10)
    png = pictures / f"{tag}_{name.replace(' ', '_')}.png"
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


def _row(run: dict, label: str) -> str:
    g = run["guarantees"]
    eps = " / ".join(_eps(g[k]["epsilon"]) for k in ("per_record", "per_site"))
    png = Path(run["picture"]).name
    return (
        f"| {label} | {run['federation']} ({run['sites']}) | {eps} | {run['noise_multiplier']:.3g} "
        f"| {run['inverted_looking']:.2f} | {run['mean_intensity']:.2f} | {run['cpu_seconds']:.0f} "
        f"| ![{png}](federated_images/{png}) |"
    )


def _eps(value) -> str:
    return "inf" if value in ("inf", float("inf")) else f"{float(value):.3g}"


def traffic_lines(run: dict) -> list[str]:
    b, p = run["bytes_per_step"], run["parameters"]
    down, up = b["server_to_sites"], b["sites_to_server"]
    pd, pu = b["parameter_exchange_server_to_sites"], b["parameter_exchange_sites_to_server"]
    return [
        f"Per generator step with {run['sites_per_step']} sites taking part (Flower messages "
        "in wire encoding, measured):",
        "",
        "| direction | GS-WGAN (samples out, sanitized gradients back) | exchanging parameters "
        f"(generator {p['generator']:,} + critic {p['critic']:,}, float32) | ratio |",
        "|---|---|---|---|",
        f"| server -> sites | {down:,.0f} B | {pd:,} B (G + D) | {pd / down:.1f}x |",
        f"| sites -> server | {up:,.0f} B | {pu:,} B (D) | {pu / up:.1f}x |",
        "",
        "Once, before the first step: the warm-start pool, "
        f"{b['warm_start_server_to_sites_once']:,} B to the sites in all.",
    ]


def accounting_lines(settings: dict) -> list[str]:
    """Both guarantees at sigma calibrated to the per-record target, for 1 to 8 critics/site."""
    steps, eps, b = settings["steps"], settings["epsilon"], FederatedImageConfig().batch_size
    lines = [
        f"Both guarantees at sigma calibrated to per-record epsilon = {eps:g} (delta = 1e-5, RDP), "
        f"{steps} steps, B = {b} per-sample releases, every site in every step "
        "(`dpforge.privacy.federated_gswgan`):",
        "",
        "| critics per site | sigma (noise std / 2C) | epsilon per record | per-record event used "
        "| epsilon per site |",
        "|---|---|---|---|---|",
    ]
    for m in (1, 2, 4, 8):
        sigma = record_noise_for_target(eps, 1e-5, m, b, steps)
        event, amplified = per_record_event(m, sigma, b, steps, 1e-5)
        site = epsilon(site_event(sigma, b, steps), 1e-5, "rdp")
        record = epsilon(event, 1e-5, "rdp")
        used = "the per-site one" if not amplified else "subsampled (one of m critics)"
        used = "the per-site one (one critic: no subsampling)" if m == 1 else used
        lines.append(f"| {m} | {sigma:.4g} | {record:.3g} | {used} | {site:.3g} |")
    return lines


def report(paths: list[Path], out: Path) -> None:
    """One Markdown page from the result files of several settings (first: the private one)."""
    records = [json.loads(Path(p).read_text()) for p in paths]
    body = ["Commands (pictures in `bench/results/federated_images/`):", ""]
    body += [f"    {r['command']}" for r in records]
    again = ["python", "bench/bench_federated_images.py", "--report", *map(str, paths)]
    body += ["", f"    {' '.join(again)}", ""]
    body += traffic_lines(records[0]["runs"][0]) + [""]
    body += accounting_lines(records[0]["settings"]) + ["", "## The debugging case", ""]
    body += [
        "| setting | federation (sites) | epsilon per record / per site | sigma | share inverted-"
        "looking | mean intensity | CPU s | samples (a row per class) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for record in records:
        label = "non-private" if record["settings"].get("noise_multiplier") == 0 else "private"
        body += [_row(run, label) for run in record["runs"]]
    title = "Federated images, GS-WGAN's setting (issue 23.3)"
    lines = [f"# {title}", "", *body]
    out.write_text("\n".join(lines).rstrip() + "\n")


def main(argv: list[str] | None = None) -> None:
    if argv is None:
        argv = sys.argv[1:]
    if argv and argv[0] == "--report":
        report([Path(p) for p in argv[1:]], OUT.with_suffix(".md"))
        return
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
    if config.noise_multiplier is None:  # every federation here has the same sigma: once
        n = participations(config.steps, 1, 1)  # every site in every step
        sigma = record_noise_for_target(
            config.epsilon, config.delta, config.critics_per_site, config.releases(), n
        )
        config = replace(config, noise_multiplier=sigma)
    record = {**provenance(__file__, argv), "settings": vars(args), "runs": []}
    pictures = Path(args.out).parent / "federated_images"
    for name, sites in federations(parts, args.inverted).items():
        run_config = replace(config, sites_per_step=None)
        record["runs"].append(
            one_run(name, sites, schema, run_config, args.seed, pictures, Path(args.out).stem)
        )
        write_results(Path(args.out), record, "Federated images (GS-WGAN's setting)", None)


if __name__ == "__main__":
    main()
