"""Speed-up of multi-process DP-SGD (dpforge.distributed): 1 process vs 2 gloo processes.

A discriminator-only DP-CGAN fit's training loop (``dpforge.training.train``, the code the
refine stage runs) on scikit-learn's breast-cancer table (all 30 columns, 569 rows), at a
large expected batch so that a step has work to split. Only the loop is timed, after a
barrier (imports, data and network set-up excluded). One process runs with 1 and with 2 torch
threads, each of 2 processes with 1 thread: on a 2-core machine that is the fair comparison.

    python bench/bench_distributed.py --steps 200
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
import torch.multiprocessing as mp
from torch import distributed as dist

sys.path.insert(0, str(Path(__file__).resolve().parent))
import harness  # noqa: E402
from dpforge.data.encoder import TableEncoder  # noqa: E402
from dpforge.data.tables import validate_table  # noqa: E402
from dpforge.distributed import ONE_PROCESS, AllReduceReducer  # noqa: E402
from dpforge.methods.dpcgan import DPCGAN, DPCGANConfig  # noqa: E402
from dpforge.privacy.noise import make_generator  # noqa: E402
from dpforge.schema.table import Column, Schema  # noqa: E402
from dpforge.training import TrainingPlan, train  # noqa: E402


def _data():
    """The breast-cancer table as encoded features (bench only: bounds read from the data)."""
    from sklearn.datasets import load_breast_cancer

    raw = load_breast_cancer(as_frame=True)
    frame = raw.data.copy()
    frame.columns = [f"c{i}" for i in range(frame.shape[1])]
    columns = tuple(
        Column(
            c,
            "continuous",
            lower=float(np.floor(frame[c].min())),
            upper=float(np.ceil(frame[c].max())),
        )
        for c in frame.columns
    )
    frame["y"] = raw.target.astype(str)
    classes = Column("y", "categorical", categories=("0", "1"))
    schema = Schema((*columns, classes), label="y", label_prior="uniform")
    encoder = TableEncoder(schema)
    x, y = encoder.transform(validate_table(frame, schema))
    return encoder, torch.as_tensor(x, dtype=torch.float32), torch.as_tensor(y)


def _loop(args: argparse.Namespace, reducer) -> float:
    """Seconds the training loop takes (networks seeded alike on every rank)."""
    encoder, x, y = _data()
    config = DPCGANConfig(
        batch_size=args.batch, discriminator_hidden=(args.width, args.width), latent_dim=32
    )
    method = DPCGAN(config, encoder.layout, encoder.n_classes, torch.tensor([0.5, 0.5]), 1.0)
    plan = TrainingPlan(args.steps, min(1.0, args.batch / len(x)), 1.0)
    if reducer is not ONE_PROCESS:
        dist.barrier()
    started = time.perf_counter()
    train(method, x, y, plan, make_generator(0), progress=False, reducer=reducer)
    return time.perf_counter() - started


def _rank(rank: int, world: int, folder: str, args: argparse.Namespace) -> None:
    torch.set_num_threads(1)
    init = f"file://{folder}/rendezvous"
    dist.init_process_group("gloo", init_method=init, rank=rank, world_size=world)
    try:
        seconds = _loop(args, AllReduceReducer())
        (Path(folder) / f"rank{rank}.json").write_text(json.dumps(seconds))
    finally:
        dist.destroy_process_group()


def _processes(world: int, args: argparse.Namespace) -> float:
    with tempfile.TemporaryDirectory() as folder:
        mp.spawn(_rank, args=(world, folder, args), nprocs=world, join=True)
        return max(json.loads((Path(folder) / f"rank{r}.json").read_text()) for r in range(world))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--batch", type=int, default=256, help="expected batch B (q = B / 569)")
    parser.add_argument("--width", type=int, default=256, help="discriminator hidden width")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=harness.RESULTS / "distributed.json")
    args = parser.parse_args(argv)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    runs: dict[str, list[float]] = {"1 process, 1 thread": [], "1 process, 2 threads": []}
    runs["2 processes, 1 thread each"] = []
    for _ in range(args.repeats):
        for threads in (1, 2):
            torch.set_num_threads(threads)
            runs[f"1 process, {threads} thread{'s' if threads > 1 else ''}"].append(
                _loop(args, ONE_PROCESS)
            )
        runs["2 processes, 1 thread each"].append(_processes(2, args))
    best = {k: min(v) for k, v in runs.items()}
    base = best["1 process, 1 thread"]
    record = {
        **harness.provenance(__file__, argv),
        "settings": vars(args) | {"out": str(args.out)},
        "seconds": runs,
        "best_seconds": best,
        "speedup_vs_1_thread": {k: base / v for k, v in best.items()},
        "load_average": os.getloadavg(),
    }
    body = [
        "| setting | best of runs (s) | all runs (s) | speed-up vs 1 process, 1 thread |",
        "|---|---|---|---|",
        *(
            f"| {k} | {best[k]:.2f} | {', '.join(f'{s:.2f}' for s in v)} | {base / best[k]:.2f}x |"
            for k, v in runs.items()
        ),
        "",
        f"{args.steps} DP-CGAN steps (B = {args.batch}, discriminator {args.width}x{args.width}), "
        f"load average during the run {', '.join(f'{v:.1f}' for v in os.getloadavg())}.",
    ]
    harness.write_results(args.out, record, "Multi-process DP-SGD: speed-up", body)
    print("\n".join(body))


if __name__ == "__main__":
    main()
