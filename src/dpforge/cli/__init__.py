"""The ``dpforge`` command line: a thin layer over the Python API.

Every user error is a :class:`dpforge.errors.DpforgeError`; :func:`main` prints its message on
one line and exits with status 2, without a traceback and without a partial output file.
"""

from __future__ import annotations

import contextvars
import os
import sys
import warnings
from pathlib import Path
from typing import TextIO

import click
import typer
import typer.core
from rich.console import Console
from rich.markup import escape

from dpforge.cli.audit import audit
from dpforge.cli.budget import budget_app
from dpforge.cli.evaluate import evaluate
from dpforge.cli.federated import federated_app
from dpforge.cli.federated_images import simulate_images
from dpforge.cli.federated_images_deploy import client_images, server_images
from dpforge.cli.fit import fit
from dpforge.cli.io import (
    check_parts,
    check_sample_outputs,
    draft_data,
    guess_type,
    refuse_foreign_options,
    schema_type,
    types_in_draft,
    write_samples,
)
from dpforge.cli.privacy import privacy
from dpforge.cli.report import report
from dpforge.data.kind_files import IMAGE_FORMATS
from dpforge.errors import DpforgeError, redact_from_now
from dpforge.options import check_seed
from dpforge.storage import atomic_write, check_output_file, check_output_folder, recover_folder

# The commands in the order a user works: describe the data, fit, use the model, account for
# the budget; then the audits, the federated sites and the demo.
COMMANDS = (
    "schema", "fit", "sample", "evaluate", "report", "budget", "privacy",
    "audit", "federated", "demo",
)  # fmt: skip


