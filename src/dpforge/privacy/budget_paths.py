"""Which budget file belongs to a data set (``<data>.dpforge-budget.json`` beside it) and the
fingerprint of its records that recognises a renamed, re-saved or reordered copy in the same
folder (:mod:`dpforge.privacy.budget`; what it cannot recognise: ``docs/budget.md``).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from dpforge.errors import PrivacyError

BUDGET_SUFFIX = ".dpforge-budget.json"


_CHUNK = 1 << 20
TEXT_TABLES = (".csv", ".tsv", ".txt")


def records_fingerprint(path: str | Path) -> str:
    """SHA-256 of the records a data file or folder holds, whatever their order, the file's
    bytes or its name (issue 43.8: a CRLF or row-shuffled copy started a fresh budget).

    A CSV file: its rows as dpforge reads them (the delimiter off the header, values as text,
    spaces around them stripped, so line endings and quoting do not count), columns taken in
    name order, one 64-bit hash per row, the hashes sorted: a multiset of rows. A folder: the
    multiset of its files' contents (images: one record per file; the names do not count).
    Any other file (Parquet, NumPy): its bytes, which its own writer fixes.

    Derived from private data: keep it in private files only, never print it.
    """
    path = Path(path)
    if path.is_dir():
        digests = sorted(_file_digest(p) for p in path.rglob("*") if p.is_file())
        return hashlib.sha256(b"folder\0" + b"".join(digests)).hexdigest()
    if path.is_file() and path.suffix.lower() in TEXT_TABLES:
        return _table_fingerprint(path)
    return data_sha256(path)


def _table_fingerprint(path: Path) -> str:
    import numpy as np
    import pandas as pd

    from dpforge.data.tables import read_csv

    frame = read_csv(path)
    names = sorted(frame.columns)
    frame = frame[names].apply(lambda col: col.str.strip())
    rows = np.sort(pd.util.hash_pandas_object(frame, index=False).to_numpy(dtype=np.uint64))
    digest = hashlib.sha256(b"table\0" + "\0".join(names).encode() + b"\0")
    digest.update(rows.astype("<u8").tobytes())
    return digest.hexdigest()


def _file_digest(path: Path) -> bytes:
    digest = hashlib.sha256()
    _hash_file(path, digest)
    return digest.digest()


def data_sha256(path: str | Path) -> str:
    """SHA-256 of a data file's bytes, or of every file in a data folder (names included).

    Derived from private data: keep it in private files only, never print it.
    """
    path = Path(path)
    digest = hashlib.sha256()
    if path.is_dir():
        for item in sorted(p for p in path.rglob("*") if p.is_file()):
            digest.update(item.relative_to(path).as_posix().encode() + b"\0")
            _hash_file(item, digest)
    elif path.is_file():
        _hash_file(path, digest)
    else:
        raise PrivacyError(f"{path} does not exist: give the data file the budget is about")
    return digest.hexdigest()


def _hash_file(path: Path, digest: Any) -> None:
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(_CHUNK), b""):
            digest.update(chunk)
    digest.update(b"\1")


def budget_path_for(data: str | Path) -> Path:
    """The budget file that belongs next to ``data``: ``<data>.dpforge-budget.json``."""
    data = Path(data)
    name = data.resolve().name if data.name in ("", ".", "..") else data.name
    return data.resolve().parent / (name + BUDGET_SUFFIX)
