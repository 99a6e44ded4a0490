"""The ``dpforge`` command line: a thin layer over the Python API.

Every user error is a :class:`dpforge.errors.DpforgeError`; :func:`main` prints its message on
one line and exits with status 2, without a traceback and without a partial output file.
"""

from __future__ import annotations

import contextvars
import os
import sys
import warnings
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.console import Console

from dpforge.applicable import refuse_anchor_flags
from dpforge.cli.audit import audit
from dpforge.cli.budget import (
    budget_app,
    budget_for_fit,
    interrupted_line,
    print_budget_line,
    run_ids,
)
from dpforge.cli.engine import (
    DEVICE_DEFAULT,
    DEVICE_HELP,
    ENGINE_HELP,
    MEMORY,
    SPARK,
    check_engine,
    spark_records,
)
from dpforge.cli.evaluate import evaluate
from dpforge.cli.federated import federated_app
from dpforge.cli.federated_images import simulate_images
from dpforge.cli.federated_images_deploy import client_images, server_images
from dpforge.cli.io import (
    IMAGE_FORMATS,
    TABLE,
    check_parts,
    check_sample_outputs,
    checked_type,
    default_samples_path,
    draft,
    guess_type,
    read_data,
    refuse_foreign_options,
    schema_type,
    write_samples,
)
from dpforge.cli.privacy import privacy
from dpforge.cli.report import report
from dpforge.errors import DpforgeError, redact_from_now
from dpforge.options import check_device, check_seed
from dpforge.schema.array import IMAGE, ArraySchema, load_schema
from dpforge.schema.table import Schema
from dpforge.storage import (
    atomic_write,
    check_output_file,
    check_output_folder,
    recover_folder,
)

if TYPE_CHECKING:  # torch and the data readers load when a command runs, not for --help
    from dpforge.data.arrays import ArrayData
    from dpforge.synthesizer import Synthesizer

