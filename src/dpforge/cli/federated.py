"""``dpforge federated simulate``: a whole federation of table sites on this machine.

The data are split into ``--sites`` parts (at random, or by a column's values), each part a
site that keeps its records and answers the server's queries with its own noise; the server
fits the generator on the sums (:mod:`dpforge.engines.federated`). Flower's messages and its
SecAgg+ workflow run in this process (:mod:`dpforge.engines.federated_sim`). Writes the model
folder and, beside it, ``OUT.federation.json``: the trust model, each site's own ledger and,
under secagg, the epsilon if more than t sites drop out or collude. The run is charged to the
data set's budget file before its first release, through the same path as ``dpforge fit``.
The guarantee is per record (one row): a federated run has no privacy unit.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import typer
from rich.console import Console

from dpforge.cli.federated_deploy import (
    DATA_BUDGET,
    NO_BUDGET_FILE,
    TOLERATE_HELP,
    TRUST_HELP,
    client,
    server,
    tolerate_of,
)
from dpforge.errors import DpforgeError
from dpforge.schema.array import load_schema
from dpforge.schema.table import Schema
from dpforge.storage import atomic_write, check_output_file

federated_app = typer.Typer(
    help="Federated tables on Flower: sites keep their records; the server sees noisy sums.",
    no_args_is_help=True,
)
console = Console(stderr=True)
SPLIT_HELP = "random, or by:COLUMN (each value's rows to one site)"


federated_app.command("server")(server)
federated_app.command("client")(client)


@federated_app.command("simulate")
def simulate(
    data: Path = typer.Argument(..., help="the table (CSV) to split into sites"),
    schema_path: Path = typer.Option(..., "--schema", help="the public table schema (JSON)"),
    out: Path = typer.Option(..., "--out", help="the model folder to write"),
    sites: int = typer.Option(10, "--sites", help="number of sites"),
    epsilon: float = typer.Option(3.0, "--epsilon", help="total budget, metadata included"),
    delta: float = typer.Option(1e-5, "--delta"),
    metadata_share: float = typer.Option(0.1, "--metadata-share"),
    split: str = typer.Option("random", "--split", help=SPLIT_HELP),
    trust: str = typer.Option("secagg", "--trust", help=TRUST_HELP),
    tolerate: int | None = typer.Option(None, "--tolerate", help=TOLERATE_HELP),
    max_site_records: int = typer.Option(
        2**20, "--max-site-records", help="secagg: public bound on any one site's records"
    ),
    clip_out_of_bounds: bool = typer.Option(
        False,
        "--clip-out-of-bounds",
        help="every site clips values outside the schema's bounds to them (as fit does)",
    ),
    budget_file: Path | None = DATA_BUDGET,
    no_budget_file: bool = NO_BUDGET_FILE,
    seed: int | None = typer.Option(None, "--seed", help="seeds the split, the sites and the fit"),
    overwrite: bool = typer.Option(False, "--overwrite"),
) -> None:
    """Split DATA into sites and fit across them with Flower (in this process).

    The guarantee is per record (one row of DATA): federated runs have no privacy unit.
    """
    from dpforge.cli.budget import budget_for_fit, print_budget_line
    from dpforge.data.tables import read_csv
    from dpforge.engines.federated_app import UNIT, federation_report, fit_federation
    from dpforge.engines.federated_sim import simulated_engine, split_table
    from dpforge.engines.federated_trust import Trust

    schema = load_schema(schema_path)
    if not isinstance(schema, Schema):
        raise DpforgeError("simulate serves tables; for images use `simulate-images`")
    t = tolerate_of(trust, tolerate)
    report_path = out.with_name(out.name + ".federation.json")
    check_output_file(report_path, overwrite=overwrite)
    out_of_bounds = "clip" if clip_out_of_bounds else "error"
    budget = budget_for_fit(data, budget_file, no_budget_file)
    rng = np.random.default_rng(seed)
    parts = split_table(read_csv(data), sites, _split_column(split), rng)
    federation = Trust(trust, sites, t)
    engine, grid = simulated_engine(parts, schema, federation, seed, max_site_records,
                                    out_of_bounds)  # fmt: skip
    config = {"epsilon": epsilon, "delta": delta, "metadata-share": metadata_share, "seed": seed,
              "out-of-bounds": out_of_bounds}  # fmt: skip
    synth = fit_federation(engine, schema, federation, config, budget)
    synth.save(out, overwrite=overwrite)
    report = federation_report(synth, federation, grid.site_ledgers())
    atomic_write(
        report_path, lambda p: p.write_text(json.dumps(report, indent=2)), overwrite=overwrite
    )
    console.print(f"wrote model folder {out} and {report_path}")
    console.print(f"[bold]privacy spent[/bold]: {synth.privacy_spent().summary()}")
    console.print(f"trust: {federation.statement()}")
    console.print(f"guarantee per {UNIT}")
    print_budget_line(budget)


def _split_column(split: str) -> str | None:
    if split == "random":
        return None
    if split.startswith("by:") and len(split) > 3:
        return split[3:]
    raise DpforgeError(f"--split must be 'random' or 'by:COLUMN', got {split!r}")
