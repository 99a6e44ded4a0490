"""Many synthetic rows as a partitioned data set: one file per partition, written in parallel.

Sampling is post-processing of the released generator, so it costs no privacy and reads no
record. At scale (``dpforge sample MODEL -n 1000000000 --format parquet --partitions 64``) the
rows are split into partitions; each worker process loads the model folder itself, streams its
partition in chunks of :data:`dpforge.generate.SAMPLE_CHUNK_ROWS` rows into one Parquet (or
CSV) file, and so holds at most one chunk in memory whatever the partition's size. Partition
``i`` draws from its own seed, spawned from the run's seed by NumPy's ``SeedSequence``, so the
files are the same whichever number of workers wrote them. The folder is built beside its
target and renamed into place (:func:`dpforge.storage.replace_folder`); a manifest names the
parts, their rows and the model, so readers (Spark, pandas, pyarrow) take the folder as one
data set.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dpforge.errors import DataError
from dpforge.storage import FolderKind, replace_folder

FORMATS = ("csv", "parquet")
MANIFEST = "_dpforge_parts.json"
MAX_PARTITIONS = 100_000
_PART = re.compile(r"^part-\d{5,6}\.(csv|parquet)$")
# Arrow types of the numeric column types; every other column (categories, fresh keys, dates
# written in their format) is text.
_NUMERIC = {"continuous": "float64", "integer": "int64"}


@dataclass(frozen=True)
class _PartsFolder(FolderKind):
    """A folder of ``part-NNNNN.*`` files and the manifest, nothing else."""

    def ours(self, path: Path) -> bool:
        try:
            entries = os.listdir(path)
        except OSError:
            return False
        return all(e == MANIFEST or _PART.match(e) for e in entries)


PARTS_FOLDER = _PartsFolder(
    "synthetic parts folder", frozenset({MANIFEST}), lambda p: (p / MANIFEST).is_file()
)


@dataclass(frozen=True)
class PartsRequest:
    """What to write: ``rows`` records from the model folder ``model`` in ``partitions`` files."""

    model: Path
    rows: int
    partitions: int
    fmt: str = "parquet"
    seed: int | None = None
    conditions: tuple[tuple[str, Any], ...] = ()  # (column, value, list or (lo, hi))

    def check(self) -> None:
        """Refuse a request that cannot be met, before any work."""
        if self.fmt not in FORMATS:
            raise DataError(f"--format {self.fmt!r}: choose one of {list(FORMATS)}")
        if isinstance(self.partitions, bool) or not 1 <= self.partitions <= MAX_PARTITIONS:
            raise DataError(
                f"--partitions {self.partitions}: give a whole number from 1 to {MAX_PARTITIONS}"
            )
        if self.partitions > self.rows:
            raise DataError(
                f"--partitions {self.partitions} is more than the {self.rows} rows asked for: "
                "give at most one partition per row"
            )


def check_workers(workers: int) -> None:
    """Refuse a number of writing processes that is not a whole number >= 1."""
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise DataError(f"--workers {workers}: give a whole number of processes, at least 1")


def partition_rows(rows: int, partitions: int) -> list[int]:
    """Rows per partition: as equal as possible, the first ones taking the remainder."""
    base, extra = divmod(rows, partitions)
    return [base + (1 if i < extra else 0) for i in range(partitions)]


def partition_seeds(seed: int | None, partitions: int) -> list[int]:
    """One seed per partition, spawned from ``seed`` (fresh OS entropy when None)."""
    children = np.random.SeedSequence(seed).spawn(partitions)
    return [int(child.generate_state(1, dtype=np.uint64)[0] >> np.uint64(1)) for child in children]


def part_name(index: int, fmt: str) -> str:
    return f"part-{index:05d}.{fmt}"


def write_parts(
    request: PartsRequest, out: Path, *, workers: int = 1, overwrite: bool = False
) -> Path:
    """Write ``request`` as a partitioned data set in the folder ``out``; returns ``out``."""
    request.check()
    check_workers(workers)
    jobs = _jobs(request)

    def build(folder: Path) -> None:
        _run(request, jobs, folder, min(workers, len(jobs)))
        _write_manifest(folder, request, jobs)

    return replace_folder(Path(out), build, PARTS_FOLDER, overwrite=overwrite)


Job = tuple[int, int, int]  # (partition index, rows, seed)


def _jobs(request: PartsRequest) -> list[Job]:
    rows = partition_rows(request.rows, request.partitions)
    seeds = partition_seeds(request.seed, request.partitions)
    return list(zip(range(request.partitions), rows, seeds, strict=True))


def _run(request: PartsRequest, jobs: list[Job], folder: Path, workers: int) -> None:
    """Each partition in a worker process (``spawn``: nothing shared with this process but
    the request), or here when one worker is asked for."""
    if workers == 1:
        for job in jobs:
            write_partition(request, job, folder)
        return
    with ProcessPoolExecutor(workers, mp_context=get_context("spawn")) as pool:
        done = pool.map(write_partition, [request] * len(jobs), jobs, [folder] * len(jobs))
        list(done)  # re-raises a worker's error here


def write_partition(request: PartsRequest, job: Job, folder: Path) -> Path:
    """One partition's file, streamed chunk by chunk from the model folder (the fitted model
    alone: no facade)."""
    from dpforge.conditions import conditioned_chunks
    from dpforge.generate import SAMPLE_CHUNK_ROWS, default_mover
    from dpforge.model_io import read_fitted
    from dpforge.privacy.noise import make_generator

    index, rows, seed = job
    model = read_fitted(request.model)
    generator, mover = make_generator(seed, model.device), default_mover(model, None)
    conditions = dict(request.conditions)
    chunks = conditioned_chunks(model, rows, conditions, generator, mover, SAMPLE_CHUNK_ROWS)
    path = folder / part_name(index, request.fmt)
    types = {c.name: _NUMERIC.get(c.type, "string") for c in model.schema.columns}
    if request.fmt == "parquet":
        _write_parquet(chunks, path, types)
    else:
        _write_csv(chunks, path)
    return path


def _write_parquet(chunks: Iterable[pd.DataFrame], path: Path, types: dict[str, str]) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    writer = None
    try:
        for chunk in chunks:
            if writer is None:
                fields = [(name, pa.type_for_alias(types[name])) for name in chunk.columns]
                writer = pq.ParquetWriter(path, pa.schema(fields))
            text = _as_text(chunk, types)
            writer.write_table(
                pa.Table.from_pandas(text, schema=writer.schema, preserve_index=False)
            )
    finally:
        if writer is not None:
            writer.close()


def _as_text(chunk: pd.DataFrame, types: dict[str, str]) -> pd.DataFrame:
    """Text columns as Python strings (empty cells as None), whatever dtype decoding gave."""
    out = chunk.copy()
    for name in out.columns:
        if types[name] == "string":
            values = out[name].astype(object)
            out[name] = values.where(values.notna(), None).map(lambda v: v if v is None else str(v))
    return out


def _write_csv(chunks: Iterable[pd.DataFrame], path: Path) -> None:
    with open(path, "w", newline="") as handle:
        for index, chunk in enumerate(chunks):
            chunk.to_csv(handle, index=False, header=index == 0)


def _write_manifest(folder: Path, request: PartsRequest, jobs: list[Job]) -> None:
    """The parts and their rows (public: the request), written last: a folder without it is
    incomplete and never taken for finished."""
    manifest = {
        "format": "dpforge-synthetic-parts",
        "model": str(request.model),
        "rows": request.rows,
        "seed": request.seed,
        "parts": [{"file": part_name(i, request.fmt), "rows": r} for i, r, _ in jobs],
    }
    (folder / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")
