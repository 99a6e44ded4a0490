"""Related tables on the command line: ``dpforge schema``, ``fit`` and ``sample`` when they are
given several CSV files or a relational schema.

Files map to tables by file stem: ``patients.csv`` is the table ``patients`` of the schema
(:func:`dpforge.data.relational.read_tables`); every table of the schema needs its file and
every file its table. ``fit`` charges the whole plan to the parent table's budget file (next to
the parent's CSV file, shared with single-table fits of it: the unit is the parent) as one run,
recorded with a fingerprint of all the tables' records. ``sample`` writes a folder with one CSV
file per table (``-n`` is the number of parents).
"""

from __future__ import annotations

import hashlib
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.markup import escape

from dpforge.cli.engine import SPARK, check_engine, spark_frame
from dpforge.data.relational import draft_relational_schema, read_tables
from dpforge.errors import DataError, DpforgeError
from dpforge.storage import FolderKind, atomic_write, check_output_folder, replace_folder

if TYPE_CHECKING:
    from dpforge.cli.options_file import FitOptions
    from dpforge.relational import RelationalSynthesizer
    from dpforge.schema.relational import RelationalSchema

__all__ = [
    "FitRequest",
    "draft_relational",
    "fit_relational",
    "refuse_table_options",
    "sample_relational",
]
console = Console(stderr=True)


def refuse_table_options(given: dict[str, object]) -> None:
    """Options of one file's draft (flag -> value) are refused with several files, naming
    the option."""
    for flag, value in given.items():
        if value:
            raise DataError(
                f"{flag} applies to one data file; with several CSV files (related tables) "
                "leave it out and edit the drafted schema instead"
            )


def draft_relational(paths: list[Path], out: Path, values: bool, overwrite: bool) -> str:
    """Write the relational draft of the CSV files ``paths`` to ``out``; returns the message
    for the steward (what to review)."""
    drafted = draft_relational_schema(read_tables(paths), with_values=values)
    atomic_write(out, lambda p: p.write_text(drafted.to_json() + "\n"), overwrite=overwrite)
    what = "column types and values" if values else "column types"
    return (
        f"[bold red]REVIEW NEEDED[/bold red]: the keys, links and {what} in {out} were read "
        "from the private data and are not private. Check each table's keys and types, set "
        "every max_rows_per_parent to a public bound, then delete the 'review' entries."
    )


# -- fit ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class FitRequest:
    """The fit command's settings that apply to related tables."""

    data: tuple[Path, ...]
    schema_path: Path
    out: Path
    epsilon: float
    delta: float
    options_path: Path | None
    seed: int | None
    budget_file: Path | None
    clip_out_of_bounds: bool
    overwrite: bool
    checkpoint_dir: Path | None = None


def fit_relational(request: FitRequest, one_table: dict[str, object]) -> None:
    """Fit related tables and write their model folder; ``one_table``: the options of a
    single table's fit (flag -> value), refused when set."""
    from dpforge.cli.budget import budget_for_fit, interrupted_line, print_budget_line, run_ids
    from dpforge.relational import RelationalSynthesizer
    from dpforge.relational_io import RELATIONAL_FOLDER
    from dpforge.schema.relational import RelationalSchema

    _refuse_one_table_flags(one_table)
    schema = RelationalSchema.load(request.schema_path)
    files = files_by_table(request.data, schema, request.schema_path)
    options = _relational_options(request.options_path)
    inputs = tuple(p for p in (*request.data, request.schema_path, request.options_path) if p)
    check_output_folder(request.out, RELATIONAL_FOLDER, overwrite=request.overwrite, inputs=inputs)
    model = RelationalSynthesizer(
        schema, request.epsilon, request.delta, seed=request.seed,
        anchor=_anchor(options, schema), progress=options.output.progress,
        out_of_bounds="clip" if request.clip_out_of_bounds else "error",
        checkpoint_dir=request.checkpoint_dir,
    )  # fmt: skip
    model.check_options()  # before the data are read
    parent_file = files[schema.parent.name]
    budget = budget_for_fit(parent_file, request.budget_file, not options.privacy.record_budget)
    if budget is not None:
        budget.data_sha256 = tables_fingerprint(files)
    tables = _read(files, options)
    before = run_ids(budget)
    try:
        model.fit(tables, budget=budget)
    except KeyboardInterrupt:
        line = interrupted_line(budget, before, request.checkpoint_dir is not None, sys.argv)
        console.print(line, soft_wrap=True, markup=False, highlight=False)
        sys.exit(130)
    model.save(request.out, overwrite=request.overwrite)
    console.print(f"wrote model folder {request.out}")
    _print_privacy(model)
    print_budget_line(budget)


def _refuse_one_table_flags(given: dict[str, object]) -> None:
    for flag, value in given.items():
        if value:
            raise DpforgeError(
                f"{flag} is an option of one table's fit; related tables are fitted per "
                "parent, with each child's k from the relational schema: leave it out"
            )


