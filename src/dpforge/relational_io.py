"""Save and load a related tables' model folder.

One folder holds exactly what may be published:

- ``relational.json``: the format marker, the relational schema (public: declared keys, links
  and each child's public bound k), the target (epsilon, delta), the unit in words, the
  composed ledger and its epsilon, and the library versions;
- one subfolder per table, named by the table: the parent's model (its columns and one count
  column per child) and each child's model (the child joined with its parent's columns), each
  an ordinary model folder (:mod:`dpforge.model_io`: weights, model.json, the stored release).

No real key (keys are identifier columns, never modelled), no exact count and no training row
is written. The folder is built beside its target and renamed into place
(:func:`dpforge.storage.replace_folder`); an existing folder is replaced only when it holds a
complete related-tables model folder and nothing else.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dpforge.errors import DpforgeError, ModelFileError, SchemaError
from dpforge.model_io import (
    MODEL_FOLDER,
    is_model_folder,
    library_versions,
    read_model,
    restore,
    save_model,
)
from dpforge.privacy.ledger import PrivacyLedger
from dpforge.privacy.relational import unit_words
from dpforge.schema.relational import RelationalSchema
from dpforge.schema.validation import read_json_text
from dpforge.storage import FolderKind, folder_holds_only, replace_folder, write_json

__all__ = [
    "RELATIONAL_FOLDER",
    "check_table_names",
    "is_relational_folder",
    "read_relational",
    "save_relational",
]

FORMAT = "dpforge-relational-model"
FORMAT_VERSION = 1
MANIFEST = "relational.json"
_SAFE_NAME = re.compile(r"[\w][\w .+-]*")


def is_relational_folder(path: Path) -> bool:
    """Whether ``path`` holds a relational.json with the format marker and, for each table it
    names, a complete model folder (and nothing else)."""
    try:
        info = json.loads((Path(path) / MANIFEST).read_text())
        names = list(info["schema"]["tables"]) if info.get("format") == FORMAT else None
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return False
    if names is None or not folder_holds_only(Path(path), {MANIFEST, *names}):
        return False
    return all(is_model_folder(Path(path) / n) for n in names)


@dataclass(frozen=True)
class _RelationalKind(FolderKind):
    """A related-tables model folder: relational.json and table subfolders, each holding a
    model folder's files alone (a partial one, left by a kill, counts as dpforge's too)."""

    def ours(self, path: Path) -> bool:
        try:
            subfolders = [e for e in Path(path).iterdir() if e.is_dir() and not e.is_symlink()]
        except OSError:
            return False
        models = {e.name for e in subfolders if MODEL_FOLDER.ours(e)}
        return folder_holds_only(Path(path), {MANIFEST, *models})


RELATIONAL_FOLDER = _RelationalKind(
    "related-tables model folder", frozenset({MANIFEST}), is_relational_folder
)


def check_table_names(schema: RelationalSchema) -> None:
    """Each table's name is a plain file name: it names the table's model subfolder and its
    sampled CSV file."""
    for name in schema.names:
        if not _SAFE_NAME.fullmatch(name) or name == MANIFEST:
            raise SchemaError(
                f"table name {name!r} cannot name a folder or file: use letters, digits, "
                "spaces, '_', '-', '.' or '+' (not first), and not 'relational.json'"
            )


def manifest(model: Any) -> dict[str, Any]:
    """The JSON side: everything public about the fitted related tables' model."""
    return {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "schema": model.schema.to_dict(),
        "privacy": {
            "target_epsilon": model.epsilon,
            "delta": model.delta,
            "unit": unit_words(model.schema),
            "report": model.privacy_spent().to_dict(),
            "ledger": model.ledger_.to_dict(),
        },
        "versions": library_versions(),
    }


def save_relational(model: Any, path: Path, *, overwrite: bool) -> Path:
    """Write the folder atomically (built beside ``path``, then renamed into place)."""
    check_table_names(model.schema)
    models = model.table_models()

    def build(staging: Path) -> None:
        for name, table_model in models.items():
            save_model(table_model, staging / name, overwrite=False)
        write_json(staging / MANIFEST, manifest(model))

    return replace_folder(Path(path), build, RELATIONAL_FOLDER, overwrite=overwrite)


def read_relational(path: str | Path, cls: type) -> tuple[dict[str, Any], dict[str, Any]]:
    """relational.json (checked) and each table's model, rebuilt as ``cls`` (the single-table
    Synthesizer); data only, nothing executed."""
    path = Path(path)
    if not path.is_dir():
        raise ModelFileError(f"{path} is not a folder; give the model folder written by 'fit'")
    info = read_json_text(path / MANIFEST, "model file", ModelFileError)
    if not isinstance(info, dict) or info.get("format") != FORMAT:
        raise ModelFileError(
            f"{path / MANIFEST} is not a dpforge related-tables model file (no "
            f"'format': '{FORMAT}'): give the folder written by 'dpforge fit --schema'"
        )
    if info.get("format_version") != FORMAT_VERSION:
        raise ModelFileError(
            f"{path / MANIFEST}: format_version {info.get('format_version')!r}; this dpforge "
            f"reads version {FORMAT_VERSION}: fit the model again"
        )
    try:
        schema = RelationalSchema.from_dict(info.get("schema"))
        PrivacyLedger.from_dict(info["privacy"]["ledger"])
    except (DpforgeError, KeyError, TypeError) as exc:
        raise ModelFileError(f"{path / MANIFEST}: {exc}") from None
    models = {name: restore(cls, *read_model(path / name)) for name in schema.names}
    return info, models
