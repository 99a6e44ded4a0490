"""Resume: a run's setup and accounting settings as its checkpoint stores them.

The checkpoint records everything that fixes the accounting (:func:`privacy_settings`); a run
resumed with any difference is refused before its first step (design rule 9). A resumed run
takes its setup (metadata, measurements, plan) from the checkpoint and never measures again.
"""

from __future__ import annotations

from dataclasses import asdict, is_dataclass
from typing import Any

from dpforge.errors import PrivacyError
from dpforge.pipeline.plan import sample_rate
from dpforge.pipeline.run import RunSettings, RunSetup
from dpforge.privacy.resume import DATA_KEY, SETTINGS_KEY, check_resume, flat_settings
from dpforge.training import has_checkpoint, read_checkpoint_info

BUDGET_RUN_KEY = "budget_run"  # the id of the run's record in the data set's budget file


def privacy_settings(run: RunSettings, n_records: int) -> dict[str, Any]:
    """Every setting that fixes this run's accounting, as its checkpoint stores them."""
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
            "sample_rate": sample_rate(run, n_records),
            "method_options": asdict(run.config),
            "anchor": asdict(anchor) if is_dataclass(anchor) else anchor,
            "schema": run.schema.to_dict(),
        }
    )


def resumed_setup(run: RunSettings, n_records: int) -> RunSetup | None:
    """The checkpoint's setup, if there is one and it was made with this run's settings."""
    if not has_checkpoint(run.checkpoint_dir):
        return None
    info = read_checkpoint_info(run.checkpoint_dir)
    setup = RunSetup.from_dict(info["setup"], run.anchoring)
    if setup.n_records != n_records:
        raise PrivacyError(
            f"the checkpoint in {run.checkpoint_dir} was made on {setup.n_records} records, "
            f"not {n_records}: use another --checkpoint-dir or delete it"
        )
    stored = info.get(SETTINGS_KEY) or {}
    options = {k: v for k, v in stored.items() if k != DATA_KEY}
    check_resume(options, privacy_settings(run, n_records), run.checkpoint_dir)
    return setup


def checkpoint_budget_run(run: RunSettings) -> str | None:
    """The budget run id the checkpoint recorded (None: no checkpoint, or an older one)."""
    if not has_checkpoint(run.checkpoint_dir):
        return None
    return read_checkpoint_info(run.checkpoint_dir).get(BUDGET_RUN_KEY)


def is_resumed(run: RunSettings, setup: RunSetup) -> bool:
    """Whether discriminator training continues from a checkpoint (the generator is in it)."""
    return bool(setup.plan.steps) and has_checkpoint(run.checkpoint_dir)
