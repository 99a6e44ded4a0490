"""Larger images (issue 24, part 5): time and peak memory of a default fit on 64x64 grey and
32x32 colour images, next to the sizes and the memory bound planned from public inputs.

Each fit runs in a fresh child process (one torch thread), so its peak resident memory
(``VmHWM``) is its own: the images are drawn procedurally (:mod:`dpforge.datasets.shapes`,
generated, not real), then ``Synthesizer(schema, epsilon=...).fit`` runs with every default,
without a public set (moment anchoring) and with one (perceptual anchoring, another draw of
the same generator). CPU seconds are the child's ``time.process_time`` around the fit::

    OMP_NUM_THREADS=1 nice -n 10 python bench/bench_images_large.py --n 20000 \\
        --public-n 20000 --out bench/results/images_large.json
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import torch

import harness
from dpforge import Synthesizer
from dpforge.data.export import write_images
from dpforge.datasets.shapes import drawn_shapes, shapes_schema
from dpforge.statistics.features import feature_anchor_defaults
from dpforge.statistics.image_sizes import memory_bound, planned_releases


def child(shape: tuple[int, int, int], public_n: int, args: argparse.Namespace) -> dict:
    """One default fit in this process; its figures (and a sample grid next to --out)."""
    torch.set_num_threads(1)
    data = drawn_shapes(args.n, shape, np.random.default_rng(args.seed))
    public = drawn_shapes(public_n, shape, np.random.default_rng(1000 + args.seed))
    synth = Synthesizer(
        shapes_schema(shape), epsilon=args.epsilon, seed=args.seed, progress=False,
        public_data=public if public_n else None,
    )  # fmt: skip
    wall, cpu = time.perf_counter(), time.process_time()
    synth.fit(data)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    peak = _peak_rss()
    config = feature_anchor_defaults("image", bool(public_n))
    plans = planned_releases(shape, 3, config, args.n)
    bound = memory_bound(shape, 3, config, args.n, public_n)
    sample = synth.sample(60, seed=0)
    name = "x".join(map(str, shape)) + ("_public" if public_n else "")
    grid = args.out.with_name(f"{args.out.stem}_{name}")
    write_images(sample, grid, png=False, npz=False, overwrite=True)
    return {
        "shape": shape, "public_n": public_n, "n": args.n, "epsilon": args.epsilon,
        "cpu_seconds": cpu, "wall_seconds": wall, "peak_rss_bytes": peak,
        "memory_bound_bytes": bound, "planned": [p.__dict__ for p in plans],
        "ledger": [entry.name for entry in synth.ledger_.entries],
        "epsilon_spent": synth.ledger_.report(synth.delta).epsilon,
        "grid": str(grid / "grid.png"),
    }  # fmt: skip


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, default=20000, help="private images per shape")
    p.add_argument("--public-n", type=int, default=20000, help="public images (0: none)")
    p.add_argument("--epsilon", type=float, default=10.0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--shapes", default="1x64x64,3x32x32", help="CxHxW, comma-separated")
    p.add_argument("--child", default=None, help="internal: SHAPE,PUBLIC_N of one fit")
    harness.add_out(p, Path("bench/results/images_large.json"))
    return p.parse_args(argv)


def _peak_rss() -> int:
    """This process's peak RSS in bytes (VmHWM). Not ru_maxrss: Linux carries the spawning
    process's peak into a child's ru_maxrss across exec."""
    with open("/proc/self/status") as status:
        line = next(row for row in status if row.startswith("VmHWM:"))
    return int(line.split()[1]) * 1024


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if args.child:
        *shape, public_n = (int(v) for v in args.child.split(","))
        print(json.dumps(harness.jsonable(child(tuple(shape), public_n, args))))
        return
    record = harness.provenance(__file__, argv)
    record["rows"] = []
    for shape in [tuple(int(v) for v in text.split("x")) for text in args.shapes.split(",")]:
        for public_n in sorted({0, args.public_n}):
            spec = ",".join(map(str, (*shape, public_n)))
            cmd = [sys.executable, __file__, *(argv or sys.argv[1:]), "--child", spec]
            done = subprocess.run(cmd, capture_output=True, text=True, check=True)
            record["rows"].append(json.loads(done.stdout.strip().splitlines()[-1]))
            harness.write_results(args.out, record, TITLE, table(record["rows"]))


TITLE = "Larger images: time and peak memory of a default fit (issue 24, part 5)"


def table(rows: list[dict]) -> list[str]:
    lines = [
        "| shape | public set | images | CPU s (fit) | wall s | peak RSS MiB | bound MiB | "
        "released values (planned) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        values = " + ".join(f"{p['values']:,}" for p in r["planned"])
        lines.append(
            f"| {'x'.join(map(str, r['shape']))} | {r['public_n'] or 'none'} | {r['n']:,} | "
            f"{r['cpu_seconds']:.0f} | {r['wall_seconds']:.0f} | "
            f"{r['peak_rss_bytes'] / 2**20:.0f} | {r['memory_bound_bytes'] / 2**20:.0f} | "
            f"{values} |"
        )
    return lines


if __name__ == "__main__":
    main()
