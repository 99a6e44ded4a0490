"""What a federated site checks in a server's query before it reads a record (design rule 12).

The server may be malicious. Every decision made here is a function of the query and of the
site's own public inputs (its declared schema, its trust model) only, never of its records:
a refusal tells the server nothing about them. A site

* checks its records against its OWN declared schema: the server's schema must be that schema
  (validate), or that schema with only its undeclared bounds and categories filled in by the
  run's DP releases (released); the encoder the server names must be built on the schema the
  site accepted last;
* answers only the operations it knows, on columns of that schema, with a finite noise std;
* checks every array the server sends: the model the pair scores compare with must hold, for
  each pair, a probability table of the pair's shape (finite, non-negative, total mass 1
  within ``MASS_TOLERANCE``, then renormalised), so that a score's sensitivity is the 2 it is
  priced at, whatever the server sends.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from dpforge.errors import PrivacyError
from dpforge.schema.table import Schema

__all__ = [
    "OPERATIONS",
    "checked_column",
    "checked_encoder",
    "checked_std",
    "checked_tables",
    "completed_schema",
    "same_schema",
]

OPERATIONS = frozenset({"validate", "released", "size", "bincount", "frequent", "counts", "scores"})
FILLED_BY_THE_RUN = frozenset({"lower", "upper", "categories"})  # DP estimates of the undeclared
MASS_TOLERANCE = 1e-6
MAX_CELLS = 10**7  # a histogram the server asks for: far above any encoder's


def refuse(what: str) -> PrivacyError:
    return PrivacyError(f"this site refuses the query: {what}")


def checked_std(query: dict, key: str = "std") -> float:
    value = query.get(key)
    if not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        raise refuse(f"'{key}' must be a finite number >= 0")
    return float(value)


def _schema(given: Any) -> Schema:
    try:
        return Schema.from_dict(given)
    except Exception:  # noqa: BLE001 - any malformed document: refused the same way
        raise refuse("the schema it carries is not a table schema") from None


def same_schema(own: Schema, given: Any) -> Schema:
    """``own``, when the server's schema is exactly it; refused otherwise."""
    if _schema(given).to_dict() != own.to_dict():
        raise refuse(
            "its schema differs from this site's own declared schema (a site checks its "
            "records against its own schema only)"
        )
    return own


def completed_schema(accepted: Schema, given: Any) -> Schema:
    """The server's completed schema: ``accepted`` with undeclared bounds and categories
    filled in (the run's DP releases); any other difference is refused."""
    schema = _schema(given)
    mine, theirs = accepted.to_dict(), schema.to_dict()
    if {k: v for k, v in mine.items() if k != "columns"} != {
        k: v for k, v in theirs.items() if k != "columns"
    } or [c["name"] for c in mine["columns"]] != [c["name"] for c in theirs["columns"]]:
        raise refuse("its schema's columns or label differ from this site's own")
    for a, b in zip(mine["columns"], theirs["columns"], strict=True):
        for key in set(a) | set(b):
            if a.get(key) != b.get(key) and not (a.get(key) is None and key in FILLED_BY_THE_RUN):
                raise refuse(
                    f"column '{a['name']}': its '{key}' differs from this site's own declared "
                    "schema (only undeclared bounds and categories may be filled in)"
                )
    return schema


def checked_encoder(accepted: Schema, description: Any) -> dict:
    """The encoder description, when it is built on ``accepted`` with sane public cells."""
    if not isinstance(description, dict) or set(description) != {"schema", "n_bins", "edges"}:
        raise refuse("its encoder description is malformed")
    if _schema(description["schema"]).to_dict() != accepted.to_dict():
        raise refuse("its encoder is built on another schema than the one this site checked")
    n_bins, edges = description["n_bins"], description["edges"]
    if not isinstance(n_bins, int) or not 1 <= n_bins <= 4096 or not isinstance(edges, dict):
        raise refuse("its encoder's bins are malformed")
    numeric = {c.name for c in accepted.feature_columns if c.is_numeric}
    for name, values in edges.items():
        cuts = np.asarray(values, dtype=np.float64) if isinstance(values, list) else None
        if (name not in numeric or cuts is None or cuts.ndim != 1 or not len(cuts) <= 4096
                or not np.all(np.isfinite(cuts)) or np.any(np.diff(cuts) <= 0)):  # fmt: skip
            raise refuse(f"its encoder's cell edges for '{name}' are malformed")
    return description


def checked_column(schema: Schema, name: Any) -> str:
    if name not in schema.names:
        raise refuse("it names a column this site's schema does not hold")
    return str(name)


def checked_size(size: Any) -> int:
    if not isinstance(size, int) or not 1 <= size <= MAX_CELLS:
        raise refuse(f"a histogram's size must be a whole number from 1 to {MAX_CELLS}")
    return size


def checked_tables(arrays: Sequence[np.ndarray], shapes: Sequence[tuple[int, ...]]) -> list:
    """The compared model's tables, one probability table per pair (refused otherwise), each
    renormalised to mass 1: one record then moves a score by at most 2."""
    if len(arrays) != len(shapes):
        raise refuse(f"{len(arrays)} model tables for {len(shapes)} pairs")
    tables = []
    for i, (array, shape) in enumerate(zip(arrays, shapes, strict=True)):
        table = np.asarray(array)
        if table.dtype.kind != "f" or table.shape != tuple(shape):
            raise refuse(f"model table {i} is not a float table of shape {tuple(shape)}")
        table = table.astype(np.float64)
        mass = float(table.sum()) if np.all(np.isfinite(table)) else math.nan
        if not np.all(table >= 0) or not abs(mass - 1.0) <= MASS_TOLERANCE:
            raise refuse(
                f"model table {i} is not a probability table (finite, non-negative, total "
                "mass 1): its score's sensitivity could not be bounded"
            )
        tables.append(table / mass)
    return tables
