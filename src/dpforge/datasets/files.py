"""Where the benchmark data live, and how a missing file is reported.

The ``data_dir`` argument, else the environment variable ``DPFORGE_DATA_DIR``, else
``../shared/datasets`` relative to the current directory (the layout of design.md section 7,
when run from the project root).
"""

from __future__ import annotations

import os
from pathlib import Path

from dpforge.errors import DataError

DATA_DIR_ENV = "DPFORGE_DATA_DIR"
DEFAULT_DATA_DIR = Path("..") / "shared" / "datasets"


def resolve_data_dir(data_dir: str | Path | None = None) -> tuple[Path, str]:
    """The data folder and where its name came from (for error messages)."""
    if data_dir is not None:
        return Path(data_dir), "the data_dir argument"
    env = os.environ.get(DATA_DIR_ENV)
    if env:
        return Path(env), f"the environment variable {DATA_DIR_ENV}"
    return DEFAULT_DATA_DIR, f"the default {DEFAULT_DATA_DIR} (relative to {Path.cwd()})"


def dataset_file(data_dir: str | Path | None, folder: str, name: str) -> Path:
    """``<data_dir>/<folder>/<name>`` (or ``<data_dir>/<name>``), or a DataError saying how."""
    root, source = resolve_data_dir(data_dir)
    for candidate in (root / folder / name, root / name):
        if candidate.is_file():
            return candidate
    raise DataError(
        f"cannot find {folder}/{name}: looked in {root / folder} and {root} (from {source}); "
        f"pass data_dir=<folder holding {folder}/>, set {DATA_DIR_ENV}, or run from the "
        f"project root with {DEFAULT_DATA_DIR} present"
    )
