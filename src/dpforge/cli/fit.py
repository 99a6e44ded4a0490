"""``dpforge fit``: the private fit of a model folder from DATA.

The command line holds what a user sets on almost every run (at most 15 parameters, DATA
included); every other setting is a key of the options file (:mod:`dpforge.cli.options_file`,
``docs/options-file.md``). Refinement by a private discriminator runs only when ``--refine``
names it, so no setting has to be refused as "not applicable": settings of a refinement without
``--refine`` are a contradiction the checks name.
"""

from __future__ import annotations

import os
import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.console import Console

from dpforge.cli.budget import budget_for_fit, interrupted_line, print_budget_line, run_ids
from dpforge.cli.engine import DEVICE_DEFAULT, DEVICE_HELP, SPARK, check_engine, spark_records
from dpforge.cli.io import (
    IMAGE,
    check_sample_outputs,
    default_samples_path,
    read_data,
    refuse_foreign_options,
    schema_type,
    takes_public_data,
    write_samples,
)
from dpforge.cli.options_file import REFINERS, FitOptions, OutputOptions, read_options
from dpforge.errors import DpforgeError, SchemaError
from dpforge.options import REFINE_SHARE, check_device
from dpforge.schema.array import ArraySchema, load_schema
from dpforge.schema.table import Schema
from dpforge.storage import check_output_folder

if TYPE_CHECKING:  # torch and the data readers load when a command runs, not for --help
    from dpforge.data.arrays import ArrayData
    from dpforge.synthesizer import Synthesizer

__all__ = ["fit", "print_privacy"]

console = Console(stderr=True)
LAYOUTS = ("wide", "long")
CLIP_HELP = (
    "values outside the schema's declared bounds are clipped to them (the run says so) "
    "instead of stopping the run with an error that names the column, row and value"
)
OPTIONS_HELP = (
    "a TOML (or .json) file with every other setting, by section: \\[data] \\[privacy] "
    "\\[anchor] \\[generator] \\[refine] \\[engine] \\[output] (docs/options-file.md)"
)


