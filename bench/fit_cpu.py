"""CPU seconds of one default fit of a benchmark table, on one torch thread (issue 22, speed).

Run it once per source tree with ``PYTHONPATH=<tree>/src`` to compare two versions of the code
side by side on the same machine (a warm-up fit on 60 rows first, so that imports and first
calls are not counted). One JSON line per fit goes to ``--log``. Example::

    for tree in /tmp/before /tmp/after; do
        OMP_NUM_THREADS=1 PYTHONPATH=$tree/src python fit_cpu.py psid --epsilon 3 --seed 0
    done
"""

from __future__ import annotations

import argparse
import time

import torch

import dpforge
import harness
from dpforge import Synthesizer
from tables_runs import load_dataset


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("table")
    p.add_argument("--epsilon", type=float, default=3.0)
    p.add_argument("--seed", type=int, default=0)
    harness.add_data_dir(p)
    p.add_argument("--log", default="results/anchor_speed_s32_cpu.jsonl")
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    data = load_dataset(args.table, harness.data_dir(args.data_dir))
    Synthesizer(data.schema, epsilon=args.epsilon, delta=1e-5, seed=5, progress=False).fit(
        data.train.head(60)
    )
    start = time.process_time()
    Synthesizer(data.schema, epsilon=args.epsilon, delta=1e-5, seed=args.seed, progress=False).fit(
        data.train
    )
    row = {
        "tree": dpforge.__file__.split("/src/")[0], "table": args.table,
        "epsilon": args.epsilon, "seed": args.seed,
        "fit_cpu_s": round(time.process_time() - start, 2), "started": harness.now(),
    }  # fmt: skip
    print(row, flush=True)
    harness.append_jsonl(args.log, row)


if __name__ == "__main__":
    main()
