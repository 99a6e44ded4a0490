"""Multi-process DP-SGD on torch.distributed: the seam between the private step and the ranks.

A discriminator step on several processes (``torchrun``; gloo on CPU, NCCL on GPU) is the same
mechanism as on one process with the same global batch, hence the same ledger:

1. each rank holds a contiguous shard of the records (:meth:`GradientReducer.shard`) and
   Poisson-samples it at the GLOBAL rate q with its own generator, so every record is kept
   independently with probability q and the union of the ranks' batches is a Poisson sample of
   the whole data at rate q (``PoissonSampledDpEvent(q, ...)`` holds unchanged);
2. each rank sums the clipped per-example (or per-microbatch) gradients of its real rows and of
   its share of the step's generated rows (:meth:`GradientReducer.share`; generated rows depend
   on no record, every rank draws the same ones from the shared generator);
3. ONE all-reduce (sum) of the flattened clipped sums (:meth:`GradientReducer.sum`): every rank
   now holds the clipped sum over the union, exactly what one process would compute;
4. the noise N(0, sigma^2 C^2) is drawn by every rank from the SHARED generator (seeded
   identically on all ranks), so all ranks add the same draw to the same sum: the noise is
   added once, with total variance sigma^2 C^2, never world_size times it;
5. the division by the expected global batch B and the optimizer step are the same on every
   rank, so the replicas stay identical; the generator's step reads generated rows only and is
   computed on every rank from the shared generator.

Two generators therefore run per rank: the run's generator (shared: identical state on every
rank, for generated rows, noise and everything else one process draws), and a per-rank
*record* generator for draws whose count depends on the rank's real batch (Poisson sampling,
microbatch assignment, WGAN-GP partners and mixing weights). In one process the record
generator IS the run's generator, so one-process runs draw exactly what they always drew.

All ranks must run the whole pipeline with the same seed and the same data: the releases
before refinement are then identical on every rank (one ledger, spent once), and
:func:`check_replicas_agree` refuses a run where they differ. Without a seed, rank 0 draws one
from the operating system and sends it to the others (:meth:`GradientReducer.agree_seed`).
"""

from __future__ import annotations

import hashlib
import os
import secrets
from typing import Any

import torch
from torch import distributed as dist

from dpforge.errors import DpforgeError

SEED_BITS = 62