def fit(
    files: list[Path] = typer.Argument(
        ...,
        metavar="DATA...",
        help="the private data: CSV, image folder, .npz or idx; related tables: one CSV file "
        "per table of the relational --schema, each named by its file stem (patients.csv)",
    ),
    schema_path: Path = typer.Option(..., "--schema", help="the public schema (JSON)"),
    out: Path = typer.Option(..., "--out", help="the model folder to write"),
    epsilon: float = typer.Option(3.0, "--epsilon", help="the total budget, metadata included"),
    delta: float = typer.Option(1e-5, "--delta", help="well below 1 / the number of records"),
    refine: str = typer.Option(
        None,
        "--refine",
        help="also refine the generator with a private discriminator: dpcgan, dpwgan or gswgan "
        f"(its settings: \\[refine] in --options); the anchoring keeps {REFINE_SHARE} of the "
        "budget unless \\[anchor] share says otherwise",
    ),
    options_path: Path = typer.Option(None, "--options", help=OPTIONS_HELP),
    privacy_unit: str = typer.Option(
        None,
        "--privacy-unit",
        help="tables: the column that identifies a person (type drop or surrogate in the "
        "schema): the guarantee is then per person; needs --max-rows-per-unit",
    ),
    max_rows_per_unit: int = typer.Option(
        None, "--max-rows-per-unit", help="k: the most rows kept per person (chosen at random)"
    ),
    seed: int = typer.Option(None, "--seed", help="a reproducible run (leave out for a release)"),
    device: str = typer.Option(DEVICE_DEFAULT, "--device", help=DEVICE_HELP),
    checkpoint_dir: Path = typer.Option(
        None,
        "--checkpoint-dir",
        help="a private folder for checkpoints: the same command resumes an interrupted run",
    ),
    budget_file: Path = typer.Option(
        None,
        "--budget",
        help="the data set's budget file (default: DATA.dpforge-budget.json next to DATA): "
        "this run's events are added before training; beyond its declared total it is refused",
    ),
    clip_out_of_bounds: bool = typer.Option(False, "--clip-out-of-bounds", help=CLIP_HELP),
    overwrite: bool = typer.Option(False, "--overwrite", help="replace an existing OUT"),
) -> None:
    """Fit a private model of DATA and write the model folder OUT.

    It measures statistics under DP and fits a generator to them; --refine adds a discriminator.
    With a relational --schema, DATA is one CSV file per table (docs/related-tables.md).
    """
    if is_relational(schema_path):
        from dpforge.cli.relational import FitRequest, fit_relational

        if checkpoint_dir is not None:
            _keep_apart(out, checkpoint_dir)
        request = FitRequest(
            tuple(files), schema_path, out, epsilon, delta, options_path, seed, budget_file,
            clip_out_of_bounds, overwrite, checkpoint_dir,
        )  # fmt: skip
        one_table = {
            "--refine": refine, "--privacy-unit": privacy_unit,
            "--max-rows-per-unit": max_rows_per_unit, "--device": device != DEVICE_DEFAULT,
        }  # fmt: skip
        fit_relational(request, one_table)
        return
    data = _one_file(files)
    from dpforge.cli.fit_options import anchor_option, check_refine_sections, method_config
    from dpforge.distributed import join_processes, rank_device, refuse_checkpoints
    from dpforge.model_io import MODEL_FOLDER
    from dpforge.synthesizer import Synthesizer

    if refine is not None and refine not in REFINERS:
        raise DpforgeError(f"--refine {refine!r}: choose one of {', '.join(REFINERS)}")
    public = load_schema(schema_path)
    kind = schema_type(public)
    options = read_options(options_path, kind, refine)
    check_refine_sections(options, refine)
    check_output_extras(options.output, options.data.layout, checkpoint_dir)
    check_device(device, "--device")
    device = rank_device(device)  # under torchrun with cuda: this rank's own GPU
    replicas = join_processes(device)  # under torchrun: this rank of the group
    seed = replicas.agree_seed(seed)  # one seed on every rank (rank 0's, or from the OS)
    if checkpoint_dir is not None:
        refuse_checkpoints(replicas)
    paths = (data, schema_path, options_path, options.data.labels, options.data.public_data)
    inputs = tuple(p for p in paths if p is not None)
    check_output_folder(out, MODEL_FOLDER, overwrite=overwrite, inputs=inputs)
    if checkpoint_dir is not None:
        _keep_apart(out, checkpoint_dir)
    _refuse_foreign(kind, options)
    engine = options.engine
    check_engine(engine.name, engine.spark_master, engine.spark_remote, kind)
    samples_path = _samples_path(options.output, kind, out, overwrite, (*inputs, out))
    if options.data.target is not None:
        public = _with_target(public, options.data.target)
    synth = Synthesizer(
        public,
        method=refine,
        epsilon=epsilon,
        delta=delta,
        noise_multiplier=options.refine_run.noise_multiplier,
        epochs=options.refine_run.epochs,
        metadata_share=options.privacy.metadata_share,
        method_options=method_config(options, refine),
        out_of_bounds="clip" if clip_out_of_bounds else "error",
        seed=seed,
        device=device,
        progress=options.output.progress and replicas.is_main,
        checkpoint_dir=checkpoint_dir,
        checkpoint_every=options.output.checkpoint_every,
        anchor=anchor_option(options, public, refine, options.data.public_data is not None),
        public_data=read_public(kind, options),
        privacy_unit=privacy_unit,
        max_rows_per_unit=max_rows_per_unit,
    )
    synth.check_options()  # before the data are read
    # Rank 0 alone charges the budget file and writes the outputs.
    unrecorded = not options.privacy.record_budget
    data_budget = budget_for_fit(data, budget_file, unrecorded) if replicas.is_main else None
    records = _records(kind, data, public, options)
    before = run_ids(data_budget)
    try:
        synth.fit(records, budget=data_budget)
    except KeyboardInterrupt:  # Ctrl-C: say what stays charged and how to resume (issue 46.9)
        resumable = checkpoint_dir is not None
        line = interrupted_line(data_budget, before, resumable, sys.argv)
        console.print(line, soft_wrap=True, markup=False, highlight=False)
        sys.exit(130)
    if not replicas.is_main:
        return
    synth.save(out, overwrite=overwrite)
    console.print(f"wrote model folder {out}")
    if samples_path is not None:
        n = options.output.samples
        written = write_samples(synth, n, {}, None, samples_path, overwrite)
        console.print(f"wrote {n} synthetic records to {', '.join(map(str, written))}")
    print_privacy(synth)
    print_budget_line(data_budget)


def is_relational(schema_path: Path) -> bool:
    """Whether the schema file declares related tables (``"type": "relational"``)."""
    from dpforge.schema.validation import read_json_text

    document = read_json_text(schema_path, "schema file", SchemaError)
    return isinstance(document, dict) and document.get("type") == "relational"


