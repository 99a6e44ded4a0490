"""Peak memory (ru_maxrss) after each phase of the default table fit (marginal anchoring).

Wraps each stage of the pipeline (dpforge.pipeline: measure, fit, refine, release) to print the
process's peak RSS before and after it, to find where fitting a large table spends its memory
(issue 14, Scale). Diagnostic only: it changes nothing in the fit.

    head -100001 /tmp/bench_memory_fit/big.csv > /tmp/big100k.csv   # from bench_memory.py
    OMP_NUM_THREADS=1 nice -n 5 python bench/fit_memory_phases.py /tmp/big100k.csv \
        /tmp/bench_memory_fit/schema.json
"""

from __future__ import annotations

import argparse
import resource

import pandas as pd

import dpforge.pipeline as pipeline
import harness
from dpforge import Synthesizer
from dpforge.schema.array import load_schema

STAGES = {
    "measure_stage": ("check_records", "release_size", "measure", "measure_adaptive"),
    "fit_stage": ("build_method", "fit"),
    "refine_stage": ("refine",),
    "release_stage": ("release",),
}


CLOCK = harness.Timer()  # the seconds each line shows: since the start


def report(tag: str) -> None:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"{CLOCK.elapsed:8.1f} s {tag}: peak RSS {peak:.0f} MB", flush=True)


def traced(function, name: str):
    def wrapper(*args, **kwargs):
        report(f"before {name}")
        result = function(*args, **kwargs)
        report(f"after {name}")
        return result

    return wrapper


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("data", help="the table (CSV) to fit")
    p.add_argument("schema", help="its schema (JSON)")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    for stage, names in STAGES.items():
        module = getattr(pipeline, stage)
        for name in names:
            setattr(module, name, traced(getattr(module, name), f"{stage}.{name}"))
    report("start")
    frame = pd.read_csv(args.data)
    report("read_csv")
    synth = Synthesizer(load_schema(args.schema), epsilon=3.0, delta=1e-7, seed=args.seed)
    synth.progress = False
    synth.fit(frame)
    report("end of fit")


if __name__ == "__main__":
    main()