class GradientReducer:
    """One process: the identity seam (shard = all records, sum = the local sum)."""

    rank = 0
    world_size = 1

    @property
    def is_main(self) -> bool:
        """Whether this rank writes outputs (model folder, budget file, progress)."""
        return self.rank == 0

    def shard(self, n: int) -> slice:
        """This rank's contiguous share of ``n`` items (records, or a step's generated rows)."""
        return slice(n * self.rank // self.world_size, n * (self.rank + 1) // self.world_size)

    def share(self, n: int) -> slice:
        """This rank's share of the ``n`` generated rows of a step (same split as records)."""
        return self.shard(n)

    def sum(self, grads: list[torch.Tensor]) -> list[torch.Tensor]:
        """The sum of ``grads`` over the ranks (here: ``grads`` themselves)."""
        return grads

    def record_generator(self, generator: torch.Generator) -> torch.Generator:
        """The generator for draws that depend on this rank's records (here: the run's own)."""
        return generator

    def agree_seed(self, seed: int | None) -> int | None:
        """The seed every rank runs with (here: ``seed`` unchanged)."""
        return seed

    def broadcast_state(self, parts: dict[str, Any]) -> None:
        """Copy rank 0's networks and optimizer states to every rank (here: nothing to do)."""

    def agree(self, values: list[int], what: str) -> None:
        """Refuse the run unless every rank holds the same integers ``values``."""


ONE_PROCESS = GradientReducer()


class AllReduceReducer(GradientReducer):
    """Several processes of one torch.distributed group: ONE all-reduce (sum) per step."""

    def __init__(self, device: torch.device | str = "cpu") -> None:
        if not dist.is_initialized():
            raise DpforgeError("torch.distributed is not initialised: call join_processes()")
        self.rank = dist.get_rank()
        self.world_size = dist.get_world_size()
        self.device = torch.device(device)

    def sum(self, grads: list[torch.Tensor]) -> list[torch.Tensor]:
        """All-reduce the flattened gradients in one call and split them back."""
        if not grads:
            return grads
        flat = torch.cat([g.reshape(-1) for g in grads])
        dist.all_reduce(flat, op=dist.ReduceOp.SUM)
        sizes = [g.numel() for g in grads]
        return [part.view_as(g) for part, g in zip(torch.split(flat, sizes), grads, strict=True)]

    def record_generator(self, generator: torch.Generator) -> torch.Generator:
        """A per-rank generator seeded from one draw of the shared one, so ranks differ.

        Every rank draws the same value from the shared generator, which keeps that generator
        identical across ranks; the rank is mixed in by a hash, so the streams are unrelated.
        """
        draw = torch.randint(0, 2**SEED_BITS, (1,), generator=generator, device=generator.device)
        digest = hashlib.sha256(f"{int(draw)}:{self.rank}".encode()).digest()
        own = torch.Generator(device=generator.device)
        own.manual_seed(int.from_bytes(digest[:8], "little") >> (64 - SEED_BITS))
        return own

    def agree_seed(self, seed: int | None) -> int | None:
        """Rank 0's seed for every rank; without one, rank 0 draws it from the OS first."""
        value = secrets.randbits(SEED_BITS) if seed is None else int(seed)
        mine = torch.tensor([value], dtype=torch.int64, device=self.device)
        dist.broadcast(mine, src=0)
        if seed is not None and int(mine) != seed:
            raise DpforgeError(
                f"--seed differs between processes (rank {self.rank}); give all the same seed"
            )
        return int(mine)

    def broadcast_state(self, parts: dict[str, Any]) -> None:
        """Rank 0's tensors of every part (network or optimizer), in place on every rank."""
        for name in sorted(parts):
            for tensor in _state_tensors(parts[name].state_dict()):
                self._broadcast_in_place(tensor)

    def _broadcast_in_place(self, tensor: torch.Tensor) -> None:
        """Rank 0's value of ``tensor`` (sent from this rank's device: NCCL needs CUDA)."""
        buffer = tensor.detach().to(self.device)
        dist.broadcast(buffer, src=0)
        if buffer.data_ptr() != tensor.data_ptr():
            with torch.no_grad():
                tensor.copy_(buffer)

    def agree(self, values: list[int], what: str) -> None:
        """All-gather ``values`` (int64) and refuse the run when two ranks differ."""
        mine = torch.tensor(values, dtype=torch.int64, device=self.device)
        gathered = [torch.empty_like(mine) for _ in range(self.world_size)]
        dist.all_gather(gathered, mine)
        if any(not torch.equal(g, gathered[0]) for g in gathered):
            raise DpforgeError(
                f"the processes disagree on {what}: every process must read the same data "
                "with the same options and seed"
            )


def _state_tensors(state: Any) -> list[torch.Tensor]:
    """The tensors of a (nested) state dict, in a fixed order."""
    if isinstance(state, torch.Tensor):
        return [state]
    if isinstance(state, dict):
        return [t for key in sorted(state, key=str) for t in _state_tensors(state[key])]
    if isinstance(state, list | tuple):
        return [t for item in state for t in _state_tensors(item)]
    return []


def join_processes(device: str = "cpu") -> GradientReducer:
    """Join the process group ``torchrun`` describes (WORLD_SIZE > 1), else one process.

    gloo for CPU training, NCCL for CUDA (each rank then trains on ``cuda:LOCAL_RANK``: pass
    :func:`rank_device`'s answer as the Synthesizer's device).
    """
    if int(os.environ.get("WORLD_SIZE", "1")) <= 1:
        return ONE_PROCESS
    cuda = str(device).startswith("cuda")
    if not dist.is_initialized():
        if cuda:
            torch.cuda.set_device(rank_device(device))
        dist.init_process_group(backend="nccl" if cuda else "gloo")
    return current_reducer(rank_device(device))


def rank_device(device: str = "cpu") -> str:
    """``cuda:LOCAL_RANK`` for a CUDA run under torchrun, else ``device`` unchanged.

    Several ranks given one numbered GPU (``cuda:1``) would all train on it; that is refused,
    since the rank's own GPU is the only choice that spreads them.
    """
    several = int(os.environ.get("WORLD_SIZE", "1")) > 1 and "LOCAL_RANK" in os.environ
    if not (several and str(device).startswith("cuda")):
        return str(device)
    own = f"cuda:{int(os.environ['LOCAL_RANK'])}"
    if str(device) not in ("cuda", own):
        raise DpforgeError(
            f"device {device!r} under torchrun: every rank would train on that one GPU; "
            "pass cuda, and each rank takes cuda:LOCAL_RANK"
        )
    return own


def current_reducer(device: torch.device | str = "cpu") -> GradientReducer:
    """The reducer of the joined process group (several ranks), else :data:`ONE_PROCESS`."""
    if dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1:
        return AllReduceReducer(device)
    return ONE_PROCESS


def check_replicas_agree(
    reducer: GradientReducer, seed: int | None, records: list[torch.Tensor | None]
) -> None:
    """Refuse a multi-process run whose ranks would not run the same mechanism.

    The ranks must share the seed (else each would release its own measurements and noise)
    and read the same records (else the shards would not partition one data set). Only a
    hash of the records is compared, never a value.
    """
    if reducer.world_size == 1:
        return
    if seed is None:
        raise DpforgeError(
            "a multi-process fit needs one seed on every process: pass "
            "seed=reducer.agree_seed(None) (the command line does this for you)"
        )
    digest = hashlib.sha256()
    for tensor in records:
        if tensor is not None:
            digest.update(str(tuple(tensor.shape)).encode())
            digest.update(tensor.detach().cpu().contiguous().numpy().tobytes())
    fingerprint = int.from_bytes(digest.digest()[:7], "little")
    reducer.agree([seed % 2**SEED_BITS, fingerprint], "the seed or the data")


def refuse_checkpoints(reducer: GradientReducer) -> None:
    """Checkpoints (and their ledger written ahead) are one process's files: refused on
    several, where every rank would write the same folder."""
    if reducer.world_size > 1:
        raise DpforgeError(
            "--checkpoint-dir is not supported on several processes yet: run without it, or "
            "on one process"
        )
