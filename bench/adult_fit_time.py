"""Fit time on Adult, old code against new, alternately in one command (issue 21, done means).

Each fit runs in a fresh child process (``--child SRC``) that imports dpforge from ``SRC``,
loads Adult the default way (``load_adult()``: balanced, 15,016 training rows), and times
``Synthesizer(schema, epsilon=1.0, seed=0).fit(train)`` (library defaults otherwise): process CPU
time and wall time of the fit alone (loading excluded). The parent runs the two sources in
alternating order (old, new, new, old, ...) so that load on the shared machine affects both
alike, and reports per-round ratios new / old and their median. OMP_NUM_THREADS=1 and
torch.set_num_threads(1) in every child.

    OMP_NUM_THREADS=1 nice -n 10 python bench/adult_fit_time.py \\
        --old /work/wt/messy-old/src --new src --rounds 3
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

CHILD_MARK = "FIT_TIME "


def child(seed: int, steps: int | None) -> None:
    """Load Adult, time one default fit at epsilon 1 (``steps``: the anchor steps instead of
    the code's default), print the figures as one JSON line."""
    import torch

    from dpforge.datasets.adult import load_adult
    from dpforge.statistics.anchor import AnchorConfig
    from dpforge.synthesizer import Synthesizer

    torch.set_num_threads(1)
    train, _, schema = load_adult()
    anchor = "auto" if steps is None else AnchorConfig(steps=steps)
    synth = Synthesizer(schema, epsilon=1.0, seed=seed, progress=False, anchor=anchor)
    cpu, wall = time.process_time(), time.perf_counter()
    synth.fit(train)
    figures = {
        "cpu_s": time.process_time() - cpu,
        "wall_s": time.perf_counter() - wall,
        "rows": len(train),
        "epsilon_spent": synth.privacy_spent().epsilon,
    }
    print(CHILD_MARK + json.dumps(figures), flush=True)


def run_child(src: Path, seed: int, steps: int | None) -> dict:
    """One fit in a fresh process importing dpforge from ``src``."""
    env = {**os.environ, "PYTHONPATH": str(src), "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    command = [sys.executable, __file__, "--child", str(src), "--seed", str(seed)]
    command += [] if steps is None else ["--steps", str(steps)]
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith(CHILD_MARK)]
    if done.returncode != 0 or not lines:
        raise RuntimeError(f"fit with {src} failed:\n{done.stderr[-2000:]}")
    return json.loads(lines[-1][len(CHILD_MARK) :])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child", type=Path, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--old", type=Path, default=Path("/work/wt/messy-old/src"))
    parser.add_argument("--new", type=Path, default=Path(__file__).resolve().parents[1] / "src")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--steps", type=int, default=None, help="anchor steps for both codes")
    parser.add_argument(
        "--first", choices=("old", "new"), default="old", help="first round's first"
    )
    parser.add_argument("--out", type=Path, default=None, help="JSON results, written per fit")
    args = parser.parse_args(argv)
    if args.child is not None:
        child(args.seed, args.steps)
        return
    sources = {"old": args.old.resolve(), "new": args.new.resolve()}
    runs: list[dict] = []
    for r in range(args.rounds):
        order = ("old", "new") if (r % 2 == 0) == (args.first == "old") else ("new", "old")
        for name in order:
            run = {"round": r, "code": name, "src": str(sources[name])}
            run.update(run_child(sources[name], args.seed, args.steps))
            runs.append(run)
            print(json.dumps(run), flush=True)
            if args.out is not None:
                args.out.write_text(json.dumps({"argv": sys.argv, "runs": runs}, indent=1))
    summary = ratios(runs, args.rounds)
    print(json.dumps(summary, indent=1))
    if args.out is not None:
        args.out.write_text(json.dumps({"argv": sys.argv, "runs": runs, **summary}, indent=1))


def ratios(runs: list[dict], rounds: int) -> dict:
    """Per-round new / old ratios of CPU and wall time, and their medians."""
    out: dict = {"cpu_ratio": [], "wall_ratio": []}
    for r in range(rounds):
        pair = {run["code"]: run for run in runs if run["round"] == r}
        out["cpu_ratio"].append(pair["new"]["cpu_s"] / pair["old"]["cpu_s"])
        out["wall_ratio"].append(pair["new"]["wall_s"] / pair["old"]["wall_s"])
    out["median_cpu_ratio"] = statistics.median(out["cpu_ratio"])
    out["median_wall_ratio"] = statistics.median(out["wall_ratio"])
    return out


if __name__ == "__main__":
    main()
