"""Which GPU a torchrun rank trains on (dpforge.distributed.rank_device), without a GPU."""

from __future__ import annotations

import pytest

from dpforge.distributed import rank_device
from dpforge.errors import DpforgeError


def _torchrun(monkeypatch: pytest.MonkeyPatch, local_rank: int, world: int) -> None:
    monkeypatch.setenv("LOCAL_RANK", str(local_rank))
    monkeypatch.setenv("WORLD_SIZE", str(world))


def test_one_process_keeps_the_device_it_was_given(monkeypatch):
    monkeypatch.delenv("LOCAL_RANK", raising=False)
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    assert [rank_device(d) for d in ("cpu", "cuda", "cuda:1")] == ["cpu", "cuda", "cuda:1"]


def test_each_rank_takes_its_own_gpu(monkeypatch):
    _torchrun(monkeypatch, local_rank=3, world=4)
    assert rank_device("cuda") == "cuda:3"
    assert rank_device(rank_device("cuda")) == "cuda:3"  # mapping twice changes nothing
    assert rank_device("cpu") == "cpu"


def test_one_numbered_gpu_for_several_ranks_is_refused(monkeypatch):
    _torchrun(monkeypatch, local_rank=0, world=2)
    with pytest.raises(DpforgeError, match="pass cuda, and each rank takes cuda:LOCAL_RANK"):
        rank_device("cuda:1")


def test_a_single_torchrun_rank_keeps_the_gpu_it_names(monkeypatch):
    _torchrun(monkeypatch, local_rank=0, world=1)
    assert rank_device("cuda:1") == "cuda:1"