def _one_file(files: list[Path]) -> Path:
    """DATA of a single-table (or image, series) schema: one path."""
    if len(files) != 1:
        raise DpforgeError(
            f"{len(files)} data files given, but the --schema describes one data set: give one "
            "file, or a relational schema for related tables (dpforge schema a.csv b.csv "
            "drafts one)"
        )
    return files[0]


def _refuse_foreign(kind: str, options: FitOptions) -> None:
    """[data] keys of another data kind are refused, never silently ignored."""
    data = options.data
    refuse_foreign_options(
        kind, labels=data.labels, id_column=data.id_column, layout=data.layout, in_file=True
    )


def _records(kind: str, data: Path, public: Schema | ArraySchema, options: FitOptions) -> object:
    """The private records: a Spark engine over DATA, or DATA read into this process."""
    engine = options.engine
    if engine.name == SPARK:
        return spark_records(data, engine.spark_master, engine.spark_remote)
    given = options.data
    return read_data(kind, data, public, labels=given.labels, layout=given.layout,
                     id_column=given.id_column)  # fmt: skip


def check_output_extras(output: OutputOptions, layout: str, checkpoint_dir: Path | None) -> None:
    """The settings that need neither the data nor the model, checked before any work: a
    refused run must not have trained a model first, nor leave anything on disk."""
    if checkpoint_dir is None and output.checkpoint_every != OutputOptions.checkpoint_every:
        raise DpforgeError(
            f"[output] checkpoint_every = {output.checkpoint_every} needs --checkpoint-dir: "
            "add --checkpoint-dir PATH to make the run resumable, or remove checkpoint_every"
        )
    if output.checkpoint_every < 1:
        raise DpforgeError(
            f"[output] checkpoint_every = {output.checkpoint_every}: give at least 1 step"
        )
    if output.samples < 0:
        raise DpforgeError(
            f"[output] samples = {output.samples}: give the number of synthetic records to "
            "write (at least 1), or leave it out to write none"
        )
    if output.samples_out is not None and not output.samples:
        raise DpforgeError(
            f"[output] samples_out = {str(output.samples_out)!r} without samples: say how many "
            "records to write, e.g. samples = 1000"
        )
    if layout not in LAYOUTS:
        raise DpforgeError(f"[data] layout = {layout!r}: choose one of {', '.join(LAYOUTS)}")


def _samples_path(
    output: OutputOptions, kind: str, out: Path, overwrite: bool, inputs: tuple[Path, ...]
) -> Path | None:
    """Where the samples of ``[output] samples`` go, checked before the fit (None: none)."""
    if not output.samples:
        return None
    path = output.samples_out or default_samples_path(kind, out)
    check_sample_outputs(kind, path, overwrite, inputs)
    return path


def read_public(kind: str, options: FitOptions) -> ArrayData | None:
    """The declared public images of ``[data] public_data`` (never read through the engine)."""
    path, labels = options.data.public_data, options.data.public_labels
    if path is None:
        if labels is not None:
            raise DpforgeError("[data] public_labels needs [data] public_data")
        return None
    if not takes_public_data(kind):
        raise DpforgeError("[data] public_data is for images; remove it for tables and series")
    return read_data(IMAGE, path, labels=labels)


def _keep_apart(out: Path, checkpoint_dir: Path) -> None:
    """The checkpoint holds the private discriminator: never in or around the model folder."""
    a, b = (Path(os.path.abspath(p.expanduser())) for p in (out, checkpoint_dir))
    if a == b or a in b.parents or b in a.parents:
        raise DpforgeError(
            f"--checkpoint-dir {checkpoint_dir} and --out {out} overlap: the checkpoint holds "
            "the private discriminator and the model folder is for publishing; keep them apart"
        )


def _with_target(public: Schema | ArraySchema, target: str) -> Schema | ArraySchema:
    if isinstance(public, Schema):
        public.column(target)
    return replace(public, label=target)


def print_privacy(synth: Synthesizer) -> None:
    """What the run spent and what the guarantee protects (public: from the ledger)."""
    report = synth.privacy_spent()
    console.print(f"[bold]privacy spent[/bold]: {report.summary()}, metadata included")
    console.print(f"[bold]guarantee[/bold]: {synth.unit.describe()}")
    for entry in synth.ledger_.entries:
        console.print(f"  ledger: {entry.name}")
    bayesian = getattr(synth, "bayesian_", None)
    if bayesian is not None:
        console.print(
            f"[bold]Bayesian bound[/bold] (data-dependent, NOT saved in the model folder, "
            f"cost {bayesian.extra_seconds:.1f} s extra): {bayesian.statement()}"
        )
