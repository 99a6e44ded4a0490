"""``dpforge federated server`` and ``dpforge federated client``: a deployed federation.

The server runs Flower's SuperLink and the dpforge run; each site runs a SuperNode that answers
from its own CSV file (:mod:`dpforge.engines.federated_serve`). TLS is the default: the server
needs its certificate, key and CA, a site the CA; ``--insecure`` must be asked for.
"""

from __future__ import annotations

import tempfile
from dataclasses import replace
from pathlib import Path

import typer

from dpforge.errors import DpforgeError
from dpforge.schema.array import load_schema
from dpforge.schema.table import Schema

TRUST_HELP = "local (each site adds the full noise) or secagg (Flower SecAgg+ shares)"
TOLERATE_HELP = "secagg: sites that may drop out or collude (t; default 1)"
INSECURE_HELP = "no TLS (a local trial only: the answers cross the network in clear)"
CA_HELP = "the certificate authority (PEM) that signed the server's certificate"

# options the table and the image deployments share (dpforge.cli.federated_images_deploy)
OUT = typer.Option(..., "--out", help="the model folder to write")
SITES = typer.Option(..., "--sites", help="number of sites the run waits for")
LISTEN = typer.Option("0.0.0.0:9092", "--listen", help="HOST:PORT the sites reach")
CERTIFICATE = typer.Option(None, "--certificate", help="server TLS cert (PEM)")
KEY = typer.Option(None, "--key", help="the certificate's private key (PEM)")
CA = typer.Option(None, "--ca", help=CA_HELP)
INSECURE = typer.Option(False, "--insecure", help=INSECURE_HELP)
WAIT = typer.Option(600.0, "--wait", help="seconds to wait for all sites to join")
OVERWRITE = typer.Option(False, "--overwrite")
SERVER = typer.Option(..., "--server", help="the server's HOST:PORT")
PORT = typer.Option(9094, "--port", help="this site's local Flower runtime port")
LEDGER = typer.Option(
    None, "--ledger", help="this site's ledger file: every answer of every run, written first"
)
MAX_EPSILON = typer.Option(
    None, "--max-epsilon", help="this site's own cap over all its runs (needs --ledger)"
)
BUDGET = typer.Option(
    None,
    "--budget",
    help="the federation's budget file: the run is charged there before its first release",
)
NO_BUDGET_FILE = typer.Option(False, "--no-budget-file", help="record this run in no budget file")
# the simulations' budget: the data set's file, as for fit (federated.py, federated_images.py)
DATA_BUDGET = typer.Option(
    None,
    "--budget",
    help="the data set's budget file (default: DATA.dpforge-budget.json next to DATA): this run "
    "is charged before its first release; beyond its declared total it is refused",
)
MAX_DELTA = typer.Option(None, "--max-delta", help="with --max-epsilon")
CONNECT_TIMEOUT = typer.Option(
    60.0, "--connect-timeout", help="seconds to try to reach the server before giving up"
)


def server(
    schema_path: Path = typer.Option(..., "--schema", help="the public table schema (JSON)"),
    out: Path = OUT,
    sites: int = SITES,
    listen: str = LISTEN,
    name: str | None = typer.Option(
        None,
        "--server-name",
        help=(
            "the host name the certificate names (default: the --listen host, or localhost when "
            "listening on all interfaces); this command's own connection to the SuperLink uses it"
        ),
    ),
    certificate: Path | None = CERTIFICATE,
    key: Path | None = KEY,
    ca: Path | None = CA,
    insecure: bool = INSECURE,
    epsilon: float = typer.Option(3.0, "--epsilon", help="total budget, metadata included"),
    delta: float = typer.Option(1e-5, "--delta"),
    metadata_share: float = typer.Option(0.1, "--metadata-share"),
    trust: str = typer.Option("secagg", "--trust", help=TRUST_HELP),
    tolerate: int | None = typer.Option(None, "--tolerate", help=TOLERATE_HELP),
    max_site_records: int = typer.Option(
        2**20, "--max-site-records", help="secagg: public bound on any one site's records"
    ),
    wait: float = WAIT,
    seed: int | None = typer.Option(None, "--seed", help="seeds the server's side of the fit"),
    budget: Path | None = BUDGET,
    no_budget_file: bool = NO_BUDGET_FILE,
    overwrite: bool = OVERWRITE,
) -> None:
    """Run the federation's server: Flower's SuperLink and the dpforge run over the sites.

    The guarantee is per record (one row at a site): federated runs have no privacy unit.
    """
    from dpforge.engines.federated_deploy import Tls, terminated_as_exit
    from dpforge.engines.federated_serve import ServerPlan, serve

    tls = Tls.checked(insecure, {"certificate": certificate, "key": key, "ca": ca})
    host, port = split_address(listen, "--listen")
    _table_schema(schema_path)
    out = out.resolve()
    _check_outputs(out, overwrite)
    run_config = {
        "schema": str(schema_path.resolve()), "out": str(out), "epsilon": epsilon,
        "delta": delta, "metadata-share": metadata_share, "trust": trust, "sites": sites,
        "tolerate": tolerate_of(trust, tolerate), "max-site-records": max_site_records,
        "wait": wait, "overwrite": overwrite, **({} if seed is None else {"seed": seed}),
        **server_budget(budget, no_budget_file),
    }  # fmt: skip
    name = name or ("localhost" if host in ("0.0.0.0", "::") else host)
    plan = ServerPlan(host, port, name, tls, run_config)
    with terminated_as_exit(), tempfile.TemporaryDirectory(prefix="dpforge-superlink-") as work:
        serve(plan, Path(work), lambda line: typer.echo(line, err=True))
    typer.echo(f"wrote model folder {out} and {out.name}.federation.json beside it", err=True)
    typer.echo("the guarantee is per record (a row at one site): federated runs take no privacy "
               "unit", err=True)  # fmt: skip


