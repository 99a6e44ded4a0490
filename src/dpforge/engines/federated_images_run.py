"""A federated GS-WGAN run on one machine, its model folder, and the traffic it measured.

:func:`simulate_images` runs the sites (:mod:`.federated_images_site`) and the server
(:mod:`.federated_images`) in this process over Flower's messages (:class:`CountingGrid`:
every message goes through Flower's wire encoding). :func:`save_federated_images` writes the
model folder: the generator's weights (safetensors) and ``model.json`` with the public schema,
the settings, both ledgers with their guarantees, and the measured traffic. It never holds a
critic, a record or a site's size.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np
import torch

from dpforge.data.arrays import ArrayData
from dpforge.engines.federated_images import (
    CountingGrid,
    FederatedImageConfig,
    ImageServer,
    Traffic,
)
from dpforge.engines.federated_images_site import ImageSite, SiteSettings, image_site_app
from dpforge.engines.federated_sim import FIRST_SITE, SiteGrid
from dpforge.errors import ModelFileError
from dpforge.nets.mlp import FlatGenerator
from dpforge.privacy.budget import RunCharge, charge_before_release, settle_charge
from dpforge.privacy.federated_gswgan import RECORD_RELATION, SITE_RELATION
from dpforge.privacy.ledger import PrivacyLedger
from dpforge.schema.array import ArraySchema
from dpforge.storage import (
    FolderKind,
    read_json,
    read_tensors,
    replace_folder,
    write_json,
    write_tensors,
)

FORMAT = "dpforge.federated_images"
WEIGHTS, MANIFEST = "generator.safetensors", "model.json"
BYTES_PER_PARAMETER = 4  # float32


def _is_folder(path: Path) -> bool:
    try:
        return read_json(Path(path) / MANIFEST).get("format") == FORMAT
    except (ModelFileError, AttributeError):
        return False


FOLDER = FolderKind("federated image model folder", frozenset({WEIGHTS, MANIFEST}), _is_folder)


def _torch_generator(seed: int | None, *key: int) -> torch.Generator:
    """A generator the run owns: from ``(seed, *key)``, or from the OS when ``seed`` is None."""
    gen = torch.Generator()
    if seed is None:
        gen.seed()
    else:
        gen.manual_seed(int(np.random.SeedSequence([seed, *key]).generate_state(1)[0]))
    return gen


def simulate_images(
    parts: Sequence[ArrayData],
    schema: ArraySchema,
    config: FederatedImageConfig,
    seed: int | None,
    device: str | torch.device = "cpu",
    go_on: Callable[[ImageServer], bool] | None = None,
    budget: RunCharge | None = None,
) -> tuple[ImageServer, CountingGrid]:
    """Run the whole federation: one site per part, the server over Flower messages. The
    generator, the critics and the sanitizer run on ``device`` (the messages carry float32
    arrays, as in a deployment); ``go_on``: :meth:`ImageServer.run`'s; ``budget``: the data
    set's budget file, charged with the planned per-record ledger before any site reads."""
    config.validate()
    server_rng = _torch_generator(seed, 0)
    nodes = [FIRST_SITE + i for i in range(len(parts))]
    server = ImageServer(schema, config, nodes, server_rng, device)
    server.plan()  # both ledgers, before any site reads a record
    charge_plan(server, budget)
    settings = server.site_settings()
    sites: dict[int, ImageSite] = {}

    def site_of(context: Any, _told: SiteSettings | None) -> ImageSite:  # settings: above
        node = context.node_id
        if node not in sites:  # a site reads its records only once the run has started
            i = node - FIRST_SITE
            sites[node] = ImageSite(
                parts[i], schema, settings, _torch_generator(seed, 1, i), device
            )
        return sites[node]

    grid = CountingGrid(SiteGrid(image_site_app(site_of), [{} for _ in parts]))
    server.run(grid, go_on)
    return server, grid


