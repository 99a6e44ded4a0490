"""How each data kind's records are read from files, drafted and written as samples.

The command line (:mod:`dpforge.cli.io`) asks :func:`files_for` for a kind's
:class:`KindFiles` and calls it; it never branches on the kind. It lives with the readers and
writers it calls (``data/``), not in ``kinds/``: importing :mod:`dpforge.kinds` loads torch,
and ``dpforge schema`` reads and drafts a table with pandas alone. Tables are CSV files (samples
streamed in chunks, or a folder of part files), images a folder or an npz / idx file (samples
as PNG files and/or an npz, plus a grid image), time series a CSV file in the wide or long
layout, or an npz (samples as a wide CSV and a plot).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from dpforge.errors import DpforgeError
from dpforge.schema.array import IMAGE, TIMESERIES
from dpforge.storage import atomic_write, check_output_file, check_output_folder

if TYPE_CHECKING:
    import pandas as pd

    from dpforge.data.arrays import ArrayData
    from dpforge.schema.array import ArraySchema

__all__ = ["IMAGE_FORMATS", "TABLE", "KindFiles", "ReadOptions", "files_for", "write_csv_chunks"]
TABLE = "table"
IMAGE_FORMATS = ("both", "png", "npz")


@dataclass(frozen=True)
class ReadOptions:
    """The reading options of ``schema`` and ``fit`` (each applies to one kind only)."""

    labels: Path | None = None  # images: an idx labels file
    label: str | None = None  # series: the label column of a CSV
    layout: str = "wide"  # series CSV: wide or long
    id_column: str | None = None  # series: the series id column
    time_column: str = "time"  # series, long layout
    channels: tuple[str, ...] | None = None  # series, wide layout: the channel columns


class KindFiles:
    """One kind's files: what it reads, how a draft is made, where and how samples go. This
    class is a table's (CSV files); :class:`ImageFiles` and :class:`SeriesFiles` override what
    differs."""

    name = TABLE
    options: frozenset[str] = frozenset()  # the ReadOptions fields it reads (besides label)
    partitioned = True  # samples may be written as a folder of part files
    streams = True  # samples are drawn and written in chunks (memory stays bounded)
    types_in_draft = True  # a draft holds types read from the data (to check against a code book)
    public_data = False  # a fit may declare a public set of records of this kind
    spark = True  # a Spark engine reads and measures its files

    def read_options(self, schema: Any, **given: Any) -> ReadOptions:
        """The reading options of a fit: ``given`` (the ``[data]`` keys), and what the kind
        takes from its declared schema."""
        return ReadOptions(**given)

    def read(self, path: Path, options: ReadOptions) -> Any:
        """The private records at ``path``."""
        from dpforge.data.tables import read_csv

        return read_csv(path)

    def draft(self, path: Path, options: ReadOptions, values: bool) -> Any:
        """A draft schema for the records at ``path`` (values read from the data flagged)."""
        from dpforge.data.tables import draft_schema, read_csv

        return draft_schema(read_csv(path), label=options.label, with_values=values)

    def sample_paths(self, out: Path) -> list[Path]:
        """Every path :meth:`write_samples` writes."""
        return [out]

    def check_sample_outputs(self, out: Path, overwrite: bool, inputs: tuple[Path, ...]) -> None:
        """Before any work: every path the samples go to may be written."""
        for path in self.sample_paths(out):
            check_output_file(path, overwrite=overwrite, inputs=inputs, what="samples file")

    def default_samples_path(self, model: Path) -> Path:
        return model.with_suffix(".csv")

    def write_samples(
        self, records: Any, schema: Any, out: Path, overwrite: bool, image_format: str
    ) -> list[Path]:
        """Write the sampled ``records`` of a model of ``schema`` (``image_format``: how
        images are written); returns the paths written. A table is one CSV, written from its
        chunks (``streams``: sampled in chunks so that memory stays bounded)."""
        atomic_write(out, lambda p: write_csv_chunks(records, p), overwrite=overwrite)
        return [out]


class ImageFiles(KindFiles):
    name = IMAGE
    options = frozenset({"labels"})
    partitioned = False
    streams = False
    types_in_draft = False
    public_data = True
    spark = False

    def read(self, path: Path, options: ReadOptions) -> Any:
        from dpforge.data.images import read_images

        return read_images(path, options.labels)

    def draft(self, path: Path, options: ReadOptions, values: bool) -> Any:
        from dpforge.data.images import draft_image_schema

        return draft_image_schema(self.read(path, options), label=options.label or "label")

    def check_sample_outputs(self, out: Path, overwrite: bool, inputs: tuple[Path, ...]) -> None:
        from dpforge.data.export import IMAGE_FOLDER

        check_output_folder(out, IMAGE_FOLDER, overwrite=overwrite, inputs=inputs)

    def default_samples_path(self, model: Path) -> Path:
        return model.with_name(model.name + "-images")

    def write_samples(
        self, records: Any, schema: Any, out: Path, overwrite: bool, image_format: str
    ) -> list[Path]:
        """PNG files and/or an npz (``image_format``), plus a grid image."""
        from dpforge.data.export import write_images

        if image_format not in IMAGE_FORMATS:
            raise DpforgeError(f"--image-format {image_format!r}: choose one of {IMAGE_FORMATS}")
        png, npz = image_format in ("both", "png"), image_format in ("both", "npz")
        write_images(to_pixels(records, schema), out, png=png, npz=npz, overwrite=overwrite)
        return [out]


class SeriesFiles(KindFiles):
    name = TIMESERIES
    options = frozenset({"layout", "id_column"})
    partitioned = False
    streams = False
    types_in_draft = False
    spark = False

    def read_options(self, schema: Any, **given: Any) -> ReadOptions:
        """The schema's label column and channel names (a wide CSV's columns)."""
        return ReadOptions(label=schema.label, channels=tuple(schema.names), **given)

    def read(self, path: Path, options: ReadOptions) -> Any:
        from dpforge.data.series import read_series

        o = options
        if path.suffix.lower() != ".csv":
            return read_series(path)
        if o.layout == "long":
            return read_series(path, layout="long", id_column=o.id_column or "id",
                               time_column=o.time_column, label=o.label)  # fmt: skip
        several = o.channels is not None and len(o.channels) > 1
        return read_series(path, label=o.label, id_column=o.id_column,
                           channels=list(o.channels) if several else None)  # fmt: skip

    def draft(self, path: Path, options: ReadOptions, values: bool) -> Any:
        from dpforge.data.series import draft_series_schema

        return draft_series_schema(self.read(path, options), label=options.label or "label")

    def sample_paths(self, out: Path) -> list[Path]:
        return [out, out.with_suffix(".png")]

    def write_samples(
        self, records: Any, schema: Any, out: Path, overwrite: bool, image_format: str
    ) -> list[Path]:
        """A wide CSV and a plot of the series."""
        from dpforge.data.export import plot_series, write_series_csv

        csv_path, plot = self.sample_paths(out)
        names = tuple(schema.names)
        write_series_csv(records, csv_path, overwrite=overwrite, channel_names=names,
                         label=schema.label or "label")  # fmt: skip
        plot_series(records, plot, overwrite=overwrite, channel_names=names)
        return [csv_path, plot]


_FILES = {files.name: files for files in (KindFiles(), ImageFiles(), SeriesFiles())}
DATA_TYPES = tuple(_FILES)


def files_for(kind: str) -> KindFiles:
    """The files of the kind named ``kind`` ("table", "image" or "timeseries")."""
    if kind not in _FILES:
        raise DpforgeError(f"unknown data type {kind!r}: use one of {list(DATA_TYPES)}")
    return _FILES[kind]


def to_pixels(data: ArrayData, schema: ArraySchema) -> ArrayData:
    """Images in the 0..255 range of PNG files, from the schema's public channel ranges."""
    from dpforge.data.arrays import ArrayData

    lower = np.array([c.lower for c in schema.channels]).reshape(-1, 1, 1)
    upper = np.array([c.upper for c in schema.channels]).reshape(-1, 1, 1)
    pixels = (np.asarray(data.values, dtype=np.float64) - lower) / (upper - lower) * 255.0
    return ArrayData(np.clip(pixels, 0.0, 255.0), data.labels)


def write_csv_chunks(chunks: Iterable[pd.DataFrame], path: Path) -> None:
    """Write DataFrames one after another as one CSV file (the header once)."""
    with open(path, "w", newline="") as handle:
        for index, chunk in enumerate(chunks):
            chunk.to_csv(handle, index=False, header=index == 0)
