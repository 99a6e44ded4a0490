"""Which budget file belongs to a data set (``<data>.dpforge-budget.json`` beside it) and the
data's SHA-256 fingerprint that recognises a renamed copy (:mod:`dpforge.privacy.budget`).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from dpforge.errors import PrivacyError

BUDGET_SUFFIX = ".dpforge-budget.json"


_CHUNK = 1 << 20


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
