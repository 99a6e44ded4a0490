"""Reading private data and writing synthetic output for each data type (tables, images,
time series), so that the commands stay thin: each kind's files are
:mod:`dpforge.data.kind_files`, which imports its readers and writers when they run."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from dpforge.data.kind_files import TABLE, ReadOptions, files_for
from dpforge.errors import DpforgeError
from dpforge.schema.array import IMAGE, ArraySchema
from dpforge.schema.table import Schema
from dpforge.storage import check_output_folder

if TYPE_CHECKING:  # the readers and writers are imported where used: --help stays light
    from dpforge.data.parts import PartsRequest

IMAGE_SUFFIXES = (".npz", ".gz", ".idx", "-ubyte", ".idx3-ubyte")


def schema_type(schema: Schema | ArraySchema) -> str:
    return schema.kind


def guess_type(path: Path) -> str:
    """The data type a path most likely holds: a folder or .npz/idx file of images, or a table."""
    name = path.name.lower()
    if path.is_dir() or name.endswith(IMAGE_SUFFIXES) or "ubyte" in name:
        return IMAGE
    return TABLE


def read_data(kind: str, path: Path, schema: Any = None, **options: Any) -> Any:
    """The private data at ``path`` as a table (DataFrame) or :class:`ArrayData`; ``options``
    are :class:`dpforge.data.kind_files.ReadOptions` fields, with what the kind takes from
    ``schema`` (its declared schema) when given."""
    files = files_for(kind)
    read = ReadOptions(**options) if schema is None else files.read_options(schema, **options)
    return files.read(path, read)


def takes_public_data(kind: str) -> bool:
    """Whether a fit of ``kind`` may declare a public set of its records."""
    return files_for(kind).public_data


def draft_data(kind: str, path: Path, values: bool, **options: Any) -> Any:
    """A draft schema of ``kind`` for the data at ``path`` (values read from it are flagged;
    a table's only with ``values``)."""
    return files_for(kind).draft(path, ReadOptions(**options), values)


def types_in_draft(kind: str) -> bool:
    """Whether a draft of ``kind`` holds types read from the data (a table's columns)."""
    return files_for(kind).types_in_draft


def sample_paths(kind: str, out: Path) -> list[Path]:
    """Every path ``write_samples`` writes for ``kind``: the CSV (and the plot of a series)."""
    return files_for(kind).sample_paths(out)


def check_sample_outputs(
    kind: str, out: Path, overwrite: bool, inputs: tuple[Path, ...] = ()
) -> None:
    """Before any work: every path the samples go to may be written (see ``dpforge.storage``)."""
    files_for(kind).check_sample_outputs(out, overwrite, inputs)


def check_parts(
    kind: str, request: PartsRequest, out: Path, overwrite: bool, workers: int | None
) -> None:
    """Before any work: a partitioned output (``--format``, ``--partitions``, ``--workers``)
    is for tables, and its folder may be written."""
    from dpforge.data.parts import PARTS_FOLDER, check_workers

    if not files_for(kind).partitioned:
        raise DpforgeError(
            f"--format, --partitions and --workers apply to tables; this model writes {kind} "
            "data: drop them"
        )
    request.check()
    if workers is not None:
        check_workers(workers)
    check_output_folder(out, PARTS_FOLDER, overwrite=overwrite, inputs=(request.model,))


def write_samples(
    synth,
    n: int,
    conditions,
    seed,
    out: Path,
    overwrite: bool,
    image_format: str = "both",
    move: bool | None = None,
) -> list[Path]:
    """Sample ``n`` records from ``synth`` (``move`` as in ``Synthesizer.sample``) and write
    them: CSV (tables, streamed in chunks so memory stays bounded), PNG files and/or an npz
    plus a grid image (images), wide CSV and a plot (time series). Returns the paths written;
    the caller checked them beforehand."""
    request = {"n": n, "conditions": conditions, "seed": seed, "move": move}
    files = files_for(schema_type(synth.schema_))
    records = synth.sample_chunks(**request) if files.streams else synth.sample(**request)
    return files.write_samples(records, synth.schema_, out, overwrite, image_format)


def default_samples_path(kind: str, model: Path) -> Path:
    return files_for(kind).default_samples_path(model)


_FOREIGN = {
    "labels": "{flag} {value} applies to images (an idx labels file), but this is {kind} data: "
    "drop it (a table's label is the schema's 'label', or target)",
    "id_column": "{flag} {value} applies to time series, but this is {kind} data: drop it (a "
    "table's identifier columns are declared in its schema as 'drop' or 'surrogate')",
    "layout": "{flag} {value} applies to time series CSV files only: drop it",
}


def refuse_foreign_options(
    kind: str, *, labels: Path | None, id_column: str | None, layout: str, in_file: bool = False
) -> None:
    """Reading options of another data type are refused, never silently ignored; ``in_file``:
    they were given as ``[data]`` keys of the options file, not as flags."""
    given = {
        "labels": labels,
        "id_column": id_column,
        "layout": None if layout == "wide" else layout,
    }
    taken = files_for(kind).options
    for key, value in given.items():
        if value is not None and key not in taken:
            flag = f"[data] {key} =" if in_file else "--" + key.replace("_", "-")
            raise DpforgeError(_FOREIGN[key].format(flag=flag, value=value, kind=kind))
