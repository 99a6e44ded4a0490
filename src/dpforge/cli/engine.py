"""``[engine]`` of ``dpforge fit``'s options file: where the records are read and aggregated.

``name = "memory"`` (the default) reads the data file into this process. ``"spark"`` leaves a
table in Apache Spark: ``spark_master`` (a cluster URL; ``local[*]``, embedded, by default) or
``spark_remote`` (``sc://HOST:PORT``, Spark Connect), over Parquet files or folders or CSV
files. Every setting is checked before anything is read or charged. ``--device`` (here too:
shared by ``fit`` and ``federated simulate-images``) is where the networks train.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dpforge.data.kind_files import files_for
from dpforge.errors import DpforgeError

URL_SCHEMES = frozenset({"hdfs", "s3", "s3a", "gs", "abfs", "abfss", "wasbs", "dbfs"})
MEMORY = "memory"
SPARK = "spark"
DEVICE_DEFAULT = "cpu"
DEVICE_HELP = (
    "where the networks train: cpu (default), cuda, cuda:N or mps; the privacy accounting and "
    "the statistics are the same on any device"
)


def check_engine(engine: str, master: str | None, remote: str | None, kind: str) -> None:
    """Refuse an unknown engine, Spark settings without Spark, and Spark for non-tables."""
    if engine not in (MEMORY, SPARK):
        raise DpforgeError(f"[engine] name must be '{MEMORY}' or '{SPARK}', got {engine!r}")
    if engine == MEMORY and (master or remote):
        raise DpforgeError('[engine] spark_master and spark_remote need name = "spark"')
    if master and remote:
        raise DpforgeError("[engine]: give spark_master or spark_remote, not both")
    if engine == SPARK and not files_for(kind).spark:
        raise DpforgeError(
            f'[engine] name = "spark" measures tables; this schema is for {kind} data'
        )


def spark_records(path: Path, master: str | None, remote: str | None) -> Any:
    """A Spark engine over the table at ``path`` (Parquet file or folder, or CSV file)."""
    from dpforge.engines.spark import SparkEngine

    return SparkEngine(spark_frame(path, master, remote))


def spark_frame(path: Path, master: str | None, remote: str | None) -> Any:
    """The table at ``path`` (Parquet file or folder, or CSV file) as a Spark DataFrame."""
    from dpforge.engines.spark import read_table, spark_session

    location = _location(path)
    if location == str(path) and not path.exists():
        raise DpforgeError(f"data path {path} does not exist")
    return read_table(spark_session(master, remote), [location])


def _location(path: Path) -> str:
    """The path as Spark reads it: a cluster URL keeps its ``//`` (``Path`` folds it)."""
    text = str(path)
    scheme, _, rest = text.partition(":/")
    if scheme in URL_SCHEMES and rest and not rest.startswith("/"):
        return f"{scheme}://{rest}"
    return text