def client(
    data: Path = typer.Argument(..., help="this site's table (CSV); it never leaves the site"),
    server_address: str = SERVER,
    schema_path: Path = typer.Option(..., "--schema", help="the public schema (checked here)"),
    sites: int = typer.Option(..., "--sites", help="number of sites (as the server says)"),
    ca: Path | None = CA,
    insecure: bool = INSECURE,
    trust: str = typer.Option("secagg", "--trust", help=TRUST_HELP),
    tolerate: int | None = typer.Option(None, "--tolerate", help=TOLERATE_HELP),
    ledger: Path | None = LEDGER,
    max_epsilon: float | None = MAX_EPSILON,
    max_delta: float | None = MAX_DELTA,
    port: int = PORT,
    connect_timeout: float = CONNECT_TIMEOUT,
) -> None:
    """Run one site: check its table against the schema, then answer the server until it ends."""
    from dpforge.engines.federated_deploy import Tls, terminated_as_exit
    from dpforge.engines.federated_serve import SitePlan, join

    tls = Tls.checked(insecure, {"ca": ca})
    split_address(server_address, "--server")
    check_site_table(data, _table_schema(schema_path))
    config = {"data": str(data.resolve()), "schema": str(schema_path.resolve()),
              "trust": trust, "sites": sites, "tolerate": tolerate_of(trust, tolerate)}  # fmt: skip
    config |= site_guard_config(ledger, max_epsilon, max_delta)
    plan = SitePlan(server_address, tls, config, port, connect_timeout)
    with terminated_as_exit(), tempfile.TemporaryDirectory(prefix="dpforge-supernode-") as work:
        join(plan, Path(work), lambda line: typer.echo(line, err=True))


def site_guard_config(ledger: Path | None, max_epsilon: float | None,
                      max_delta: float | None) -> dict:  # fmt: skip
    """A site's node config for its own ledger file and its own (epsilon, delta) cap."""
    if (max_epsilon is None) != (max_delta is None):
        raise DpforgeError("--max-epsilon and --max-delta go together: pass both or neither")
    if max_epsilon is not None and ledger is None:
        raise DpforgeError(
            "--max-epsilon needs --ledger: the cap counts every run this site answers, and the "
            "ledger file is where the site keeps them"
        )
    config: dict = {} if ledger is None else {"ledger": str(ledger.resolve())}
    if max_epsilon is not None:
        config |= {"max-epsilon": float(max_epsilon), "max-delta": float(max_delta)}
    return config


def server_budget(budget: Path | None, no_budget_file: bool) -> dict:
    """The run config's budget file: ``--budget PATH``, or none with ``--no-budget-file``
    (the server holds no data file to find one beside, so the choice is explicit)."""
    from dpforge.privacy.budget import DataBudget

    if budget is not None and no_budget_file:
        raise DpforgeError("give --budget PATH or --no-budget-file, not both")
    if budget is None and not no_budget_file:
        raise DpforgeError(
            "give the federation's budget file with --budget PATH (the run is charged there "
            "before its first release), or --no-budget-file to record it nowhere"
        )
    if budget is None:
        return {}
    DataBudget(budget).check_writable()
    return {"budget": str(budget.resolve())}


def check_site_table(data: Path, schema: Schema) -> None:
    """The site's records against the public schema before it joins: the same check the
    server's first query makes, with its usual errors (column, row, value) on this site's
    own console; nothing is sent."""
    from dpforge.data.tables import read_csv, validate_table

    if not data.is_file():
        raise DpforgeError(f"{data}: no such file (this site's table, CSV)")
    local = replace(schema, label=None, label_prior="uniform")  # the label's classes: global
    validate_table(read_csv(data), local, out_of_bounds="error")


def tolerate_of(trust: str, tolerate: int | None) -> int:
    """t from ``--tolerate``: 1 by default under secagg; refused under local trust."""
    if trust not in ("local", "secagg"):
        raise DpforgeError(f"--trust must be 'local' or 'secagg', got {trust!r}")
    if trust == "local" and tolerate is not None:
        raise DpforgeError("--tolerate applies to --trust secagg only: drop it")
    return 1 if tolerate is None and trust == "secagg" else (tolerate or 0)


def split_address(address: str, option: str) -> tuple[str, int]:
    """``HOST:PORT`` (IPv6 in brackets) as (host, port)."""
    host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise DpforgeError(f"{option} must be HOST:PORT (e.g. 0.0.0.0:9092), got {address!r}")
    return host.strip("[]"), int(port)


def _table_schema(path: Path) -> Schema:
    if not path.is_file():
        raise DpforgeError(f"--schema {path}: no such file")
    schema = load_schema(path)
    if not isinstance(schema, Schema):
        raise DpforgeError("federated runs serve tables: give a table schema")
    return schema


def _check_outputs(out: Path, overwrite: bool) -> None:
    from dpforge.model_io import MODEL_FOLDER
    from dpforge.storage import check_output_file, check_output_folder

    check_output_folder(out, MODEL_FOLDER, overwrite=overwrite)
    check_output_file(out.with_name(out.name + ".federation.json"), overwrite=overwrite)
