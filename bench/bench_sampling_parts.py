"""Sampling at scale (issue 23.1): rows per second and peak memory per worker of
``dpforge sample -n N --format parquet --partitions P --workers W``.

A marginal-anchored model is fitted once on scikit-learn's breast-cancer table (31 columns,
declared bounds: a bench-only schema) unless ``--model`` names a model folder. Each setting
then runs in a fresh Python process (so that peak memory is its own): the parts are written
by :func:`dpforge.data.parts.write_parts`, and the process reports its wall time and the
largest resident set of itself and of its worker processes (``getrusage``).

    python bench/bench_sampling_parts.py --rows 1000000,10000000 --workers 1,2,4
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import harness  # noqa: E402

_ONE = """
import json, resource, sys, time
from pathlib import Path
from dpforge.data.parts import PartsRequest, write_parts
model, rows, parts, workers, out = sys.argv[1:6]
started = time.perf_counter()
write_parts(PartsRequest(Path(model), int(rows), int(parts), "parquet", 0), Path(out),
            workers=int(workers))
seconds = time.perf_counter() - started
size = sum(p.stat().st_size for p in Path(out).iterdir())
print(json.dumps({"seconds": seconds, "bytes": size,
                  "peak_mb_self": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "peak_mb_worker": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024}))
"""


def _fit(folder: Path) -> Path:
    """A marginal-anchored model of the breast-cancer table (bench only: bounds read from
    the data, so the model is not private; it only has to sample like a real one)."""
    from sklearn.datasets import load_breast_cancer

    from dpforge.schema.table import Column, Schema
    from dpforge.statistics.anchor import AnchorConfig
    from dpforge.synthesizer import Synthesizer

    raw = load_breast_cancer(as_frame=True)
    frame = raw.data.copy()
    frame.columns = [f"c{i}" for i in range(frame.shape[1])]
    columns = [
        Column(c, "continuous", lower=float(np.floor(frame[c].min())),
               upper=float(np.ceil(frame[c].max())))
        for c in frame.columns
    ]  # fmt: skip
    frame["y"] = np.where(raw.target == 1, "benign", "malignant")
    schema = Schema((*columns, Column("y", "categorical", categories=("benign", "malignant"))),
                    label="y", label_prior="uniform")  # fmt: skip
    anchor = AnchorConfig(steps=100, batch_size=256)  # sampling speed, not quality, is measured
    synth = Synthesizer(schema, epsilon=3.0, seed=0, progress=False, anchor=anchor)
    return synth.fit(frame).save(folder / "model")


def _one(model: Path, rows: int, parts: int, workers: int, scratch: Path) -> dict:
    out = scratch / f"parts-{rows}-{workers}"
    script = [sys.executable, "-c", _ONE, str(model), str(rows), str(parts), str(workers), str(out)]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    result = subprocess.run(script, capture_output=True, text=True, check=True, env=env)
    subprocess.run(["rm", "-rf", str(out)], check=True)
    return json.loads(result.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=harness.floats, default=(1e6, 1e7))
    parser.add_argument("--workers", type=harness.widths, default=(1, 2))
    parser.add_argument("--partitions", type=int, default=8)
    parser.add_argument("--model", type=Path, default=None, help="a model folder (else fitted)")
    harness.add_out(parser, harness.RESULTS / "sampling_parts.json")
    args = parser.parse_args(argv)
    runs = []
    with tempfile.TemporaryDirectory() as scratch:
        model = args.model or _fit(Path(scratch))
        for rows in (int(r) for r in args.rows):
            for workers in args.workers:
                run = _one(model, rows, args.partitions, workers, Path(scratch))
                runs.append({"rows": rows, "workers": workers, **run})
                print(json.dumps(runs[-1]), flush=True)
    record = {**harness.provenance(__file__, argv), "partitions": args.partitions, "runs": runs,
              "load_average": os.getloadavg()}  # fmt: skip
    harness.write_results(args.out, record, "Sampling at scale: Parquet parts", _table(runs, args))


def _table(runs: list[dict], args: argparse.Namespace) -> list[str]:
    lines = [
        "| rows | workers | seconds | rows/s | Parquet MB | peak MB (parent) | peak MB (worker) |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in runs:
        worker = r["peak_mb_worker"] if r["workers"] > 1 else r["peak_mb_self"]
        lines.append(
            f"| {r['rows']:,} | {r['workers']} | {r['seconds']:.1f} | "
            f"{r['rows'] / r['seconds']:,.0f} | {r['bytes'] / 2**20:.0f} | "
            f"{r['peak_mb_self']:.0f} | {worker:.0f} |"
        )
    lines += [
        "",
        f"{args.partitions} partitions; each worker streams chunks of 20,000 rows, so its peak "
        "memory does not grow with the rows. With one worker the parent writes the parts itself. "
        f"Load average at the end: {', '.join(f'{v:.1f}' for v in os.getloadavg())}.",
    ]
    return lines


if __name__ == "__main__":
    main()
