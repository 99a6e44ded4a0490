"""The training loop: a fixed number of steps planned before training, progress, checkpoints.

The loop holds no DP logic: the method says what one private step is; the plan (number of
discriminator steps, sampling rate) was fitted to the budget by the accountant before the first
step, and the loop never runs more. A checkpoint stores the step reached together with the
networks, optimizers and random state, so an interrupted run resumes where it stopped and the
budget is never spent twice. Checkpoints hold the discriminator and are private working files,
never a release: keep them where the data are.

The ledger is written ahead of the steps it covers: before a run of steps starts, the count of
private steps it may reach is recorded (``reserve``), so a kill between two checkpoints can
waste budget but never hide it. ``TrainingState.spent`` counts the private steps charged, those
a kill wasted included; the loop stops when ``spent`` reaches the plan, so a resumed run that
lost steps trains for fewer steps than planned and never spends more than the plan.

Training stops with :class:`TrainingDivergedError` as soon as a weight of the generator (or
of its weight average) is not finite (NaN or infinite): nothing diverged is checkpointed or
released. The stop reads nothing else: the generator's weights after each step are
post-processing of the DP releases (noisy discriminator gradients, anchoring measurements,
GS-WGAN's sanitized gradients), so whether and at which step the run stops is covered by the
guarantee, and the message may name that step. A non-private discriminator loss, or a critic
trained without noise (GS-WGAN), is never read: a diverged discriminator shows up in the
generator's weights at its next step.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import dp_accounting
import torch
from filelock import FileLock, Timeout
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from dpforge.distributed import ONE_PROCESS, GradientReducer
from dpforge.errors import DpforgeError, ModelFileError, PrivacyError
from dpforge.methods.base import GanMethod
from dpforge.privacy.ledger import PrivacyLedger
from dpforge.storage import (
    flatten_state,
    read_json,
    read_tensor_metadata,
    read_tensors,
    remove_stale_temp_files,
    unflatten_state,
    write_json,
    write_tensors,
)

CHECKPOINT_STATE = "checkpoint.safetensors"
CHECKPOINT_INFO = "checkpoint.json"
LEDGER_AHEAD = "ledger.json"  # the ledger written ahead of the steps it covers
LOCK = ".dpforge.lock"
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
    spent: int = 0  # private steps charged to the budget (steps a kill wasted included)


class TrainingDivergedError(DpforgeError):
    """The generator's weights became NaN or infinite: training stopped, nothing is released."""


RESERVE_FRACTION = 10  # the ledger is written ahead every checkpoint_every // 10 steps


