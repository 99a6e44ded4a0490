"""``dpforge federated simulate-images``: GS-WGAN across image sites, on this machine.

The images are split into ``--sites`` parts (at random, or by label); each part is a site that
keeps its images and critics and returns only clipped, noised gradients with respect to the
generated samples the server sends; the server trains the generator on their mean
(:mod:`dpforge.engines.federated_images`, Flower messages in this process). Writes a model
folder with the generator, both ledgers (per record and per site) and the measured traffic.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import typer
from rich.console import Console

from dpforge.cli.engine import DEVICE_DEFAULT, DEVICE_HELP
from dpforge.cli.federated_deploy import DATA_BUDGET, NO_BUDGET_FILE
from dpforge.cli.io import read_data
from dpforge.errors import DpforgeError
from dpforge.options import check_device
from dpforge.schema.array import IMAGE, ArraySchema, load_schema
from dpforge.storage import check_output_folder

if TYPE_CHECKING:
    from dpforge.engines.federated_images import FederatedImageConfig

console = Console(stderr=True)
EPSILON_HELP = "per-record target; sigma is calibrated to it (default 10)"
# the run's settings, shared by simulate-images and server-images
SITES_PER_STEP = typer.Option(None, "--sites-per-step", help="default: every site")
CRITICS_PER_SITE = typer.Option(1, "--critics-per-site")
STEPS = typer.Option(300, "--steps", help="generator steps")
BATCH_SIZE = typer.Option(32, "--batch-size", help="generated samples per step")
EPSILON = typer.Option(None, "--epsilon", help=EPSILON_HELP)
DELTA = typer.Option(1e-5, "--delta")
NOISE_MULTIPLIER = typer.Option(
    None, "--noise-multiplier", help="noise std / 2C instead of --epsilon (0: non-private)"
)
CLIP_NORM = typer.Option(1.0, "--clip-norm")
SANITIZE = typer.Option("per_sample", "--sanitize", help="per_sample | batch")
CRITIC_TRAINING = typer.Option("frozen", "--critic-training", help="frozen | all")
WARM_START_STEPS = typer.Option(200, "--warm-start-steps")
D_STEPS = typer.Option(None, "--d-steps", help="--critic-training all: steps per step")


def simulate_images(
    data: Path = typer.Argument(..., help="the images: a folder, .npz or idx file"),
    schema_path: Path = typer.Option(..., "--schema", help="the public image schema (JSON)"),
    out: Path = typer.Option(..., "--out", help="the model folder to write"),
    labels: Path = typer.Option(None, "--labels", help="idx labels file (idx images)"),
    sites: int = typer.Option(10, "--sites", help="number of sites (GS-WGAN's clients)"),
    split: str = typer.Option("random", "--split", help="random, or by:label"),
    sites_per_step: int = SITES_PER_STEP,
    critics_per_site: int = CRITICS_PER_SITE,
    steps: int = STEPS,
    batch_size: int = BATCH_SIZE,
    epsilon: float = EPSILON,
    delta: float = DELTA,
    noise_multiplier: float = NOISE_MULTIPLIER,
    clip_norm: float = CLIP_NORM,
    sanitize: str = SANITIZE,
    critic_training: str = CRITIC_TRAINING,
    warm_start_steps: int = WARM_START_STEPS,
    d_steps: int = D_STEPS,
    seed: int = typer.Option(None, "--seed", help="seeds the split, the sites and the server"),
    device: str = typer.Option(DEVICE_DEFAULT, "--device", help=DEVICE_HELP),
    budget_file: Path | None = DATA_BUDGET,
    no_budget_file: bool = NO_BUDGET_FILE,
    overwrite: bool = typer.Option(False, "--overwrite"),
) -> None:
    """Split DATA into image sites and train a GS-WGAN generator across them with Flower."""
    from dpforge.cli.budget import budget_for_fit, print_budget_line
    from dpforge.engines.federated_images import split_images
    from dpforge.engines.federated_images_run import (
        FOLDER,
        run_summary,
        save_federated_images,
    )
    from dpforge.engines.federated_images_run import (
        simulate_images as simulate,
    )

    schema = image_schema(schema_path)
    torch_device = check_device(device, "--device")
    check_output_folder(out, FOLDER, overwrite=overwrite)
    config = image_settings(
        steps, batch_size, sites_per_step, critics_per_site, epsilon, delta, noise_multiplier,
        clip_norm, sanitize, critic_training, warm_start_steps, d_steps,
    )  # fmt: skip
    by_label = _by_label(split)
    budget = budget_for_fit(data, budget_file, no_budget_file)
    parts = split_images(
        read_data(IMAGE, data, labels=labels), sites, by_label, np.random.default_rng(seed)
    )
    server, grid = simulate(parts, schema, config, seed, torch_device, budget=budget)
    save_federated_images(server, grid.traffic, out, overwrite=overwrite)
    print_summary(run_summary(server, grid.traffic), out)
    print_budget_line(budget)


def image_settings(
    steps: int, batch_size: int, sites_per_step: int | None, critics_per_site: int,
    epsilon: float | None, delta: float, noise_multiplier: float | None, clip_norm: float,
    sanitize: str, critic_training: str, warm_start_steps: int, d_steps: int | None,
) -> FederatedImageConfig:  # fmt: skip
    """The run's settings from the command's options, refused when they cannot run."""
    from dpforge.engines.federated_images import FederatedImageConfig

    _refuse(epsilon, noise_multiplier, critic_training, d_steps)
    config = FederatedImageConfig(
        steps=steps, batch_size=batch_size, sites_per_step=sites_per_step,
        critics_per_site=critics_per_site, epsilon=10.0 if epsilon is None else epsilon,
        delta=delta, noise_multiplier=noise_multiplier, clip_norm=clip_norm, sanitize=sanitize,
        critic_training=critic_training, warm_start_steps=warm_start_steps, d_steps=d_steps or 1,
    )  # fmt: skip
    config.validate()
    return config


def image_schema(path: Path) -> ArraySchema:
    """The public image schema at ``path``, complete (federated sites estimate nothing)."""
    if not path.is_file():
        raise DpforgeError(f"--schema {path}: no such file")
    schema = load_schema(path)
    if not isinstance(schema, ArraySchema) or schema.kind != IMAGE:
        raise DpforgeError(
            "federated image runs need an image schema; tables: `simulate`, `server` and `client`"
        )
    if not schema.is_complete:
        raise DpforgeError(
            "the image schema must declare each channel's range and the classes: federated "
            "sites do not estimate metadata"
        )
    return schema


def _refuse(epsilon, noise_multiplier, critic_training: str, d_steps) -> None:
    if epsilon is not None and noise_multiplier is not None:
        raise DpforgeError("give --epsilon or --noise-multiplier, not both")
    if d_steps is not None and critic_training != "all":
        raise DpforgeError("--d-steps applies to --critic-training all only: drop it")


def _by_label(split: str) -> bool:
    if split in ("random", "by:label"):
        return split == "by:label"
    raise DpforgeError(f"--split must be 'random' or 'by:label' for images, got {split!r}")


def print_summary(summary: dict, out: Path) -> None:
    """Both guarantees and the traffic per step (a run's summary, as its model.json holds it)."""
    g = summary["guarantees"]
    b = summary["bytes_per_step"]
    console.print(f"wrote model folder {out}")
    for key in ("per_record", "per_site"):
        console.print(
            f"[bold]{key.replace('_', ' ')}[/bold] ({g[key]['relation']}): "
            f"epsilon = {float(g[key]['epsilon']):.3g} at delta = {g[key]['delta']:g}"
        )
    console.print(
        f"traffic per generator step: {b['server_to_sites']:,.0f} B to the sites, "
        f"{b['sites_to_server']:,.0f} B back (exchanging parameters: "
        f"{b['parameter_exchange_server_to_sites']:,} B and "
        f"{b['parameter_exchange_sites_to_server']:,} B)"
    )