class _UserOrder(typer.core.TyperGroup):
    """Lists the commands in ``COMMANDS``' order (Typer lists groups after commands)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        names = super().list_commands(ctx)
        return sorted(names, key=lambda n: COMMANDS.index(n) if n in COMMANDS else len(COMMANDS))


app = typer.Typer(
    name="dpforge",
    cls=_UserOrder,
    help="Differentially private synthetic data (tables, images, time series): measure "
    "statistics of the private records under (epsilon, delta)-DP, fit a generator to them, "
    "and publish the model or synthetic records.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
console = Console(stderr=True)


@app.callback()
def options(
    redact_errors: bool = typer.Option(
        False,
        "--redact-errors",
        help="error messages show <private> instead of row numbers, values and counts read "
        "from the private data (for logs shared with others; also DPFORGE_REDACT_ERRORS=1)",
    ),
) -> None:
    """Options for every command (given before the command's name)."""
    if redact_errors:
        redact_from_now()


TYPE_HELP = "table | image | timeseries (default: guessed from DATA)"
LAYOUT_HELP = "time series CSV layout: wide (one row per series) or long (id, time, values)"


def schema(
    files: list[Path] = typer.Argument(
        ...,
        metavar="DATA...",
        help="the private data: CSV, image folder, .npz or idx; several CSV files are related "
        "tables, each named by its file stem",
    ),
    out: Path = typer.Option(..., "-o", "--out", help="where to write the draft schema (JSON)"),
    target: str = typer.Option(None, "--target", help="the label column"),
    data_type: str = typer.Option(None, "--type", help=TYPE_HELP),
    labels: Path = typer.Option(None, "--labels", help="images: idx labels file"),
    layout: str = typer.Option("wide", "--layout", help=LAYOUT_HELP),
    id_column: str = typer.Option(None, "--id-column", help="time series: series id column"),
    values: bool = typer.Option(
        True,
        "--values/--no-values",
        help="copy bounds and categories from the file (NOT private: review them) or leave "
        "them null (estimated under DP during fit)",
    ),
    overwrite: bool = typer.Option(False, "--overwrite"),
) -> None:
    """Draft a schema for DATA: column types or shape, and optionally values to review."""
    check_output_file(out, overwrite=overwrite, inputs=tuple(files), what="schema file")
    if len(files) > 1:  # related tables (dpforge.cli.relational)
        from dpforge.cli.relational import draft_relational, refuse_table_options

        one_file = {"--target": target, "--type": data_type, "--labels": labels}
        refuse_table_options({**one_file, "--id-column": id_column, "--layout": layout != "wide"})
        console.print(draft_relational(files, out, values, overwrite))
        return
    data = files[0]
    kind = data_type or guess_type(data)
    refuse_foreign_options(kind, labels=labels, id_column=id_column, layout=layout)
    options = {"labels": labels, "label": target, "layout": layout, "id_column": id_column}
    drafted = draft_data(kind, data, values, **options)
    if not types_in_draft(kind):  # a shape and channel values: flagged whenever read
        values = bool(drafted.notes)
    atomic_write(out, lambda p: p.write_text(drafted.to_json() + "\n"), overwrite=overwrite)
    console.print(_draft_message(out, kind, values, bool(drafted.notes)))
    for note in drafted.notes[1:]:  # the first is the general review warning just printed
        console.print(f"check: {note}", markup=False)


def _draft_message(out: Path, kind: str, values: bool, flagged: bool) -> str:
    """What the person must check in the draft: its values and, for tables, its types."""
    if not flagged:
        return f"wrote {out}: check it; null values are estimated under DP"
    types = types_in_draft(kind)
    what = "values" if not types else "column types and values" if values else "column types"
    todo = "Check each type against public knowledge (a code book)" if types else ""
    if values:
        todo += "; replace" if todo else "Replace"
        todo += " each value with public knowledge or null (DP estimate)"
    return (
        f"[bold red]REVIEW NEEDED[/bold red]: the {what} in {out} were read from the private "
        f"data and are not private. {todo}, then delete the 'review' entry."
    )


def sample(
    model: Path = typer.Argument(..., help="a model folder written by 'dpforge fit'"),
    n: int = typer.Option(..., "-n", help="number of records (related tables: of parents)"),
    out: Path = typer.Option(
        ...,
        "-o",
        "--out",
        help="CSV file (tables, time series) or folder (images; related tables: one CSV file "
        "per table) to write",
    ),
    condition: list[str] = typer.Option(
        None,
        "--condition",
        help="COLUMN=value, COLUMN=a,b (any of them) or COLUMN=lo..hi (a range; lo.. or ..hi "
        "leave an end open), repeatable: the samples hold these values exactly, the other "
        "columns follow the model's conditional (tables; images and series: LABEL=class)",
    ),
    image_format: str = typer.Option(
        "both", "--image-format", help="images: png (one file each), npz, or both; plus grid.png"
    ),
    table_format: str = typer.Option(
        "csv", "--format", help="tables: csv, or parquet (a folder of part files)"
    ),
    partitions: int = typer.Option(
        1, "--partitions", help="tables: write a folder of this many part files, in parallel"
    ),
    workers: int = typer.Option(
        None, "--workers", help="processes writing parts (default: partitions, at most the cores)"
    ),
    seed: int = typer.Option(None, "--seed"),
    move: bool = typer.Option(
        None,
        "--move/--no-move",
        help="match the generated records to the model's stored release: series are moved to "
        "the released embedding, table rows drawn from a pool weighted to the measured "
        "marginals (the default when the folder stores it; --move refuses a folder without it)",
    ),  # fmt: skip
    aggregates: bool = typer.Option(
        False,
        "--aggregates",
        help="related tables: keep in the parent's CSV the aggregates of its children (the "
        "schema's 'aggregates') that the model drew and its children were drawn for",
    ),
    overwrite: bool = typer.Option(False, "--overwrite"),
) -> None:
    """Write N synthetic records from MODEL (no data needed: post-processing is free)."""
    from dpforge.conditions import conditions_from_texts, resolve_conditions
    from dpforge.data.parts import PartsRequest, write_parts
    from dpforge.model_io import MODEL_FOLDER
    from dpforge.synthesizer import load

    if n < 1:
        raise DpforgeError(f"-n {n}: give the number of records to write, at least 1")
    check_seed(seed, "--seed")
    if image_format not in IMAGE_FORMATS:
        raise DpforgeError(f"--image-format {image_format!r}: choose one of {IMAGE_FORMATS}")
    recover_folder(model, MODEL_FOLDER)  # a replacement a kill interrupted
    if _relational_model(model):
        from dpforge.cli.relational import refuse_table_options, sample_relational

        refuse_table_options({
            "--condition": condition, "--image-format": image_format != "both",
            "--format": table_format != "csv", "--partitions": partitions != 1,
            "--workers": workers is not None,
        })  # fmt: skip
        sample_relational(model, n, out, seed, move, overwrite, aggregates)
        return
    if aggregates:
        raise DpforgeError(
            f"--aggregates: {model} is not a related-tables model folder (the option keeps a "
            "parent's aggregates of its children); leave it out"
        )
    synth = load(model)
    synth.mover(move)  # refused before any work when the folder cannot move
    conditions = conditions_from_texts(synth.schema_, condition or [])
    resolve_conditions(synth.schema_, conditions)  # refused before any work
    if table_format != "csv" or partitions != 1 or workers is not None:
        parts = PartsRequest(model, n, partitions, table_format, seed, tuple(conditions.items()))
        check_parts(schema_type(synth.schema_), parts, out, overwrite, workers)
        write_parts(
            parts, out, workers=workers or min(partitions, os.cpu_count() or 1), overwrite=overwrite
        )
        console.print(f"wrote {n} records in {partitions} {table_format} part(s) to {out}")
        return
    check_sample_outputs(schema_type(synth.schema_), out, overwrite, (model,))
    written = write_samples(synth, n, conditions, seed, out, overwrite, image_format, move)
    console.print(f"wrote {n} records to {', '.join(map(str, written))}")


def _relational_model(model: Path) -> bool:
    """Whether ``model`` is a related tables' model folder (after finishing a replacement a
    kill interrupted)."""
    from dpforge.relational_io import MANIFEST, RELATIONAL_FOLDER

    recover_folder(model, RELATIONAL_FOLDER)
    return (model / MANIFEST).is_file()


def demo(
    out: Path = typer.Option(Path("dpforge-demo"), "--out", help="folder for model and CSV"),
    epsilon: float = typer.Option(3.0, "--epsilon"),
    delta: float = typer.Option(1e-5, "--delta"),
    seed: int = typer.Option(None, "--seed"),
    overwrite: bool = typer.Option(False, "--overwrite"),
) -> None:
    """Fit marginal anchoring to a public table and score the synthetic records.

    The default fit (no discriminator) on the breast-cancer records, scored by a classifier AUC.
    """
    from dpforge.cli.demo import DEMO_FOLDER, run_demo

    check_output_folder(out, DEMO_FOLDER, overwrite=overwrite)
    run_demo(out, epsilon, delta, seed, console)


app.command("schema")(schema)
app.command("fit")(fit)
app.command("sample")(sample)
app.command("evaluate")(evaluate)
app.command("report")(report)
app.add_typer(budget_app, name="budget")
app.command("privacy")(privacy)
app.command("audit")(audit)
app.add_typer(federated_app, name="federated")
federated_app.command("simulate-images")(simulate_images)
federated_app.command("server-images")(server_images)
federated_app.command("client-images")(client_images)
app.command("demo")(demo)


def _print_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: TextIO | None = None,
    line: str | None = None,
) -> None:
    """A warning as one line on stderr, without the Python file and line it came from."""
    console.print(f"[yellow]note:[/yellow] {escape(str(message))}", highlight=False, soft_wrap=True)


def main() -> None:
    """Entry point: user errors become one line on stderr and exit status 2; warnings one
    line each (``note: ...``)."""
    with warnings.catch_warnings():
        warnings.simplefilter("default")
        warnings.showwarning = _print_warning
        _run()


def _run() -> None:
    try:
        # A copied context: --redact-errors lasts as long as this command.
        contextvars.copy_context().run(app)  # click handles usage errors (status 2)
    except DpforgeError as exc:
        console.print(
            f"[bold red]error:[/bold red] {escape(str(exc))}", highlight=False, soft_wrap=True
        )
        sys.exit(2)
    except KeyboardInterrupt:
        console.print("interrupted; no output was written (--checkpoint-dir makes runs resumable)")
        sys.exit(130)
