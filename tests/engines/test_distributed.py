"""Multi-process DP-SGD (dpforge.distributed): 2 gloo processes against one process.

Two ranks are spawned on localhost (torch.multiprocessing, gloo). They train DP-CGAN and
DP-WGAN-GP for a few steps on scikit-learn's breast-cancer records and fit a discriminator-only
Synthesizer; what they did is written to files (safetensors, JSON) and checked here against one
process: (1) the all-reduced clipped sum is the one-process sum over the union of the ranks'
Poisson samples, (2) the noise is one draw of total variance sigma^2 C^2, the same on every
rank, (3) the replicas end identical, (4) the ledger is the one-process ledger.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch
import torch.multiprocessing as mp
from safetensors.torch import load_file, save_file
from torch import distributed as dist

import dpforge
from dpforge.data.encoder import TableEncoder
from dpforge.data.tables import validate_table
from dpforge.distributed import AllReduceReducer, GradientReducer
from dpforge.methods.dpcgan import DPCGAN, DPCGANConfig
from dpforge.methods.dpwgan import DPWGAN, DPWGANConfig
from dpforge.privacy.noise import make_generator
from dpforge.training import TrainingPlan, train

pytestmark = pytest.mark.slow  # two spawned processes import torch and dpforge: ~10-40 s

WORLD = 2
STEPS = 4
SIGMA, CLIP, BATCH = 1.3, 1.0, 32


# -- what every rank (and the one-process reference) builds ----------------------------------------
def _table():
    """The conftest's breast-cancer table (a fixture there: called here in each process)."""
    from tests.conftest import cancer

    return cancer.__wrapped__()


def _cancer():
    frame, schema = _table()
    encoder = TableEncoder(schema)
    features, labels = encoder.transform(validate_table(frame, schema))
    return encoder, torch.as_tensor(features, dtype=torch.float32), torch.as_tensor(labels)


class Recording(GradientReducer):
    """Keeps what the all-reduce returned (one process: the local sum)."""

    def __init__(self) -> None:
        self.sums: list[list[torch.Tensor]] = []

    def sum(self, grads):
        out = super().sum(grads)
        self.sums.append([g.clone() for g in out])
        return out


class RecordingAllReduce(AllReduceReducer):
    def __init__(self) -> None:
        super().__init__()
        self.sums: list[list[torch.Tensor]] = []

    def sum(self, grads):
        out = super().sum(grads)
        self.sums.append([g.clone() for g in out])
        return out


def _logged(cls):
    """The method with each step's inputs and its noisy gradient written down."""

    class Logged(cls):
        def discriminator_step(self, real_rows, real_labels, step, generator):
            self.log.append(
                {
                    "real": real_rows.clone(),
                    "labels": real_labels.clone(),
                    "rng": generator.get_state(),
                    "nets": [p.detach().clone() for p in self._nets()],
                }
            )
            return super().discriminator_step(real_rows, real_labels, step, generator)

        def apply_d_gradients(self, summed, units):
            self.log[-1]["noisy"] = [g.clone() for g in summed]
            super().apply_d_gradients(summed, units)

        def _nets(self):
            return list(self.generator.parameters()) + list(self.discriminator.parameters())

    return Logged


def _method(name: str, encoder):
    if name == "dpcgan":
        config = DPCGANConfig(batch_size=BATCH, clip_norm=CLIP, latent_dim=8)
    else:
        config = DPWGANConfig(batch_size=BATCH, clip_norm=CLIP, latent_dim=8, d_steps=2)
    cls = _logged(DPCGAN if name == "dpcgan" else DPWGAN)
    method = cls(config, encoder.layout, encoder.n_classes, torch.tensor([0.5, 0.5]), SIGMA)
    method.log = []
    init = make_generator(7)
    with torch.no_grad():
        for p in method._nets():
            p.copy_(torch.randn(p.shape, generator=init) * 0.3)
    return method


