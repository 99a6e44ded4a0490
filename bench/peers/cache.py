"""The peers' result cache: one CSV of synthetic cells and one JSON of its timing per entry.

An entry's key is the sha256 of (method, epsilon, delta, seed, rows, sampler, sha256 of the
cells CSV, sha256 of the domain JSON); its files are named ``<method>-eps<e>-seed<s>-<sampler>-
<key[:16]>.csv`` / ``.json`` and written atomically, so several readers and one filler may share
the folder.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from pathlib import Path

import numpy as np
import pandas as pd

__all__ = ["Entry", "cache_key", "sha256"]


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def cache_key(
    cells_sha256: str,
    domain_sha256: str,
    method: str,
    epsilon: float,
    delta: float,
    seed: int,
    rows: int,
    sampler: str,
) -> str:
    """sha256 of (method, epsilon, delta, seed, rows, sampler, cells' and domain's sha256)."""
    fields = {
        "method": method,
        "epsilon": float(epsilon),
        "delta": float(delta),
        "seed": int(seed),
        "rows": int(rows),
        "sampler": sampler,
        "cells_sha256": cells_sha256,
        "domain_sha256": domain_sha256,
    }
    return sha256(json.dumps(fields, sort_keys=True).encode())


class Entry:
    """One cached result: its key and its two files under ``cache_dir``."""

    def __init__(self, cache_dir: Path, key: str, method: str, epsilon: float, seed: int,
                 sampler: str) -> None:  # fmt: skip
        stem = f"{method}-eps{epsilon:g}-seed{seed}-{sampler}-{key[:16]}"
        self.key = key
        self.csv, self.json = cache_dir / f"{stem}.csv", cache_dir / f"{stem}.json"

    def read(self) -> tuple[pd.DataFrame, dict] | None:
        """The cached synthetic cells and info (``cached=True``), or None when absent."""
        if not (self.csv.exists() and self.json.exists()):
            return None
        info = json.loads(self.json.read_text())
        return pd.read_csv(self.csv, dtype=np.int64), dict(info, cached=True)

    def write(self, synth: pd.DataFrame, info: dict) -> None:
        _atomic_write(self.csv, synth.to_csv(index=False).encode())
        _atomic_write(self.json, (json.dumps(info, indent=2) + "\n").encode())


def _atomic_write(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    tmp.write_bytes(data)
    tmp.replace(path)