def charge_plan(server: ImageServer, budget: RunCharge | None) -> None:
    """Charge the data set's budget file with the run's planned per-record ledger, before the
    first message, through the one charging path (refused beyond the declared total): the
    whole ledger is known before the run starts, so it is both the bound and the settlement."""
    if budget is None:
        return
    delta = server.config.delta
    planned = server.record_ledger.epsilon(delta, "rdp")
    description = (
        f"federated gswgan, {len(server.nodes)} sites, per-record epsilon {planned:.3g}, "
        f"delta {delta:g}"
    )
    run = charge_before_release(budget, epsilon=planned, delta=delta, description=description,
                                bound=server.record_ledger)  # fmt: skip
    settle_charge(budget, run, server.record_ledger)


def run_summary(server: ImageServer, traffic: Traffic) -> dict[str, Any]:
    """Both guarantees (ε from the accountant) and the traffic, per step and in all."""
    c, delta = server.config, server.config.delta
    counts = server.parameter_counts()
    g_bytes, d_bytes = (BYTES_PER_PARAMETER * counts[k] for k in ("generator", "critic"))
    steps = traffic.messages.get("query.gradient", 0)
    per = server.per_step
    return {
        "guarantees": {
            "per_record": {
                "relation": RECORD_RELATION,
                "epsilon": server.record_ledger.epsilon(delta, "rdp"),
                "delta": delta,
            },
            "per_site": {
                "relation": SITE_RELATION,
                "epsilon": server.site_ledger.epsilon(delta, "rdp"),
                "delta": delta,
            },
        },  # fmt: skip
        "noise_multiplier": server.sigma,
        "noise_std": 2.0 * server.sigma * c.clip_norm,
        "sites": len(server.nodes),
        "sites_per_step": per,
        "steps_per_site_at_most": server.participations,
        "steps_taken": server.step_index,
        "parameters": counts,
        "bytes_per_step": {
            "server_to_sites": traffic.down.get("query.gradient", 0) / max(steps / per, 1),
            "sites_to_server": traffic.up.get("query.gradient", 0) / max(steps / per, 1),
            "warm_start_server_to_sites_once": traffic.down.get("query.warmup", 0),
            "parameter_exchange_server_to_sites": per * (g_bytes + d_bytes),
            "parameter_exchange_sites_to_server": per * d_bytes,
        },
    }


def save_federated_images(
    server: ImageServer, traffic: Traffic, out: Path, *, overwrite: bool
) -> Path:
    """The model folder (atomic): generator weights, public schema, settings, both ledgers."""
    info = {
        "format": FORMAT,
        "version": 1,
        "schema": server.schema.to_dict(),
        "config": {
            k: list(v) if isinstance(v, tuple) else v for k, v in asdict(server.config).items()
        },  # fmt: skip
        "record_ledger": server.record_ledger.to_dict(),
        "site_ledger": server.site_ledger.to_dict(),
        "summary": _json_safe(run_summary(server, traffic)),
    }

    def build(staging: Path) -> None:
        write_tensors(
            staging / WEIGHTS, {k: v.cpu() for k, v in server.generator.state_dict().items()}
        )
        write_json(staging / MANIFEST, info)

    return replace_folder(Path(out), build, FOLDER, overwrite=overwrite)


def _json_safe(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value


def load_federated_images(path: Path) -> tuple[FlatGenerator, dict[str, Any]]:
    """The saved generator (evaluation mode) and its model.json; refuses other folders."""
    info = read_json(Path(path) / MANIFEST)
    if info.get("format") != FORMAT:
        raise ModelFileError(f"{path} is not a federated image model folder ({FORMAT})")
    schema = ArraySchema.from_dict(info["schema"])
    c = info["config"]
    n_classes = len(schema.classes or ()) if schema.label else 0
    gen = FlatGenerator(c["latent_dim"], n_classes, tuple(schema.shape), c["generator_hidden"])
    gen.load_state_dict(read_tensors(Path(path) / WEIGHTS))
    PrivacyLedger.from_dict(info["record_ledger"])  # checks the saved ledgers are well formed
    PrivacyLedger.from_dict(info["site_ledger"])
    return gen.eval(), info
