"""The Flower apps of a deployed image federation (GS-WGAN's setting, ``dpforge federated
server-images`` and ``client-images``): ``client_app`` at each site, ``server_app`` at the server.

The processes and the app folder are the table federation's (:mod:`.federated_deploy`,
:mod:`.federated_serve`); only these components differ. The server's side is the simulation's
:class:`~.federated_images.ImageServer` over the deployment's grid: both ledgers are written
before the first message, and the model folder is the simulation's
(:func:`~.federated_images_run.save_federated_images`).

A site's node config: ``images`` (its folder, .npz or idx file), optionally ``labels`` (an idx
labels file) and ``schema`` (the public image schema, JSON); optionally ``ledger`` (its own
ledger file) and ``max-epsilon`` with ``max-delta`` (its own cap,
:mod:`.federated_images_guard`). Flower starts a new process for each message, so a site
keeps its critics, their optimiser moments, its records' critic
assignment and its random generator's state in its own Flower context (on its machine) between
messages; its randomness comes from the OS. The run config: ``schema``, ``out``, ``sites``,
``wait``, ``overwrite``, ``seed``, ``budget`` (the budget file charged with the planned
per-record ledger before the first message) and the settings of
:class:`~.federated_images.FederatedImageConfig` (``steps``, ``batch-size``, ...; see
:func:`image_run_config`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from flwr.app import Array, ArrayRecord, Context
from flwr.serverapp import Grid, ServerApp

from dpforge.engines.federated_app import wait_for_sites
from dpforge.engines.federated_images import CountingGrid, FederatedImageConfig, ImageServer
from dpforge.engines.federated_images_guard import before_answer
from dpforge.engines.federated_images_run import (
    _torch_generator,
    charge_plan,
    save_federated_images,
)
from dpforge.engines.federated_images_site import (
    SETTINGS,
    ImageSite,
    SiteSettings,
    image_site_app,
    read_settings,
    settings_record,
)
from dpforge.errors import DpforgeError, redacted_errors
from dpforge.privacy.budget import DataBudget
from dpforge.schema.array import ArraySchema, load_schema

__all__ = ["client_app", "image_config", "image_run_config", "read_site_images", "server_app"]

SITE_STATE = "dpforge.image_site"
# the settings a run config carries (the network sizes and learning rates keep their defaults)
RUN_FIELDS = {"steps": int, "batch_size": int, "sites_per_step": int, "critics_per_site": int,
              "epsilon": float, "delta": float, "noise_multiplier": float, "clip_norm": float,
              "sanitize": str, "critic_training": str, "warm_start_steps": int,
              "d_steps": int}  # fmt: skip


def image_run_config(config: FederatedImageConfig) -> dict[str, Any]:
    """The run config's settings (Flower's keys: dashes), None values left out."""
    values = {name: getattr(config, name) for name in RUN_FIELDS}
    return {k.replace("_", "-"): v for k, v in values.items() if v is not None}


def image_config(run_config: Any) -> FederatedImageConfig:
    """The settings back from a run config (the defaults for those it leaves out)."""
    return FederatedImageConfig(**{
        name: kind(run_config[name.replace("_", "-")]) for name, kind in RUN_FIELDS.items()
        if name.replace("_", "-") in run_config
    })  # fmt: skip


def read_site_images(node_config: Any, schema: ArraySchema) -> Any:
    """The site's images (ArrayData), checked against the public schema."""
    from dpforge.data.arrays import validate_arrays
    from dpforge.data.images import read_images

    labels = node_config.get("labels")
    records = read_images(Path(str(node_config["images"])), None if not labels else Path(labels))
    return validate_arrays(records, schema)


def _site_of(context: Context, settings: SiteSettings | None) -> ImageSite:
    """A new site at the warm-up query (its settings kept in the context), else the site
    rebuilt from its images and the state its context kept (refused when that state is
    missing: a site never answers from critics that missed the warm start)."""
    if settings is not None:
        context.state.config_records[SETTINGS] = settings_record(settings)
    elif SITE_STATE not in context.state.array_records:
        raise DpforgeError("this site holds no state from the run's warm-up query (its "
                           "SuperNode restarted?): restart the run")  # fmt: skip
    schema = load_schema(Path(str(context.node_config["schema"])))
    generator = torch.Generator()
    generator.seed()  # the OS's entropy
    with redacted_errors(True):  # a refusal reaches the server: no value read from an image
        records = read_site_images(context.node_config, schema)
        site = ImageSite(records, schema, read_settings(context.state.config_records[SETTINGS]),
                         generator)  # fmt: skip
    if settings is None:
        record = context.state.array_records[SITE_STATE]
        site.load_state_arrays({k: record[k].numpy() for k in record})
    return site


def _keep(context: Context, site: ImageSite) -> None:
    arrays = {k: Array(v) for k, v in site.state_arrays().items()}
    context.state.array_records[SITE_STATE] = ArrayRecord(arrays)


client_app = image_site_app(_site_of, _keep, before_answer)
server_app = ServerApp()


@server_app.main()
def serve(grid: Grid, context: Context) -> None:
    """Wait for the sites, plan both ledgers, train the generator, write the model folder."""
    config = context.run_config
    settings = image_config(config)
    schema = load_schema(Path(str(config["schema"])))
    nodes = wait_for_sites(grid, int(config["sites"]), float(config.get("wait", 600)))
    seed = config.get("seed")
    server = ImageServer(schema, settings, nodes,
                         _torch_generator(None if seed is None else int(seed), 0))  # fmt: skip
    server.plan()  # both ledgers, before the first message
    charge_plan(server, DataBudget(Path(str(config["budget"]))) if config.get("budget") else None)
    counted = CountingGrid(grid)
    server.run(counted)
    save_federated_images(server, counted.traffic, Path(str(config["out"])),
                          overwrite=bool(config.get("overwrite", False)))  # fmt: skip
