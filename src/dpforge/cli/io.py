"""Reading private data and writing synthetic output for each data type (tables, images,
time series), so that the commands stay thin."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from dpforge.errors import DpforgeError
from dpforge.schema.array import IMAGE, TIMESERIES, ArraySchema
from dpforge.schema.table import Schema
from dpforge.storage import atomic_write, check_output_file, check_output_folder

if TYPE_CHECKING:  # the readers and writers are imported where used: --help stays light
    import pandas as pd

    from dpforge.data.arrays import ArrayData
    from dpforge.data.parts import PartsRequest

TABLE = "table"
DATA_TYPES = (TABLE, IMAGE, TIMESERIES)
IMAGE_SUFFIXES = (".npz", ".gz", ".idx", "-ubyte", ".idx3-ubyte")
IMAGE_FORMATS = ("both", "png", "npz")


def schema_type(schema: Schema | ArraySchema) -> str:
    return schema.kind if isinstance(schema, ArraySchema) else TABLE


def guess_type(path: Path) -> str:
    """The data type a path most likely holds: a folder or .npz/idx file of images, or a table."""
    name = path.name.lower()
    if path.is_dir() or name.endswith(IMAGE_SUFFIXES) or "ubyte" in name:
        return IMAGE
    return TABLE


def read_data(
    kind: str,
    path: Path,
    *,
    labels: Path | None = None,
    label: str | None = None,
    layout: str = "wide",
    id_column: str | None = None,
    time_column: str = "time",
    channels: tuple[str, ...] | None = None,
):
    """The private data at ``path`` as a table (DataFrame) or :class:`ArrayData`."""
    if kind == TABLE:
        from dpforge.data.tables import read_csv

        return read_csv(path)
    if kind == IMAGE:
        from dpforge.data.images import read_images

        return read_images(path, labels)
    from dpforge.data.series import read_series

    if path.suffix.lower() != ".csv":
        return read_series(path)
    if layout == "long":
        return read_series(
            path, layout="long", id_column=id_column or "id", time_column=time_column, label=label
        )
    several = channels is not None and len(channels) > 1
    return read_series(
        path, label=label, id_column=id_column, channels=list(channels) if several else None
    )


def draft(kind: str, data, label: str | None):
    """A draft schema of ``kind`` for ``data`` (values read from the data are flagged)."""
    if kind == IMAGE:
        from dpforge.data.images import draft_image_schema

        return draft_image_schema(data, label=label or "label")
    from dpforge.data.series import draft_series_schema

    return draft_series_schema(data, label=label or "label")


def to_pixels(data: ArrayData, schema: ArraySchema) -> ArrayData:
    """Images in the 0..255 range of PNG files, from the schema's public channel ranges."""
    from dpforge.data.arrays import ArrayData

    lower = np.array([c.lower for c in schema.channels]).reshape(-1, 1, 1)
    upper = np.array([c.upper for c in schema.channels]).reshape(-1, 1, 1)
    pixels = (np.asarray(data.values, dtype=np.float64) - lower) / (upper - lower) * 255.0
    return ArrayData(np.clip(pixels, 0.0, 255.0), data.labels)


def sample_paths(kind: str, out: Path) -> list[Path]:
    """Every path ``write_samples`` writes for ``kind``: the CSV (and the plot of a series)."""
    return [out, out.with_suffix(".png")] if kind == TIMESERIES else [out]


def check_sample_outputs(
    kind: str, out: Path, overwrite: bool, inputs: tuple[Path, ...] = ()
) -> None:
    """Before any work: every path the samples go to may be written (see ``dpforge.storage``)."""
    if kind == IMAGE:
        from dpforge.data.export import IMAGE_FOLDER

        check_output_folder(out, IMAGE_FOLDER, overwrite=overwrite, inputs=inputs)
        return
    for path in sample_paths(kind, out):
        check_output_file(path, overwrite=overwrite, inputs=inputs, what="samples file")


def check_parts(
    kind: str, request: PartsRequest, out: Path, overwrite: bool, workers: int | None
) -> None:
    """Before any work: a partitioned output (``--format``, ``--partitions``, ``--workers``)
    is for tables, and its folder may be written."""
    from dpforge.data.parts import PARTS_FOLDER, check_workers

    if kind != TABLE:
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
    kind = schema_type(synth.schema_)
    if kind == TABLE:
        chunks = synth.sample_chunks(n, conditions=conditions, seed=seed, move=move)
        atomic_write(out, lambda p: write_csv_chunks(chunks, p), overwrite=overwrite)
        return [out]
    records = synth.sample(n, conditions=conditions, seed=seed, move=move)
    schema = synth.schema_
    if kind == IMAGE:
        from dpforge.data.export import write_images

        if image_format not in IMAGE_FORMATS:
            raise DpforgeError(f"--image-format {image_format!r}: choose one of {IMAGE_FORMATS}")
        png, npz = image_format in ("both", "png"), image_format in ("both", "npz")
        write_images(to_pixels(records, schema), out, png=png, npz=npz, overwrite=overwrite)
        return [out]
    from dpforge.data.export import plot_series, write_series_csv

    csv_path, plot = sample_paths(kind, out)
    names = tuple(schema.names)
    write_series_csv(
        records, csv_path, overwrite=overwrite, channel_names=names, label=schema.label or "label"
    )
    plot_series(records, plot, overwrite=overwrite, channel_names=names)
    return [csv_path, plot]


def write_csv_chunks(chunks: Iterable[pd.DataFrame], path: Path) -> None:
    """Write DataFrames one after another as one CSV file (the header once)."""
    with open(path, "w", newline="") as handle:
        for index, chunk in enumerate(chunks):
            chunk.to_csv(handle, index=False, header=index == 0)


def default_samples_path(kind: str, model: Path) -> Path:
    return model.with_suffix(".csv") if kind != IMAGE else model.with_name(model.name + "-images")


def refuse_foreign_options(
    kind: str, *, labels: Path | None, id_column: str | None, layout: str, in_file: bool = False
) -> None:
    """Reading options of another data type are refused, never silently ignored; ``in_file``:
    they were given as ``[data]`` keys of the options file, not as flags."""

    def name(key: str) -> str:
        return f"[data] {key} =" if in_file else "--" + key.replace("_", "-")

    if labels is not None and kind != IMAGE:
        raise DpforgeError(
            f"{name('labels')} {labels} applies to images (an idx labels file), but this is "
            f"{kind} data: drop it (a table's label is the schema's 'label', or target)"
        )
    if id_column is not None and kind != TIMESERIES:
        raise DpforgeError(
            f"{name('id_column')} {id_column} applies to time series, but this is {kind} data: "
            "drop it (a table's identifier columns are declared in its schema as 'drop' or "
            "'surrogate')"
        )
    if layout != "wide" and kind != TIMESERIES:
        raise DpforgeError(
            f"{name('layout')} {layout} applies to time series CSV files only: drop it"
        )
