"""Resume for related tables: one checkpoint folder for the whole run, one subfolder per part.

A related tables' fit is one budget run made of table fits (the parts, :mod:`dpforge.relational`).
With a checkpoint folder, each part is an ordinary resumable table fit in ``<folder>/<table>``
(:mod:`dpforge.pipeline.checkpoints`: its releases are saved once measured and never measured
again), and this module keeps what the run as a whole must find again after a crash:

- the id of the run's record in the budget file, so that the resumed run is charged nothing
  more (:meth:`~dpforge.privacy.relational_charge.PartsCharge.charge` with ``resume_of``);
- the seed of the rows kept per parent (unseeded runs draw it from the OS once,
  :func:`~dpforge.pipeline.checkpoints.folder_seed`), so that every part reads the same rows
  and its records match its checkpoint's fingerprint;
- the settings that fix the run's accounting (ε, δ, the relational schema, the seed), so that a
  resume with any of them changed is refused before anything is charged or released.

The folder is private, like a table fit's: it holds the parts' releases and fingerprints.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dpforge.errors import PrivacyError
from dpforge.privacy.resume import check_resume, flat_settings
from dpforge.storage import read_json, write_json

__all__ = ["RUN_FILE", "part_folder", "resumed_run", "save_run"]

RUN_FILE = "relational_run.json"


def part_folder(folder: Path | None, table: str) -> Path | None:
    """The checkpoint folder of the part that fits ``table`` (None without a folder)."""
    return None if folder is None else folder / table


def resumed_run(folder: Path | None, settings: dict[str, Any]) -> str | None:
    """The budget run id that an earlier, interrupted run recorded in ``folder`` (None: a new
    run); refused when the settings differ from the ones it ran with."""
    path = None if folder is None else folder / RUN_FILE
    if path is None or not path.is_file():
        return None
    info = read_json(path)
    check_resume(info.get("settings"), flat_settings(settings), folder)
    if "budget_run" not in info:
        raise PrivacyError(f"{path} is not a related tables' run record: delete the folder")
    return info["budget_run"]


def save_run(folder: Path | None, run_id: str | None, settings: dict[str, Any]) -> None:
    """Record the run (its budget record and settings) before the first part's first release."""
    if folder is None:
        return
    folder.mkdir(parents=True, exist_ok=True)
    info = {"budget_run": run_id, "settings": flat_settings(settings)}
    write_json(folder / RUN_FILE, info, private=True)