def files_by_table(
    paths: tuple[Path, ...], schema: RelationalSchema, schema_path: Path
) -> dict[str, Path]:
    """Each table's CSV file, by file stem; a file without its table, a table without its
    file, or two files of one table is refused before any file is read."""
    files: dict[str, Path] = {}
    for path in paths:
        if path.stem in files:
            raise DataError(
                f"{files[path.stem]} and {path} both name table '{path.stem}' (files name "
                "tables by their stem): give one of them"
            )
        if path.stem not in schema.names:
            raise DataError(
                f"{path}: table '{path.stem}' (files name tables by their stem) is not in "
                f"{schema_path} (its tables: {', '.join(schema.names)}); rename the file "
                "after its table, or leave it out"
            )
        files[path.stem] = path
    missing = [n for n in schema.names if n not in files]
    if missing:
        raise DataError(
            f"table '{missing[0]}' of {schema_path} has no file: give {missing[0]}.csv "
            f"(files name tables by their stem) with the other tables"
        )
    return files


def tables_fingerprint(files: dict[str, Path]) -> str:
    """The records of all the tables, by table name (order, bytes and file names aside): the
    budget file records it (private: never printed)."""
    from dpforge.privacy.budget_paths import records_fingerprint

    digest = hashlib.sha256(b"related tables\0")
    for name in sorted(files):
        digest.update(name.encode() + b"\0" + records_fingerprint(files[name]).encode() + b"\0")
    return digest.hexdigest()


def _relational_options(path: Path | None) -> FitOptions:
    """The options file's keys that apply to related tables: [anchor] (each table model's),
    [privacy] record_budget and [output] progress; any other is refused, named."""
    from dpforge.cli.options_file import FitOptions, read_options

    options = read_options(path, "table", None)
    default = FitOptions()
    foreign = [
        name for name, given, unset in (
            ("[data]", options.data, default.data),
            ("[privacy] metadata_share", options.privacy.metadata_share, 0.1),
            ("[refine]", (options.refine, options.refine_run), (None, default.refine_run)),
            ("[generator]", options.generator, None),
            ("[output] checkpoint_every, samples or samples_out",
             (options.output.checkpoint_every, options.output.samples, options.output.samples_out),
             (default.output.checkpoint_every, 0, None)),
        ) if given != unset
    ]  # fmt: skip
    if foreign:
        raise DpforgeError(
            f"{options.source} sets {foreign[0]}, which related tables do not take (they "
            "take [anchor], [engine], [privacy] record_budget and [output] progress): remove it"
        )
    engine = options.engine
    check_engine(engine.name, engine.spark_master, engine.spark_remote, "table")
    return options


def _read(files: dict[str, Path], options: FitOptions) -> dict[str, Any]:
    """Every table: read into this process, or (``[engine] name = "spark"``) as Spark
    DataFrames, each part then measured on Spark (:mod:`dpforge.data.relational_spark`)."""
    engine = options.engine
    if engine.name == SPARK:
        return {
            name: spark_frame(path, engine.spark_master, engine.spark_remote)
            for name, path in files.items()
        }
    return read_tables(list(files.values()))


def _anchor(options: FitOptions, schema: RelationalSchema) -> Any:
    from dpforge.cli.fit_options import anchor_option

    return anchor_option(options, schema.parent.schema, None, False)


def _print_privacy(model: RelationalSynthesizer) -> None:
    """What the run spent and what the guarantee protects (public: from the ledger)."""
    from dpforge.privacy.relational import unit_words

    report = model.privacy_spent()
    console.print(f"[bold]privacy spent[/bold]: {report.summary()}, metadata included")
    console.print(f"[bold]guarantee[/bold]: {escape(unit_words(model.schema))}")
    for entry in model.ledger_.entries:
        console.print(f"  ledger: {entry.name}", markup=False)


# -- sample ---------------------------------------------------------------------------------
def samples_folder(schema: RelationalSchema) -> FolderKind:
    """The folder ``sample`` writes: one ``<table>.csv`` per table, nothing else."""
    names = frozenset(f"{name}.csv" for name in schema.names)
    return FolderKind(
        "related tables' samples folder",
        names,
        lambda path: all((Path(path) / name).is_file() for name in names),
    )


def sample_relational(
    model_path: Path,
    n: int,
    out: Path,
    seed: int | None,
    move: bool | None,
    overwrite: bool,
    aggregates: bool = False,
) -> None:
    """Write ``n`` parents and their children from a related-tables model folder: one CSV
    file per table in the folder ``out`` (the parent's with its drawn aggregates of its
    children where ``aggregates``)."""
    from dpforge.relational import RelationalSynthesizer

    model = RelationalSynthesizer.load(model_path)
    kind = samples_folder(model.schema)
    check_output_folder(out, kind, overwrite=overwrite, inputs=(model_path,))
    tables = model.sample(n, seed=seed, move=move, aggregates=aggregates)

    def build(staging: Path) -> None:
        for name, frame in tables.items():
            frame.to_csv(staging / f"{name}.csv", index=False)

    replace_folder(out, build, kind, overwrite=overwrite)
    rows = ", ".join(f"{len(frame)} {name}" for name, frame in tables.items())
    console.print(f"wrote {rows} rows to {out}/ (one CSV file per table)")
