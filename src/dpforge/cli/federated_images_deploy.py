"""``dpforge federated server-images`` and ``client-images``: a deployed image federation.

GS-WGAN's decentralised setting on Flower's deployment runtime: the server runs Flower's
SuperLink and the generator (:mod:`dpforge.engines.federated_images_app`); each site runs a
SuperNode that keeps its images and critics and answers with sanitized gradients. The
processes, TLS rules and app folder are the table federation's
(:mod:`dpforge.cli.federated_deploy`, :mod:`dpforge.engines.federated_serve`).
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from dpforge.cli.federated_deploy import (
    BUDGET,
    CA,
    CERTIFICATE,
    CONNECT_TIMEOUT,
    INSECURE,
    KEY,
    LEDGER,
    LISTEN,
    MAX_DELTA,
    MAX_EPSILON,
    NO_BUDGET_FILE,
    OUT,
    OVERWRITE,
    PORT,
    SERVER,
    SITES,
    WAIT,
    server_budget,
    site_guard_config,
    split_address,
)
from dpforge.cli.federated_images import (
    BATCH_SIZE,
    CLIP_NORM,
    CRITIC_TRAINING,
    CRITICS_PER_SITE,
    D_STEPS,
    DELTA,
    EPSILON,
    NOISE_MULTIPLIER,
    SANITIZE,
    SITES_PER_STEP,
    STEPS,
    WARM_START_STEPS,
    image_schema,
    image_settings,
    print_summary,
)  # fmt: skip
from dpforge.errors import DpforgeError
from dpforge.schema.array import ArraySchema

if TYPE_CHECKING:
    from dpforge.engines.federated_images import FederatedImageConfig


def server_images(
    schema_path: Path = typer.Option(..., "--schema", help="the public image schema (JSON)"),
    out: Path = OUT,
    sites: int = SITES,
    listen: str = LISTEN,
    name: str | None = typer.Option(
        None,
        "--server-name",
        help=(
            "the host name the certificate names (default: the --listen host, or localhost when "
            "listening on all interfaces)"
        ),
    ),
    certificate: Path | None = CERTIFICATE,
    key: Path | None = KEY,
    ca: Path | None = CA,
    insecure: bool = INSECURE,
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
    wait: float = WAIT,
    seed: int | None = typer.Option(None, "--seed", help="seeds the server's generator"),
    budget: Path | None = BUDGET,
    no_budget_file: bool = NO_BUDGET_FILE,
    overwrite: bool = OVERWRITE,
) -> None:
    """Run the image federation's server: Flower's SuperLink and the generator."""
    from dpforge.engines.federated_deploy import IMAGES_APP, Tls, terminated_as_exit
    from dpforge.engines.federated_images_app import image_run_config
    from dpforge.engines.federated_images_run import FOLDER, load_federated_images
    from dpforge.engines.federated_serve import ServerPlan, serve
    from dpforge.storage import check_output_folder

    tls = Tls.checked(insecure, {"certificate": certificate, "key": key, "ca": ca})
    host, port = split_address(listen, "--listen")
    schema = image_schema(schema_path)
    config = image_settings(
        steps, batch_size, sites_per_step, critics_per_site, epsilon, delta, noise_multiplier,
        clip_norm, sanitize, critic_training, warm_start_steps, d_steps,
    )  # fmt: skip
    out = out.resolve()
    check_output_folder(out, FOLDER, overwrite=overwrite)
    run_config = {"schema": str(schema_path.resolve()), "out": str(out), "sites": sites,
                  "wait": wait, "overwrite": overwrite, **image_run_config(config),
                  **({} if seed is None else {"seed": seed})}  # fmt: skip
    _plan(schema, config, sites)
    run_config |= server_budget(budget, no_budget_file)
    name = name or ("localhost" if host in ("0.0.0.0", "::") else host)
    plan = ServerPlan(host, port, name, tls, run_config, app=IMAGES_APP)
    with terminated_as_exit(), tempfile.TemporaryDirectory(prefix="dpforge-superlink-") as work:
        serve(plan, Path(work), lambda line: typer.echo(line, err=True))
    print_summary(load_federated_images(out)[1]["summary"], out)


def _plan(schema: ArraySchema, config: FederatedImageConfig, sites: int) -> None:
    """The run's two guarantees, as its server app will plan them, shown before anything
    starts (settings that cannot run are refused here, not once the sites have joined)."""
    import torch

    from dpforge.engines.federated_images import ImageServer

    if sites < 1:
        raise DpforgeError(f"--sites must be >= 1, got {sites}")
    planned = ImageServer(schema, config, list(range(sites)), torch.Generator().manual_seed(0))
    planned.plan()
    for what, ledger in (("per record", planned.record_ledger), ("per site", planned.site_ledger)):
        eps = ledger.epsilon(config.delta, "rdp")
        typer.echo(f"planned, {what}: epsilon = {eps:.3g} at delta = {config.delta:g}", err=True)


def client_images(
    images: Path = typer.Argument(..., help="this site's images (folder, .npz or idx file)"),
    server_address: str = SERVER,
    schema_path: Path = typer.Option(..., "--schema", help="the public image schema (JSON)"),
    labels: Path | None = typer.Option(None, "--labels", help="idx labels file (idx images)"),
    ca: Path | None = CA,
    insecure: bool = INSECURE,
    ledger: Path | None = LEDGER,
    max_epsilon: float | None = MAX_EPSILON,
    max_delta: float | None = MAX_DELTA,
    port: int = PORT,
    connect_timeout: float = CONNECT_TIMEOUT,
) -> None:
    """Run one image site: check its images against the schema, then answer until the end
    (with --max-epsilon/--max-delta, refusing any answer past its own per-record cap)."""
    from dpforge.engines.federated_deploy import Tls, terminated_as_exit
    from dpforge.engines.federated_images_app import read_site_images
    from dpforge.engines.federated_serve import SitePlan, join

    tls = Tls.checked(insecure, {"ca": ca})
    split_address(server_address, "--server")
    schema = image_schema(schema_path)
    if not images.exists():
        raise DpforgeError(f"{images}: no such file or folder (this site's images)")
    config = {"images": str(images.resolve()), "schema": str(schema_path.resolve())}
    if labels is not None:
        config["labels"] = str(labels.resolve())
    config |= site_guard_config(ledger, max_epsilon, max_delta)
    read_site_images(config, schema)  # its errors (image, value) on this site's console
    plan = SitePlan(server_address, tls, config, port, connect_timeout)
    with terminated_as_exit(), tempfile.TemporaryDirectory(prefix="dpforge-supernode-") as work:
        join(plan, Path(work), lambda line: typer.echo(line, err=True))