def _state(method) -> dict[str, torch.Tensor]:
    out = {}
    for name, part in method.state_parts().items():
        for key, value in part.state_dict().items():
            if isinstance(value, torch.Tensor):
                out[f"{name}.{key}"] = value.detach().clone()
    for i, entry in enumerate(method.d_optimizer.state.values()):
        for key, value in entry.items():
            out[f"d_optimizer.state.{i}.{key}"] = torch.as_tensor(value).clone()
    return out


def _fit(device_seed: int) -> dpforge.Synthesizer:
    frame, schema = _table()
    config = DPCGANConfig(batch_size=64, latent_dim=8, generator_hidden=(32,))
    return dpforge.Synthesizer(
        schema,
        method="dpcgan",
        anchor=None,
        epsilon=6.0,
        delta=1e-5,
        epochs=12.0,
        method_options=config,
        seed=device_seed,
        progress=False,
    ).fit(frame)


# -- the ranks ------------------------------------------------------------------------------
def _rank(rank: int, folder: str) -> None:
    torch.set_num_threads(1)
    dist.init_process_group(
        "gloo", init_method=f"file://{folder}/rendezvous", rank=rank, world_size=WORLD
    )
    try:
        encoder, x, y = _cancer()
        for name in ("dpcgan", "dpwgan"):
            method, reducer = _method(name, encoder), RecordingAllReduce()
            plan = TrainingPlan(STEPS, BATCH / len(x), SIGMA)
            train(method, x, y, plan, make_generator(11), progress=False, reducer=reducer)
            _save_run(Path(folder) / f"{name}{rank}", method, reducer)
    finally:
        dist.destroy_process_group()


def _fit_rank(rank: int, folder: str) -> None:
    torch.set_num_threads(1)
    dist.init_process_group(
        "gloo", init_method=f"file://{folder}/rendezvous", rank=rank, world_size=WORLD
    )
    try:
        synth = _fit(5)
        (Path(folder) / f"ledger{rank}.json").write_text(json.dumps(synth.ledger_.to_dict()))
        save_file(
            {k: v.contiguous() for k, v in synth.generator_.state_dict().items()},
            str(Path(folder) / f"fit{rank}.safetensors"),
        )
    finally:
        dist.destroy_process_group()


def _save_run(prefix: Path, method, reducer) -> None:
    tensors = {f"state.{k}": v.contiguous() for k, v in _state(method).items()}
    for t, (entry, summed) in enumerate(zip(method.log, reducer.sums, strict=True)):
        tensors[f"{t}.real"], tensors[f"{t}.labels"] = entry["real"], entry["labels"]
        tensors[f"{t}.rng"] = entry["rng"]
        for i, p in enumerate(entry["nets"]):
            tensors[f"{t}.net.{i}"] = p
        for i, (g, n) in enumerate(zip(summed, entry["noisy"], strict=True)):
            tensors[f"{t}.sum.{i}"], tensors[f"{t}.noisy.{i}"] = g, n
    save_file({k: v.contiguous() for k, v in tensors.items()}, f"{prefix}.safetensors")