app = typer.Typer(
    name="dpforge",
    help="Differentially private synthetic data (tables, images, time series): train a GAN "
    "under (epsilon, delta)-DP and publish a generator or synthetic records.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.command("privacy")(privacy)
app.command("evaluate")(evaluate)
app.command("report")(report)
app.add_typer(budget_app, name="budget")
app.add_typer(federated_app, name="federated")
federated_app.command("simulate-images")(simulate_images)
federated_app.command("server-images")(server_images)
federated_app.command("client-images")(client_images)
app.command("audit")(audit)
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


def print_privacy(synth: Synthesizer) -> None:
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


CHECKPOINT_EVERY = 500
LAYOUTS = ("wide", "long")
TYPE_HELP = "table | image | timeseries (default: from the schema, or guessed from DATA)"
LAYOUT_HELP = "time series CSV layout: wide (one row per series) or long (id, time, values)"


@app.command()
def schema(
    data: Path = typer.Argument(..., help="the private data: CSV, image folder, .npz or idx"),
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
    from dpforge.data.tables import draft_schema, read_csv

    check_output_file(out, overwrite=overwrite, inputs=(data,), what="schema file")
    kind = data_type or guess_type(data)
    refuse_foreign_options(kind, labels=labels, id_column=id_column, layout=layout)
    if kind == TABLE:
        drafted = draft_schema(read_csv(data), label=target, with_values=values)
    else:
        records = read_data(
            kind, data, labels=labels, label=target, layout=layout, id_column=id_column
        )
        drafted = draft(kind, records, target)
        values = bool(drafted.notes)
    atomic_write(out, lambda p: p.write_text(drafted.to_json() + "\n"), overwrite=overwrite)
    console.print(_draft_message(out, kind, values, bool(drafted.notes)))


def _draft_message(out: Path, kind: str, values: bool, flagged: bool) -> str:
    """What the person must check in the draft: its values and, for tables, its types."""
    if not flagged:
        return f"wrote {out}: check it; null values are estimated under DP"
    what = "values" if kind != TABLE else "column types and values" if values else "column types"
    todo = "Check each type against public knowledge (a code book)" if kind == TABLE else ""
    if values:
        todo += "; replace" if todo else "Replace"
        todo += " each value with public knowledge or null (DP estimate)"
    return (
        f"[bold red]REVIEW NEEDED[/bold red]: the {what} in {out} were read from the private "
        f"data and are not private. {todo}, then delete the 'review' entry."
    )


@app.command()
def fit(
    data: Path = typer.Argument(..., help="the private data: CSV, image folder, .npz or idx"),
    schema_path: Path = typer.Option(..., "--schema", help="the public schema (JSON)"),
    out: Path = typer.Option(..., "--out", help="the model folder to write"),
    target: str = typer.Option(None, "--target", help="the label column (overrides the schema)"),
    data_type: str = typer.Option(None, "--type", help=TYPE_HELP),
    labels: Path = typer.Option(None, "--labels", help="images: idx labels file"),
    layout: str = typer.Option("wide", "--layout", help=LAYOUT_HELP),
    id_column: str = typer.Option(None, "--id-column", help="time series: series id column"),
    generator_net: str = typer.Option(
        None,
        "--generator",
        help="mlp (tables), conv | upconv | resnet (images), lstm (time series)",
    ),
    discriminator_net: str = typer.Option(
        None, "--discriminator", help="mlp (tables, time series), conv (images, time series)"
    ),
    discriminator_norm: str = typer.Option(
        None, "--discriminator-norm", help="none | group (GroupNorm; never BatchNorm)"
    ),
    epsilon: float = typer.Option(3.0, "--epsilon", help="total budget, metadata included"),
    delta: float = typer.Option(1e-5, "--delta"),
    method: str = typer.Option(
        None, "--method", help="dpcgan (default) | dpwgan | gswgan: needs --anchor-share < 1"
    ),
    noise_multiplier: float = typer.Option(None, "--noise-multiplier"),
    epochs: float = typer.Option(None, "--epochs"),
    batch_size: int = typer.Option(None, "--batch-size", help="expected batch size B (q = B/N)"),
    clip_norm: float = typer.Option(None, "--clip-norm", help="per-example clipping bound C"),
    d_steps: int = typer.Option(None, "--d-steps", help="discriminator steps per generator step"),
    adaptive_d_steps: bool = typer.Option(
        None, "--adaptive-d-steps/--fixed-d-steps", help="dpcgan: grow n_D (Bie et al.)"
    ),
    max_d_steps: int = typer.Option(None, "--max-d-steps", help="cap of adaptive n_D"),
    microbatches: int = typer.Option(None, "--microbatches", help="dpcgan: clip microbatch means"),
    optimizer: str = typer.Option(None, "--optimizer", help="dpwgan: critic optimizer sgd|adam"),
    clip_decay: float = typer.Option(None, "--clip-decay", help="dpwgan: C multiplier"),
    clip_decay_every: int = typer.Option(None, "--clip-decay-every", help="dpwgan: steps"),
    gp_weight: float = typer.Option(None, "--gp-weight", help="dpwgan/gswgan: gradient penalty"),
    bayesian: bool = typer.Option(
        None, "--bayesian/--no-bayesian", help="dpwgan: also print a Bayesian-DP bound"
    ),
    num_discriminators: int = typer.Option(
        None, "--num-discriminators", help="gswgan: K disjoint subsets (default N // 64)"
    ),
    warm_start_steps: int = typer.Option(
        None, "--warm-start-steps", help="gswgan: non-private critic steps before training"
    ),
    public_warm_start_steps: int = typer.Option(
        None,
        "--public-warm-start-steps",
        help="dpcgan with --public-data: non-private discriminator steps on the public set "
        "before DP-SGD refinement (free)",
    ),
    critic_training: str = typer.Option(
        None,
        "--critic-training",
        help="gswgan: frozen (critics fixed after the warm start) | all (every critic, every step)",
    ),
    metadata_share: float = typer.Option(0.1, "--metadata-share"),
    anchor_share: float = typer.Option(
        None,
        "--anchor-share",
        help="budget share (after metadata) of what the generator matches (tables: measured "
        "marginals; images: class means and covariances in a principal subspace; series: mean "
        "random-feature embeddings); 1 (default) = that alone, 0 = discriminator only, "
        "between = both",
    ),
    anchor_statistic: str = typer.Option(
        None,
        "--anchor-statistic",
        help="images and series: moments (default for images) | embedding (default for series)"
        " | perceptual (images with --public-data: its default)",
    ),
    anchor_bins: int = typer.Option(
        None, "--anchor-bins", help="tables, anchored: public cells per numeric column (64)"
    ),
    public_data: Path = typer.Option(
        None,
        "--public-data",
        help="images: a PUBLIC image set of the same shape (folder, .npz or idx; labelled or "
        "not) that trains the feature extractor of perceptual anchoring; costs no budget",
    ),
    public_labels: Path = typer.Option(
        None, "--public-labels", help="idx labels file of --public-data"
    ),
    clip_out_of_bounds: bool = typer.Option(False, "--clip-out-of-bounds"),
    seed: int = typer.Option(None, "--seed", help="reproducible run (omit for a release)"),
    device: str = typer.Option(DEVICE_DEFAULT, "--device", help=DEVICE_HELP),
    checkpoint_dir: Path = typer.Option(None, "--checkpoint-dir", help="private; resumable"),
    checkpoint_every: int = typer.Option(
        CHECKPOINT_EVERY, "--checkpoint-every", help="private steps between checkpoints"
    ),
    samples: int = typer.Option(0, "-n", "--samples", help="also write this many records"),
    samples_out: Path = typer.Option(None, "--samples-out"),
    overwrite: bool = typer.Option(False, "--overwrite"),
    quiet: bool = typer.Option(False, "--quiet", help="no progress bar"),
    budget_file: Path = typer.Option(
        None,
        "--budget",
        help="the data set's budget file (default: DATA.dpforge-budget.json next to DATA): "
        "this run's events are added before training; beyond its declared total it is refused",
    ),
    no_budget_file: bool = typer.Option(
        False, "--no-budget-file", help="do not record this run in a budget file"
    ),
    engine: str = typer.Option(MEMORY, "--engine", help=ENGINE_HELP),
    spark_master: str = typer.Option(None, "--spark-master", help="Spark master URL"),
    spark_remote: str = typer.Option(None, "--spark-remote", help="Spark Connect URL (sc://)"),
    privacy_unit: str = typer.Option(
        None,
        "--privacy-unit",
        help="tables: the column that identifies a person (type drop or surrogate in the "
        "schema): the guarantee is then per person; needs --max-rows-per-unit",
    ),
    max_rows_per_unit: int = typer.Option(
        None, "--max-rows-per-unit", help="k: the most rows kept per person (chosen at random)"
    ),
) -> None:
    """Train a private synthesizer on DATA and write the model folder OUT."""
    from dpforge.cli.fit_options import anchor_option, method_config
    from dpforge.distributed import join_processes, rank_device, refuse_checkpoints
    from dpforge.model_io import MODEL_FOLDER
    from dpforge.synthesizer import DEFAULT_METHOD, Synthesizer

    check_fit_extras(samples, samples_out, layout, checkpoint_dir, checkpoint_every)
    check_device(device, "--device")
    device = rank_device(device)  # under torchrun with cuda: this rank's own GPU
    replicas = join_processes(device)  # under torchrun: this rank of the group (README)
    seed = replicas.agree_seed(seed)  # one seed on every rank (rank 0's, or from the OS)
    if checkpoint_dir is not None:
        refuse_checkpoints(replicas)
    inputs = tuple(p for p in (data, schema_path, labels) if p is not None)
    check_output_folder(out, MODEL_FOLDER, overwrite=overwrite, inputs=inputs)
    if checkpoint_dir is not None:
        _keep_apart(out, checkpoint_dir)
    public = load_schema(schema_path)
    kind = checked_type(data_type, public)
    refuse_foreign_options(kind, labels=labels, id_column=id_column, layout=layout)
    check_engine(engine, spark_master, spark_remote, kind)
    samples_path = None
    if samples:
        samples_path = samples_out or default_samples_path(kind, out)
        check_sample_outputs(kind, samples_path, overwrite, (*inputs, out))
    if target is not None:
        public = _with_target(public, target)
    refuse_anchor_flags(anchor_share, anchor_bins, anchor_statistic)
    method_options = method_config(
        method or DEFAULT_METHOD,
        batch_size=batch_size,
        clip_norm=clip_norm,
        d_steps=d_steps,
        adaptive_d_steps=adaptive_d_steps,
        max_d_steps=max_d_steps,
        microbatches=microbatches,
        optimizer=optimizer,
        clip_decay=clip_decay,
        clip_decay_every=clip_decay_every,
        gp_weight=gp_weight,
        bayesian_accounting=bayesian,
        num_discriminators=num_discriminators,
        warm_start_steps=warm_start_steps,
        public_warm_start_steps=public_warm_start_steps,
        critic_training=critic_training,
        generator_net=generator_net,
        discriminator_net=discriminator_net,
        discriminator_norm=discriminator_norm,
    )
    synth = Synthesizer(
        public,
        method=method,
        epsilon=epsilon,
        delta=delta,
        noise_multiplier=noise_multiplier,
        epochs=epochs,
        metadata_share=metadata_share,
        method_options=method_options,
        out_of_bounds="clip" if clip_out_of_bounds else "error",
        seed=seed,
        device=device,
        progress=not quiet and replicas.is_main,
        checkpoint_dir=checkpoint_dir,
        checkpoint_every=checkpoint_every,
        anchor=anchor_option(
            public, anchor_share, anchor_bins, anchor_statistic, public_data is not None
        ),
        public_data=read_public(kind, public_data, public_labels),
        privacy_unit=privacy_unit,
        max_rows_per_unit=max_rows_per_unit,
    )
    synth.check_options()  # before the data are read
    # Rank 0 alone charges the budget file and writes the outputs.
    data_budget = budget_for_fit(data, budget_file, no_budget_file) if replicas.is_main else None
    if engine == SPARK:
        records = spark_records(data, spark_master, spark_remote)
    else:
        records = read_data(
            kind,
            data,
            labels=labels,
            label=_label_name(public),
            layout=layout,
            id_column=id_column,
            channels=tuple(public.names) if isinstance(public, ArraySchema) else None,
        )
    before = run_ids(data_budget)
    try:
        synth.fit(records, budget=data_budget)
    except KeyboardInterrupt:  # Ctrl-C: say what stays charged and how to resume (issue 46.9)
        resumable = checkpoint_dir is not None
        console.print(interrupted_line(data_budget, before, resumable, sys.argv), soft_wrap=True)
        sys.exit(130)
    if not replicas.is_main:
        return
    synth.save(out, overwrite=overwrite)
    console.print(f"wrote model folder {out}")
    if samples_path is not None:
        written = write_samples(synth, samples, {}, None, samples_path, overwrite)
        console.print(f"wrote {samples} synthetic records to {', '.join(map(str, written))}")
    print_privacy(synth)
    print_budget_line(data_budget)


def check_fit_extras(
    samples: int,
    samples_out: Path | None,
    layout: str,
    checkpoint_dir: Path | None,
    checkpoint_every: int,
) -> None:
    """The fit options that need neither the schema nor the data, checked before any work:
    a refused run must not have trained a model first, nor leave anything on disk."""
    if checkpoint_dir is None and checkpoint_every != CHECKPOINT_EVERY:
        warnings.warn(
            f"--checkpoint-every {checkpoint_every} has no effect without --checkpoint-dir; "
            "add --checkpoint-dir PATH to make the run resumable",
            UserWarning,
            stacklevel=2,
        )
    if samples < 0:
        raise DpforgeError(
            f"--samples {samples}: give the number of synthetic records to write (at least 1), "
            "or leave it out to write none"
        )
    if samples_out is not None and not samples:
        raise DpforgeError(
            f"--samples-out {samples_out} was given without --samples: say how many records "
            "to write, e.g. --samples 1000"
        )
    if layout not in LAYOUTS:
        raise DpforgeError(f"--layout {layout!r}: choose one of {list(LAYOUTS)}")


def read_public(kind: str, path: Path | None, labels: Path | None) -> ArrayData | None:
    """The declared public images of --public-data (read here, never through the engine)."""
    if path is None:
        if labels is not None:
            raise DpforgeError("--public-labels needs --public-data")
        return None
    if kind != IMAGE:
        raise DpforgeError("--public-data is for images; drop it for tables and series")
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


def _label_name(public: Schema | ArraySchema) -> str | None:
    """The label the reader must pick out of a time-series CSV (None for other layouts)."""
    return public.label if isinstance(public, ArraySchema) else None


@app.command()
def sample(
    model: Path = typer.Argument(..., help="a model folder written by 'dpforge fit'"),
    n: int = typer.Option(..., "-n", help="number of records"),
    out: Path = typer.Option(
        ..., "-o", "--out", help="CSV file (tables, time series) or folder (images) to write"
    ),
    condition: list[str] = typer.Option(None, "--condition", help="LABEL=value"),
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
    overwrite: bool = typer.Option(False, "--overwrite"),
) -> None:
    """Write N synthetic records from MODEL (no data needed: post-processing is free)."""
    from dpforge.data.parts import PartsRequest, write_parts
    from dpforge.model_io import MODEL_FOLDER
    from dpforge.synthesizer import load

    if n < 1:
        raise DpforgeError(f"-n {n}: give the number of records to write, at least 1")
    check_seed(seed, "--seed")
    if image_format not in IMAGE_FORMATS:
        raise DpforgeError(f"--image-format {image_format!r}: choose one of {IMAGE_FORMATS}")
    recover_folder(model, MODEL_FOLDER)  # a replacement a kill interrupted
    synth = load(model)
    synth.mover(move)  # refused before any work when the folder cannot move
    conditions = _parse_conditions(condition or [])
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


def _parse_conditions(items: list[str]) -> dict[str, str]:
    conditions = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise DpforgeError(f"--condition {item!r}: write it as LABEL=value")
        conditions[name.strip()] = value.strip()
    return conditions


@app.command()
def demo(
    out: Path = typer.Option(Path("dpforge-demo"), "--out", help="folder for model and CSV"),
    epsilon: float = typer.Option(3.0, "--epsilon"),
    delta: float = typer.Option(1e-5, "--delta"),
    seed: int = typer.Option(None, "--seed"),
    overwrite: bool = typer.Option(False, "--overwrite"),
) -> None:
    """Train DP-CGAN on scikit-learn's breast-cancer records and check its utility."""
    from dpforge.cli.demo import DEMO_FOLDER, run_demo

    check_output_folder(out, DEMO_FOLDER, overwrite=overwrite)
    run_demo(out, epsilon, delta, seed, console)


def main() -> None:
    """Entry point: user errors become one line on stderr and exit status 2."""
    warnings.simplefilter("default")
    try:
        # A copied context: --redact-errors lasts as long as this command.
        contextvars.copy_context().run(app)  # click handles usage errors (status 2)
    except DpforgeError as exc:
        console.print(f"[bold red]error:[/bold red] {exc}", highlight=False, soft_wrap=True)
        sys.exit(2)
    except KeyboardInterrupt:
        console.print("interrupted; no output was written (--checkpoint-dir makes runs resumable)")
        sys.exit(130)
