"""``dpforge budget show|set DATA``: the privacy budget of a data set across runs.

Also the fit command's choice of budget file (:func:`budget_for_fit`). The budget file and its
rules are described in :mod:`dpforge.privacy.budget`.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.console import Console
from rich.table import Table

from dpforge.errors import DpforgeError

if TYPE_CHECKING:  # imported where used (dp-accounting): --help stays light
    from dpforge.privacy.budget import BudgetStatus, DataBudget

budget_app = typer.Typer(
    help="The privacy budget of a data set across runs: a private file next to the data that "
    "records every run's DP events and refuses runs beyond the declared total.",
    no_args_is_help=True,
)
console = Console(stderr=True)

DATA_HELP = "the private data file or folder the budget is about"
FILE_HELP = "the budget file (default: DATA.dpforge-budget.json next to the data)"


def open_budget(data: Path, budget_file: Path | None) -> DataBudget:
    """The budget of ``data``: ``budget_file`` when given, else the one found next to it."""
    from dpforge.privacy.budget import DataBudget

    if budget_file is not None:
        if not data.exists():
            raise DpforgeError(f"{data} does not exist: give the data file the budget is about")
        return DataBudget(budget_file)
    return DataBudget.for_data(data)


def budget_for_fit(data: Path, budget_file: Path | None, no_budget_file: bool) -> DataBudget | None:
    """The fit command's budget: the data's file by default, ``--budget``, or none.

    An exhausted budget is refused here, before the data are read; whether this run fits in
    what is left is checked once its plan is known, before training.
    """
    if no_budget_file:
        if budget_file is not None:
            raise DpforgeError(
                "give --budget PATH or no budget file ([privacy] record_budget = false; "
                "--no-budget-file for federated runs), not both"
            )
        console.print(
            "[yellow]note[/yellow]: as asked, this run is not recorded in a budget file, so "
            "runs on these data are not composed across runs"
        )
        return None
    budget = open_budget(data, budget_file)
    budget.check_writable()
    status = budget.status()
    if status.exhausted:
        raise DpforgeError(
            f"refused before training: the data set's budget in {budget.path} is spent "
            f"({status.summary()})"
        )
    return budget


def run_ids(budget: DataBudget | None) -> frozenset[str]:
    """The ids of the runs the budget file holds now (before a fit, to find the fit's own)."""
    return frozenset() if budget is None else frozenset(r.run_id for r in budget.status().runs)


def interrupted_line(
    budget: DataBudget | None, before: frozenset[str], resumable: bool, argv: list[str]
) -> str:
    """The one line printed when Ctrl-C stops a fit (issue 46.9): what the budget file now
    holds for this run, and the exact command that resumes it (or why none can)."""
    from dpforge.privacy.accounting import format_epsilon

    command = shlex.join(["dpforge", *argv[1:]])
    if budget is None:
        charged = "no budget file: nothing was recorded, count the run's whole target as spent"
    else:
        new = [r for r in budget.status().runs if r.run_id not in before]
        if not new:
            charged = f"nothing new was charged to {budget.path} (nothing released, or resumed)"
        elif new[0].reserved:
            charged = (
                f"its whole target ε = {format_epsilon(new[0].epsilon)} at δ = "
                f"{new[0].delta:g} stays charged to {budget.path}"
            )
        else:
            spent = new[0].ledger.report(new[0].delta).epsilon
            charged = (
                f"ε = {format_epsilon(spent)} at δ = {new[0].delta:g} (what ran and what was "
                f"planned) stays charged to {budget.path}"
            )
    if resumable:
        return f"interrupted: {charged}; resume with: {command}"
    return (
        f"interrupted: {charged}; no --checkpoint-dir, so it cannot resume: rerunning "
        f"({command}) starts anew and is charged again"
    )


def print_budget_line(budget: DataBudget | None) -> None:
    """After a fit: the data set's composed spend, all runs included."""
    if budget is None:
        return
    console.print(f"[bold]data set budget[/bold] ({budget.path}): {budget.status().summary()}")


@budget_app.command("show")
def show(
    data: Path = typer.Argument(..., help=DATA_HELP),
    budget_file: Path = typer.Option(None, "--budget", help=FILE_HELP),
) -> None:
    """Show the declared total, every run and the ε composed over all of them."""
    budget = open_budget(data, budget_file)
    status = budget.status()
    out = Console()
    if not budget.path.exists():
        out.print(f"no budget file yet for {data} (it would be {budget.path})")
        return
    out.print(f"budget file: {budget.path}")
    out.print(_runs_table(status))
    out.print(status.summary())
    if status.exhausted:
        out.print("[bold red]the budget is spent: every further run on these data is refused")


def _runs_table(status: BudgetStatus) -> Table:
    from dpforge.privacy.accounting import format_epsilon

    table = Table("#", "started (UTC)", "run", "target ε", "δ", "events ε")
    for i, run in enumerate(status.runs, 1):
        report = run.ledger.report(run.delta)
        table.add_row(
            str(i), run.started, run.description, format_epsilon(run.epsilon),
            f"{run.delta:g}", format_epsilon(report.epsilon),
        )  # fmt: skip
    return table


@budget_app.command("set")
def set_total(
    data: Path = typer.Argument(..., help=DATA_HELP),
    epsilon: float = typer.Option(..., "--epsilon", help="total ε of all runs on DATA together"),
    delta: float = typer.Option(..., "--delta", help="total δ of all runs together"),
    budget_file: Path = typer.Option(None, "--budget", help=FILE_HELP),
) -> None:
    """Declare the total (ε, δ) that all runs on DATA together may spend."""
    budget = open_budget(data, budget_file)
    status = budget.set_total(epsilon, delta)
    Console().print(f"wrote {budget.path}: {status.summary()}")
    if status.exhausted:
        console.print("[yellow]note[/yellow]: the runs so far already spent this total")
