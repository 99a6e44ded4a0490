"""Start-up cost of dpforge's package and command line: CPU (user + sys of the child process)
and wall seconds of each case, the median and range over ``--repeats`` fresh interpreters.

    OMP_NUM_THREADS=1 python bench/cli_startup.py SRC --repeats 3 [--log results/x.jsonl]

SRC is the ``src`` folder to time (put on PYTHONPATH); time a copy of an older commit's ``src``
back to back with the current one to compare (bench/results/cli_startup/cli_startup.md).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time

from lib import harness

CASES = {
    "import dpforge": ["-c", "import dpforge"],
    "import dpforge.cli": ["-c", "import dpforge.cli"],
    "dpforge --help": ["-m", "dpforge.cli", "--help"],
    "dpforge fit --help": ["-m", "dpforge.cli", "fit", "--help"],
    "dpforge audit --help": ["-m", "dpforge.cli", "audit", "--help"],
}


def timed(args: list[str], env: dict[str, str]) -> tuple[float, float]:
    """CPU and wall seconds of one child interpreter running ``args`` (at nice 10)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    command = ["nice", "-n", "10", sys.executable, *args]
    subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return cpu, wall


def summary(values: list[float]) -> dict[str, float]:
    return {"median": round(statistics.median(values), 3),
            "min": round(min(values), 3), "max": round(max(values), 3)}  # fmt: skip


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("src", help="the src folder to time")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--log", default=None, help="also append the rows to this JSON-lines file")
    a = p.parse_args()
    env = {**os.environ, "PYTHONPATH": a.src, "OMP_NUM_THREADS": "1"}
    for name, args in CASES.items():
        cpu, wall = zip(*(timed(args, env) for _ in range(a.repeats)), strict=True)
        row = dict(case=name, src=a.src, repeats=a.repeats, cpu_s=summary(list(cpu)),
                   wall_s=summary(list(wall)), command=harness.command_line(__file__))  # fmt: skip
        if a.log:
            harness.log_row(a.log, row)
        else:
            print(row, flush=True)


if __name__ == "__main__":
    main()