def train(
    method: GanMethod,
    features: torch.Tensor,
    labels: torch.Tensor | None,
    plan: TrainingPlan,
    generator: torch.Generator,
    *,
    state: TrainingState | None = None,
    checkpoint: Callable[[TrainingState], None] | None = None,
    reserve: Callable[[int], None] | None = None,
    progress: bool = True,
    reducer: GradientReducer = ONE_PROCESS,
    persons: torch.Tensor | None = None,
) -> TrainingState:
    """Run the planned steps from ``state.spent`` on; return the final state.

    ``reserve(n)`` must record durably that up to ``n`` private steps may have run; it is called
    before the steps it covers (see the module notes). ``reducer`` is the seam to the other
    processes of a multi-process run (:mod:`dpforge.distributed`): every rank passes all the
    records and trains on its shard; ``generator`` must be seeded identically on every rank.
    ``persons`` (a privacy unit): each record's person code; whole persons are then sampled
    and clipped (user-level DP-SGD, one process only).
    """
    state = state or TrainingState()
    state.spent = max(state.spent, state.step)
    if persons is None:
        features, labels = _shard(features, labels, reducer)
    method.prepare(features.shape[0], plan, generator, reducer, persons)
    reducer.broadcast_state(method.state_parts())  # the replicas start identical
    chunk = max(1, plan.checkpoint_every // RESERVE_FRACTION)
    reserved = state.spent
    with _progress_bar(progress) as bar:
        task = bar.add_task("training", total=plan.steps, completed=state.spent, losses="")
        log_every = _log_interval(bar, plan.steps) if progress else 0
        while state.spent < plan.steps:
            if reserve is not None and state.spent >= reserved:
                reserved = min(plan.steps, state.spent + chunk)
                reserve(reserved)
            method.train_step(features, labels, state, generator)
            state.spent += 1
            check_finite(method, state, plan)
            bar.update(task, completed=state.spent, losses=_loss_text(state, method))
            if log_every and state.spent % log_every == 0:
                bar.console.print(f"step {state.spent}/{plan.steps}  {_loss_text(state, method)}")
            if checkpoint is not None and state.step % plan.checkpoint_every == 0:
                checkpoint(state)
    if checkpoint is not None and state.step % plan.checkpoint_every != 0:
        checkpoint(state)  # the final state: a re-run releases this same model, not an older one
    return state


def _shard(
    features: torch.Tensor, labels: torch.Tensor | None, reducer: GradientReducer
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """This rank's contiguous shard of the records (all of them in one process)."""
    part = reducer.shard(features.shape[0])
    return features[part], None if labels is None else labels[part]


def check_finite(method: GanMethod, state: TrainingState, plan: TrainingPlan) -> None:
    """Stop training when a weight of the generator or of its average is not finite.

    Only released quantities are read (see the module notes): the generator's weights are
    post-processing of the DP releases, so the stop and the step it names are inside the
    guarantee. Losses are not read: the discriminator's is computed on real records without
    noise. The message never holds a weight value.
    """
    networks = [method.generator, method.released_generator()]
    if not all(_finite_module(m) for m in networks):
        raise TrainingDivergedError(
            f"training diverged at private step {state.spent} of {plan.steps}: the generator's "
            "weights became NaN or infinite, so nothing is released; the last checkpoint "
            "written before it (if any) is kept. Lower clip_norm, gp_weight or the learning "
            "rates ([refine] of the options file) and run again (the budget of the steps run "
            "is spent)"
        )


def _finite_module(module: torch.nn.Module) -> bool:
    with torch.no_grad():
        return all(bool(torch.isfinite(p).all()) for p in module.parameters())


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
    metadata = {INFO_METADATA: json.dumps(info)}
    write_tensors(folder / CHECKPOINT_STATE, tensors, metadata=metadata, private=True)
    write_json(folder / CHECKPOINT_INFO, info, private=True)


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


# -- the checkpoint folder: one fit at a time, and its ledger written ahead ----------------------
@contextmanager
def checkpoint_lock(folder: Path | None) -> Iterator[None]:
    """Hold the checkpoint folder for one fit; a second fit on it fails at once.

    Under the lock, temporary files that a killed run left in the folder are removed.
    """
    if folder is None:
        yield
        return
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    lock = FileLock(folder / LOCK, timeout=0)
    try:
        lock.acquire()
    except Timeout:
        raise PrivacyError(
            f"another dpforge fit is using the checkpoint folder {folder}: wait for it to end, "
            "or give this run its own --checkpoint-dir"
        ) from None
    try:
        remove_stale_temp_files(folder, (CHECKPOINT_STATE, CHECKPOINT_INFO, LEDGER_AHEAD))
        yield
    finally:
        lock.release()


def write_ahead_ledger(
    folder: Path,
    setup_ledger: PrivacyLedger,
    method_name: str,
    event: dp_accounting.DpEvent,
    steps: int,
    delta: float,
) -> None:
    """Record durably, BEFORE they run, that up to ``steps`` private steps may have run: the
    ledger of the run so far (metadata, marginals) plus the event of those steps."""
    ledger = PrivacyLedger(setup_ledger.entries)
    ledger.record(f"{method_name}: up to {steps} discriminator steps", event)
    payload = {"steps_reserved": steps, "delta": delta, "ledger": ledger.to_dict()}
    write_json(Path(folder) / LEDGER_AHEAD, payload, durable=True, private=True)


def reserved_steps(folder: Path) -> int:
    """The private steps the written-ahead ledger covers (0 when there is none)."""
    path = Path(folder) / LEDGER_AHEAD
    if not path.is_file():
        return 0
    steps = read_json(path).get("steps_reserved")
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 0:
        raise ModelFileError(f"{path} is damaged (no step count); delete the checkpoint folder")
    return steps
