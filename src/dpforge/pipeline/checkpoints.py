"""Resume per stage: a run's setup and accounting settings as its checkpoints store them.

Two stages save their output in the checkpoint folder: ``measure`` (``measured.json``: every
release, the plan and the ledger, written once all measurements ran) and ``refine``
(``checkpoint.json`` + tensors, every ``checkpoint_every`` steps, :mod:`dpforge.training`). A
run restarts at the first stage not yet saved: after the refine checkpoint it continues the
discriminator's steps; after the measure checkpoint it fits the generator again from the saved
releases (post-processing, free) and measures nothing again. Each checkpoint records everything
that fixes the accounting (:func:`privacy_settings`), a fingerprint of the records and the
budget run id, and a resume with any difference is refused before its first step (design rule
9). The folder is private: it holds the exact record count and the fingerprint.
"""

from __future__ import annotations

import secrets
from dataclasses import asdict, is_dataclass
from pathlib import Path
from typing import Any

from dpforge.errors import PrivacyError
from dpforge.pipeline.run import RunSettings, RunSetup
from dpforge.privacy.resume import (
    DATA_KEY,
    SETTINGS_KEY,
    check_resume,
    flat_settings,
)
from dpforge.storage import read_json, write_json
from dpforge.training import has_checkpoint, read_checkpoint_info

BUDGET_RUN_KEY = "budget_run"  # the id of the run's record in the data set's budget file
RECORDS_KEY = "records_sha256"  # the measure checkpoint's fingerprint of the raw records
MEASURED = "measured.json"
BOUNDING_SEED = "bounding_seed.json"  # the seed of the rows kept per person (unseeded runs)


def privacy_settings(run: RunSettings, setup: RunSetup, n_records: int) -> dict[str, Any]:
    """Every setting that fixes this run's accounting, as its (private) checkpoint stores
    them: the exact record count too, so that other data are refused, and the sampling rate
    the plan uses (over persons when rows per person are bounded)."""
    anchor = run.anchor
    return flat_settings(
        {
            "method": run.method,
            "epsilon": run.epsilon,
            "delta": run.delta,
            "noise_multiplier": run.noise_multiplier,
            "epochs": run.epochs,
            "metadata_share": run.metadata_share,
            "out_of_bounds": run.out_of_bounds,
            "n_records": n_records,
            "sample_rate": setup.plan.sample_rate,
            "method_options": asdict(run.config),
            "anchor": asdict(anchor) if is_dataclass(anchor) else anchor,
            "schema": run.schema.to_dict(),
            **({"privacy_unit": run.unit.to_dict()} if run.unit.per_person else {}),
        }
    )


def bounding_seed(run: RunSettings) -> int | None:
    """The seed of the rows kept per person: the run's stream 6; without a seed, drawn from the
    OS once per checkpoint folder and kept there (:func:`folder_seed`), so that a resumed run
    keeps the same rows and its records match the checkpoint's fingerprint."""
    if run.seed is not None or run.checkpoint_dir is None:
        return run.seed_sequence(6)
    return folder_seed(Path(run.checkpoint_dir))


def folder_seed(folder: Path) -> int:
    """A seed drawn from the OS the first time a checkpoint folder asks, then read back from it
    (private, like the folder): what a resumed run must draw the same way as the first."""
    path = folder / BOUNDING_SEED
    if path.is_file():
        return int(read_json(path)["seed"])
    seed = secrets.randbits(63)
    folder.mkdir(parents=True, exist_ok=True)
    write_json(path, {"seed": seed}, private=True)
    return seed


def latest_checkpoint(run: RunSettings) -> dict[str, Any] | None:
    """The info of the latest stage saved in the checkpoint folder (refine, else measure)."""
    if has_checkpoint(run.checkpoint_dir):
        return read_checkpoint_info(run.checkpoint_dir)
    if run.checkpoint_dir is not None and (Path(run.checkpoint_dir) / MEASURED).is_file():
        return read_json(Path(run.checkpoint_dir) / MEASURED)
    return None


def checkpoint_setup(run: RunSettings) -> RunSetup | None:
    """The saved setup, if a stage was saved (checked by :func:`check_resumable`)."""
    info = latest_checkpoint(run)
    return None if info is None else RunSetup.from_dict(info["setup"], run.anchoring)


def save_measured(run: RunSettings, setup: RunSetup, records: Any) -> None:
    """Save the measure stage's output (atomically), so that a later kill never measures
    again; nothing when the run has no checkpoint folder or its refine stage saved already."""
    if run.checkpoint_dir is None or has_checkpoint(run.checkpoint_dir):
        return
    settings = privacy_settings(run, setup, setup.n_records)
    info = {
        "setup": setup.to_dict(),
        SETTINGS_KEY: settings,
        RECORDS_KEY: run.kind.fingerprint(records),
        BUDGET_RUN_KEY: run.budget_run,
    }
    Path(run.checkpoint_dir).mkdir(parents=True, exist_ok=True)
    write_json(Path(run.checkpoint_dir) / MEASURED, info, private=True)


def check_resumable(run: RunSettings, setup: RunSetup, n_records: int, records: Any) -> None:
    """Refuse to resume unless the checkpoint was made on these data with these settings."""
    info = latest_checkpoint(run)
    if RECORDS_KEY in info and info[RECORDS_KEY] != run.kind.fingerprint(records):
        raise PrivacyError(
            f"cannot resume from {run.checkpoint_dir}: the data differ from those the checkpoint "
            "was made on; resume on the same data, or use another --checkpoint-dir"
        )
    if setup.n_records != n_records:  # the counts themselves are private: not in the message
        raise PrivacyError(
            f"the checkpoint in {run.checkpoint_dir} was made on another number of records: "
            "resume on the same data, or use another --checkpoint-dir"
        )
    stored = info.get(SETTINGS_KEY) or {}
    options = {k: v for k, v in stored.items() if k != DATA_KEY}
    current = privacy_settings(run, setup, n_records)
    check_resume(options, current, run.checkpoint_dir)


def checkpoint_budget_run(run: RunSettings) -> str | None:
    """The budget run id the latest checkpoint recorded (None: none, or an older one)."""
    info = latest_checkpoint(run)
    return None if info is None else info.get(BUDGET_RUN_KEY)


def is_resumed(run: RunSettings, setup: RunSetup) -> bool:
    """Whether discriminator training continues from a checkpoint (the generator is in it)."""
    return bool(setup.plan.steps) and has_checkpoint(run.checkpoint_dir)
