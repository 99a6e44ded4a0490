"""What the balanced draw costs (issue 22): CPU seconds and peak memory of sampling a table with
``ReweightSettings(balance=0)`` (the sorted systematic draw) and then with the default (40
rounds of exchanges), from one fit, in one process; the peak is the process's high-water mark
(VmHWM), read before and after each sampling. One JSON line per sampling in ``--out``.

    OMP_NUM_THREADS=1 python bench/matching_cost.py adult --epsilon 3 --rows 20000 \
        --out results/matching_cost.jsonl
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch

import harness
from dpforge.statistics.reweight import ReweightSettings
from tables_runs import SAMPLE_SEED, load_dataset, timed_fit

VARIANTS = {"sorted": ReweightSettings(balance=0), "balanced": ReweightSettings()}


def high_water_mb() -> float:
    """This process's peak resident memory so far (VmHWM), in MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM in /proc/self/status")


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("table")
    p.add_argument("--epsilon", type=float, default=3.0)
    p.add_argument("--rows", type=int, default=20_000)
    harness.add_data_dir(p)
    harness.add_out(p, harness.RESULTS / "matching_cost.jsonl")
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    data = load_dataset(args.table, harness.data_dir(args.data_dir))
    synth = timed_fit(data, args.epsilon, 0)[0]
    for tag, move in VARIANTS.items():
        before, cpu = high_water_mb(), time.process_time()
        synth.sample(args.rows, seed=SAMPLE_SEED, move=move)
        row = {"table": args.table, "epsilon": args.epsilon, "rows": args.rows, "variant": tag,
               "sample_cpu_seconds": round(time.process_time() - cpu, 1),
               "peak_mb_before": round(before), "peak_mb_after": round(high_water_mb()),
               "command": harness.command_line(__file__, argv)}  # fmt: skip
        harness.append_jsonl(args.out, row)
        print(row, flush=True)


if __name__ == "__main__":
    main()
