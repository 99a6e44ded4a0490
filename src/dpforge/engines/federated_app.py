"""The Flower apps of a real federation: ``client_app`` at each site, ``server_app`` at the server.

Flower's deployment runtime runs them: a SuperLink (the server's address, its TLS certificate
and key), one SuperNode per site (the SuperLink's address, the CA certificate, and the site's
``--node-config``), and ``flwr run`` with a Flower app whose components are
``dpforge.engines.federated_app:server_app`` and ``:client_app`` (README, "Federated sites").
The simulation (:mod:`.federated_sim`) runs the same ``server_app`` main and the same site
code over an in-process grid.

A site's node config: ``data`` (its CSV), ``trust`` (local | secagg), ``sites`` (n),
``tolerate`` (t, secagg), optionally ``ledger`` (a JSON file where the site keeps its own ledger,
rewritten atomically after each answer) and ``max-epsilon`` with ``max-delta`` (the site refuses
any release that would take its own ledger past them). Its noise comes from the OS's entropy.
The run config:
``schema`` (JSON path on the server), ``out`` (model folder), ``epsilon``, ``delta``,
``metadata-share``, ``trust``, ``sites``, ``tolerate``, ``max-site-records``, ``wait`` (seconds
to wait for the sites to join).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
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
from dpforge.engines.federated_site import site_cap, write_site_ledger
from dpforge.engines.federated_trust import Trust, degraded_epsilons
from dpforge.errors import DpforgeError
from dpforge.privacy.ledger import PrivacyLedger
from dpforge.schema.array import load_schema

if TYPE_CHECKING:  # torch is imported on the server only: each site answer is a new process
    from dpforge import Synthesizer

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


def _write_ledger(context: Context, ledger: PrivacyLedger) -> None:
    write_site_ledger(context.node_config, ledger.to_dict())


client_app = site_app(
    ContextSites(
        lambda context: read_csv(Path(str(context.node_config["data"]))),
        lambda context: site_trust(context.node_config),
        lambda context, answers: np.random.default_rng(),  # the OS's entropy
        _write_ledger,
        lambda context: site_cap(context.node_config),
    )
)
server_app = ServerApp()


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
    synth = fit_federation(engine, schema, trust, config)
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


def fit_federation(engine: FederatedEngine, schema: Any, trust: Trust, config: Any) -> Synthesizer:
    """The pipeline over the sites; the trust model is stated in the ledger (a no-cost entry).
    The server app is a user of the library: it takes the Synthesizer from dpforge's public
    API, as any Flower app would."""
    import dpforge

    seed = config.get("seed")
    synth = dpforge.Synthesizer(
        schema,
        epsilon=float(config.get("epsilon", 3.0)),
        delta=float(config.get("delta", 1e-5)),
        metadata_share=float(config.get("metadata-share", 0.1)),
        seed=None if seed is None else int(seed),
        progress=False,
    )
    synth.fit(engine)
    synth.ledger_.record(f"trust: {trust.statement()}", NoOpDpEvent())
    return synth


def federation_report(synth: Synthesizer, trust: Trust, site_ledgers: list | None) -> dict:
    """The federation report beside the model: trust, epsilon beyond t, the sites' ledgers
    (simulation only: deployed sites keep theirs, see the ``ledger`` node config)."""
    delta = synth.delta
    report = {
        "trust": trust.mode,
        "sites": trust.n_sites,
        "tolerate": trust.tolerate,
        "statement": trust.statement(),
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