@pytest.fixture(scope="module")
def ranks(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("ranks")
    mp.spawn(_rank, args=(str(folder),), nprocs=WORLD, join=True)
    return folder


@pytest.fixture(scope="module")
def fitted_ranks(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("fitted")
    mp.spawn(_fit_rank, args=(str(folder),), nprocs=WORLD, join=True)
    return folder


def _run(folder: Path, name: str, rank: int) -> dict[str, torch.Tensor]:
    return load_file(str(folder / f"{name}{rank}.safetensors"))


def _steps(run: dict[str, torch.Tensor]) -> int:
    return 1 + max(int(k.split(".")[0]) for k in run if k[0].isdigit())


def _tensors(run, prefix: str) -> list[torch.Tensor]:
    keys = sorted((k for k in run if k.startswith(prefix)), key=lambda k: int(k.rsplit(".")[-1]))
    return [run[k] for k in keys]


# -- (1) the all-reduced clipped sum is the one-process sum over the union ------------------------
def test_the_all_reduced_sum_and_noise_are_one_process_over_the_union(ranks):
    encoder, _, _ = _cancer()
    runs = [_run(ranks, "dpcgan", r) for r in range(WORLD)]
    for t in range(_steps(runs[0])):
        assert torch.equal(runs[0][f"{t}.rng"], runs[1][f"{t}.rng"])  # shared generator in step
        method, reducer = _method("dpcgan", encoder), Recording()
        method.reducer = reducer
        with torch.no_grad():
            for p, v in zip(method._nets(), _tensors(runs[0], f"{t}.net."), strict=True):
                p.copy_(v)
        real = torch.cat([r[f"{t}.real"] for r in runs])
        labels = torch.cat([r[f"{t}.labels"] for r in runs])
        generator = torch.Generator()
        generator.set_state(runs[0][f"{t}.rng"])
        method.discriminator_step(real, labels, t, generator)
        one_sum, one_noisy = reducer.sums[0], method.log[0]["noisy"]
        for rank_run in runs:
            for a, b in zip(_tensors(rank_run, f"{t}.sum."), one_sum, strict=True):
                torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)
            for a, b in zip(_tensors(rank_run, f"{t}.noisy."), one_noisy, strict=True):
                torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)


# -- (2) the noise: one draw, the same on every rank, total variance sigma^2 C^2 ------------------
@pytest.mark.parametrize("name", ["dpcgan", "dpwgan"])
def test_the_noise_is_added_once_with_the_right_variance(ranks, name):
    runs = [_run(ranks, name, r) for r in range(WORLD)]
    noises = []
    for t in range(_steps(runs[0])):
        per_rank = [
            torch.cat(
                [
                    (n - s).flatten()
                    for n, s in zip(
                        _tensors(r, f"{t}.noisy."), _tensors(r, f"{t}.sum."), strict=True
                    )
                ]
            )  # fmt: skip
            for r in runs
        ]
        torch.testing.assert_close(per_rank[0], per_rank[1], rtol=0, atol=1e-5)
        noises.append(per_rank[0].double())
    noise = torch.cat(noises)
    variance, target = float(noise.var()), (SIGMA * CLIP) ** 2
    # ~4,000 coordinates per step: the sample variance is within 3% of the true one (> 6 s.e.);
    # noise added on each rank before the all-reduce would give twice the target.
    assert abs(variance / target - 1) < 0.06 * math.sqrt(4000 * 4 / noise.numel()) + 0.02
    assert abs(float(noise.mean())) < 6 * SIGMA * CLIP / math.sqrt(noise.numel())


# -- (3) the replicas end identical ------------------------------------------------------
@pytest.mark.parametrize("name", ["dpcgan", "dpwgan"])
def test_the_replicas_end_identical(ranks, name):
    states = [
        {k: v for k, v in _run(ranks, name, r).items() if k.startswith("state.")} for r in (0, 1)
    ]
    assert states[0].keys() == states[1].keys() and any("discriminator" in k for k in states[0])
    for key in states[0]:
        assert torch.equal(states[0][key], states[1][key]), key
    reals = [_run(ranks, name, r)["0.real"] for r in (0, 1)]
    assert not torch.equal(reals[0], reals[1])  # each rank sampled its own shard


# -- (4) the ledger is the one-process ledger; the fitted generators agree -----------------------
@pytest.mark.slow
def test_the_ledger_is_the_one_process_ledger(fitted_ranks):
    ledgers = [json.loads((fitted_ranks / f"ledger{r}.json").read_text()) for r in range(WORLD)]
    one_process = _fit(5)
    assert ledgers[0] == ledgers[1] == one_process.ledger_.to_dict()
    fitted = [load_file(str(fitted_ranks / f"fit{r}.safetensors")) for r in range(WORLD)]
    for key in fitted[0]:
        assert torch.equal(fitted[0][key], fitted[1][key]), key
