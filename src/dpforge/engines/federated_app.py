"""The Flower apps of a real federation: ``client_app`` at each site, ``server_app`` at the server.

Flower's deployment runtime runs them: a SuperLink (the server's address, its TLS certificate
and key), one SuperNode per site (the SuperLink's address, the CA certificate, and the site's
``--node-config``), and ``flwr run`` with a Flower app whose components are
``dpforge.engines.federated_app:server_app`` and ``:client_app`` (docs/scale.md, "Federated
sites (Flower)").
The simulation (:mod:`.federated_sim`) runs the same ``server_app`` main and the same site
code over an in-process grid.

A site's node config: ``data`` (its CSV), ``schema`` (its OWN declared schema: the server's is
checked against it, never trusted), ``trust`` (local | secagg), ``sites`` (n), ``tolerate``
(t, secagg), optionally ``out-of-bounds`` (error | clip), ``ledger`` (the file where the site
keeps its own ledger across runs, written before each answer leaves) and ``max-epsilon`` with
``max-delta`` (with a ledger: the site refuses any release that would take everything it ever
answered past them; :mod:`.federated_site_ledger`). Its noise comes from the OS's entropy.
The run config:
``schema`` (JSON path on the server), ``out`` (model folder), ``epsilon``, ``delta``,
``metadata-share``, ``trust``, ``sites``, ``tolerate``, ``max-site-records``, ``wait`` (seconds
to wait for the sites to join), ``budget`` (the federation's budget file, charged before the
first release; absent only with ``--no-budget-file``).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dp_accounting import NoOpDpEvent
from flwr.app import Context
from flwr.serverapp import Grid, ServerApp

from dpforge.data.tables import read_csv
from dpforge.engines.federated import FederatedEngine
from dpforge.engines.federated_flower import (
    DEFAULT_MAX_SITE_RECORDS,
    ContextSites,
    FlowerTransport,
    site_app,
)
from dpforge.engines.federated_site import Site
from dpforge.engines.federated_site_ledger import SiteLedger, site_cap
from dpforge.engines.federated_trust import Trust, degraded_epsilons
from dpforge.errors import DpforgeError
from dpforge.privacy.budget import DataBudget, RunCharge
from dpforge.privacy.release_noise import noise_generator
from dpforge.schema.array import load_schema
from dpforge.schema.table import Schema

if TYPE_CHECKING:  # torch is imported on the server only: each site answer is a new process
    from dpforge.fitting import FitRun

__all__ = [
    "client_app",
    "federation_report",
    "fit_federation",
    "server_app",
    "site_trust",
    "wait_for_sites",
]


def site_trust(config: Any) -> Trust:
    """The trust model a site (node config) or the server (run config) declares."""
    return Trust(str(config["trust"]), int(config["sites"]), int(config.get("tolerate", 0)))


def site_ledger(config: Any) -> SiteLedger:
    """A deployed site's ledger: its file (all its runs so far) and its cap, if it sets them."""
    cap = site_cap(config)
    path = config.get("ledger")
    return SiteLedger.opened(Path(str(path)), cap) if path else SiteLedger()


def site_schema(config: Any) -> Schema:
    """The site's OWN declared table schema (its node config's ``schema``): its records are
    checked against it, never against one the server sends."""
    if not config.get("schema"):
        raise DpforgeError("a site's node config names its own schema (schema=PATH)")
    schema = load_schema(Path(str(config["schema"])))
    if not isinstance(schema, Schema):
        raise DpforgeError("a table site's own schema must be a table schema")
    return schema


def _deployed_site(context: Context, answers: int) -> Site:
    config = context.node_config
    records = read_csv(Path(str(config["data"])))
    return Site(records, site_schema(config), site_trust(config), noise_generator(None),
                site_ledger(config), str(config.get("out-of-bounds", "error")))  # fmt: skip


client_app = site_app(ContextSites(_deployed_site))  # OpenDP's noise, seeded from the OS
server_app = ServerApp()
UNIT = (
    "one record (a row at one site): federated runs take no privacy unit, so a person with k "
    "rows is protected only at about k times the epsilon (group privacy)"
)


@server_app.main()
def serve(grid: Grid, context: Context) -> None:
    """Wait for the sites, fit across them, write the model folder and the federation report."""
    from dpforge.storage import atomic_write

    config = context.run_config
    trust = site_trust(config)
    nodes = wait_for_sites(grid, trust.n_sites, float(config.get("wait", 600)))
    most = int(config.get("max-site-records", DEFAULT_MAX_SITE_RECORDS))
    engine = FederatedEngine(FlowerTransport(grid, nodes, trust, most))
    schema = load_schema(Path(str(config["schema"])))
    budget = DataBudget(Path(str(config["budget"]))) if config.get("budget") else None
    synth = fit_federation(engine, schema, trust, config, budget)
    out = Path(str(config["out"]))
    synth.save(out, overwrite=bool(config.get("overwrite", False)))
    report = json.dumps(federation_report(synth, trust, None), indent=2)
    atomic_write(out.with_name(out.name + ".federation.json"), lambda p: p.write_text(report),
                 overwrite=bool(config.get("overwrite", False)))  # fmt: skip


def wait_for_sites(grid: Grid, n_sites: int, wait: float) -> list[int]:
    deadline = time.monotonic() + wait
    while True:
        nodes = sorted(grid.get_node_ids())
        if len(nodes) == n_sites:
            return nodes
        if len(nodes) > n_sites:
            raise DpforgeError(f"{len(nodes)} sites joined, the run config names {n_sites}")
        if time.monotonic() > deadline:
            raise DpforgeError(f"{len(nodes)} of {n_sites} sites joined within {wait:g} s")
        time.sleep(1.0)


def fit_federation(
    engine: FederatedEngine, schema: Any, trust: Trust, config: Any, budget: RunCharge | None
) -> FitRun:
    """The pipeline over the sites, charged to ``budget`` (the data set's budget file) before
    its first release by the same path as any fit (:class:`dpforge.fitting.FitRun`: a whole
    fit below the facade, which saves the model folder); the trust model is stated in the
    ledger (a no-cost entry)."""
    from dpforge.fitting import FitRun

    seed = config.get("seed")
    synth = FitRun(
        schema,
        epsilon=float(config.get("epsilon", 3.0)),
        delta=float(config.get("delta", 1e-5)),
        metadata_share=float(config.get("metadata-share", 0.1)),
        out_of_bounds=str(config.get("out-of-bounds", "error")),
        seed=None if seed is None else int(seed),
        progress=False,
    )
    synth.fit(engine, budget=budget)
    synth.ledger_.record(f"trust: {trust.statement()}", NoOpDpEvent())
    return synth


def federation_report(synth: FitRun, trust: Trust, site_ledgers: list | None) -> dict:
    """The federation report beside the model: trust, epsilon beyond t, the sites' ledgers
    (simulation only: deployed sites keep theirs, see the ``ledger`` node config)."""
    delta = synth.delta
    report = {
        "trust": trust.mode,
        "sites": trust.n_sites,
        "tolerate": trust.tolerate,
        "statement": trust.statement(),
        "unit": UNIT,
        "epsilon": synth.ledger_.epsilon(delta),
        "delta": delta,
        "epsilon_if_k_sites_collude": {
            str(k): e for k, e in degraded_epsilons(synth.ledger_, trust, delta).items()
        },
    }
    if site_ledgers is not None:
        report["site_epsilons"] = [ledger.epsilon(delta) for ledger in site_ledgers]
        report["site_ledgers"] = [ledger.to_dict() for ledger in site_ledgers]
    return report
