"""The training loop: a fixed number of steps planned before training, progress, checkpoints.

The loop holds no DP logic: the method says what one private step is; the plan (number of
discriminator steps, sampling rate) was fitted to the budget by the accountant before the first
step, and the loop never runs more. A checkpoint stores the step reached together with the
networks, optimizers and random state, so an interrupted run resumes where it stopped and the
budget is never spent twice. Checkpoints hold the discriminator and are private working files,
never a release: keep them where the data are.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from dpforge.errors import ModelFileError
from dpforge.methods.base import GanMethod
from dpforge.storage import (
    flatten_state,
    read_json,
    read_tensor_metadata,
    read_tensors,
    unflatten_state,
    write_json,
    write_tensors,
)

CHECKPOINT_STATE = "checkpoint.safetensors"
CHECKPOINT_INFO = "checkpoint.json"
INFO_METADATA = "dpforge_checkpoint"  # the JSON info, inside the tensors file


@dataclass(frozen=True)
class TrainingPlan:
    """What the accountant allowed: ``steps`` discriminator steps at sampling rate q."""

    steps: int
    sample_rate: float
    noise_multiplier: float
    checkpoint_every: int = 500


@dataclass
class TrainingState:
    """Where the run is (``step`` counts private steps, the unit of the plan); the losses are
    for tests, not for release decisions, and only the generator's is ever shown (see
    ``_loss_text``)."""

    step: int = 0
    d_loss: float = float("nan")
    g_loss: float = float("nan")
    d_steps: int = 0  # discriminator steps per generator step now (0: the method's default)
    d_since_g: int = 0  # discriminator steps since the last generator step


def train(
    method: GanMethod,
    features: torch.Tensor,
    labels: torch.Tensor | None,
    plan: TrainingPlan,
    generator: torch.Generator,
    *,
    state: TrainingState | None = None,
    checkpoint: Callable[[TrainingState], None] | None = None,
    progress: bool = True,
) -> TrainingState:
    """Run the planned steps from ``state.step`` on; return the final state."""
    state = state or TrainingState()
    method.prepare(features.shape[0], plan, generator)
    with _progress_bar(progress) as bar:
        task = bar.add_task("training", total=plan.steps, completed=state.step, losses="")
        log_every = _log_interval(bar, plan.steps) if progress else 0
        while state.step < plan.steps:
            method.train_step(features, labels, state, generator)
            bar.update(task, completed=state.step, losses=_loss_text(state, method))
            if log_every and state.step % log_every == 0:
                bar.console.print(f"step {state.step}/{plan.steps}  {_loss_text(state, method)}")
            if checkpoint is not None and state.step % plan.checkpoint_every == 0:
                checkpoint(state)
    return state


def _log_interval(bar: Progress, steps: int) -> int:
    """Without a terminal (batch jobs, logs) the bar is invisible: log every 5% instead."""
    return 0 if bar.console.is_terminal else max(1, steps // 20)


def _loss_text(state: TrainingState, method: GanMethod) -> str:
    """The losses progress may show: only post-processing of released quantities.

    Console output and logs are outputs too (design.md section 2, rule 8). The discriminator's
    loss is computed on real records (DP-SGD methods) or by critics trained without noise
    (GS-WGAN), so it is never shown; the generator's loss only where the method says it is
    post-processing (``GanMethod.g_loss_is_public``: its loss against the privately trained
    discriminator on generated rows). ``state`` keeps both for tests.
    """
    if not method.g_loss_is_public or state.g_loss != state.g_loss:  # NaN: no G step yet
        return ""
    return f"G {state.g_loss:.3f}"


def _progress_bar(enabled: bool) -> Progress:
    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[losses]}"),
        TimeRemainingColumn(),
        disable=not enabled,
        transient=False,
    )


# -- checkpoints --------------------------------------------------------------------------------
def save_checkpoint(
    folder: Path,
    method: GanMethod,
    state: TrainingState,
    generator: torch.Generator,
    run_info: dict[str, Any],
) -> None:
    """Write networks, optimizers, random state and step; ``run_info`` is the run's plan.

    One atomic unit: the step and everything else :func:`load_checkpoint` needs are stored
    inside the tensors file, so a kill between two writes can never pair networks trained for
    more steps with a smaller step count (which would let the ledger count fewer steps than
    ran). The JSON file is a readable copy, and marks the folder as holding a checkpoint.
    """
    tensors: dict[str, torch.Tensor] = {}
    skeleton = {
        name: flatten_state(name, obj.state_dict(), tensors)
        for name, obj in _stateful_parts(method).items()
    }
    tensors["rng"] = generator.get_state()
    info = {"state": asdict(state), "skeleton": skeleton, **run_info}
    folder.mkdir(parents=True, exist_ok=True)
    write_tensors(folder / CHECKPOINT_STATE, tensors, metadata={INFO_METADATA: json.dumps(info)})
    write_json(folder / CHECKPOINT_INFO, info)


def load_checkpoint(
    folder: Path, method: GanMethod, generator: torch.Generator
) -> tuple[TrainingState, dict[str, Any]]:
    """Restore what :func:`save_checkpoint` wrote; returns the state and the run info."""
    tensors = read_tensors(folder / CHECKPOINT_STATE)
    stored = read_tensor_metadata(folder / CHECKPOINT_STATE).get(INFO_METADATA)
    if stored is None:
        raise ModelFileError(
            f"{folder / CHECKPOINT_STATE} holds no step and plan (an older dpforge wrote it); "
            "delete the checkpoint and start the run again"
        )
    info = json.loads(stored)
    for name, obj in _stateful_parts(method).items():
        obj.load_state_dict(unflatten_state(info["skeleton"][name], tensors))
    generator.set_state(tensors["rng"])
    return TrainingState(**info["state"]), info


def read_checkpoint_info(folder: Path) -> dict[str, Any]:
    """The JSON half of a checkpoint (step, plan and whatever the run stored with it)."""
    return read_json(Path(folder) / CHECKPOINT_INFO)


def has_checkpoint(folder: Path | None) -> bool:
    return folder is not None and (Path(folder) / CHECKPOINT_INFO).is_file()


def _stateful_parts(method: GanMethod) -> dict[str, Any]:
    return method.state_parts()
