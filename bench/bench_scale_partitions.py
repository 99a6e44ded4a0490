"""How Spark's measurement time and driver memory grow with the partitions (issue 23.1).

The same Bayesian-network Parquet as ``bench_scale.py`` (written by it when missing), read on
``local[2]`` and repartitioned into P partitions before the fit (one shuffle; the checked
records are then persisted in P partitions and every aggregation runs over them). Each P runs
in its own process; besides the wall times (inflated by the shared machine), the CPU seconds
of the driver and of the Spark JVM (executors included in local mode).

    OMP_NUM_THREADS=1 nice -n 10 python bench/bench_scale_partitions.py --rows 1000000 \
        --partitions 2,8,32,128 --work /tmp/scale
"""

from __future__ import annotations

import argparse
from pathlib import Path

import bench_scale
import harness

RESULTS = harness.RESULTS / "scale_partitions.json"
TITLE = (
    "Spark local[2]: measurement time and driver memory against partitions "
    "(bench/bench_scale_partitions.py)"
)


def body(runs: list[dict]) -> list[str]:
    """One row per (rows, partitions)."""
    lines = ["| rows | partitions | measure stage (s) | adaptive (s) | fit total (s) | "
             "driver CPU (s) | JVM CPU (s) | driver peak (MiB) | JVM peak (MiB) |",
             "|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for r in runs:
        if "error" in r:
            lines.append(f"| {r['rows']:,} | {r['partitions']} | failed: {r['error']} |||||||")
            continue
        lines.append(
            f"| {r['rows']:,} | {r['partitions']} | {r['measure_s']:.1f} | {r['adaptive_s']:.1f} "
            f"| {r['total_s']:.1f} | {r['driver_cpu_s']:.1f} | {r['jvm_cpu_s']:.1f} | "
            f"{r['driver_peak_mib']:.0f} | {r['jvm_peak_mib']:.0f} |"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", default="1000000", help="comma list of table sizes")
    parser.add_argument("--partitions", default="2,8,32,128", help="comma list of partitions")
    parser.add_argument("--work", type=Path, default=Path("/tmp/dpforge_scale"))
    harness.add_out(parser, RESULTS)
    args = parser.parse_args()
    record, runs = harness.provenance(__file__), []
    args.work.mkdir(parents=True, exist_ok=True)
    for n in (int(v) for v in args.rows.split(",")):
        path = args.work / f"network_{n}.parquet"
        if not path.exists():
            bench_scale.write_parquet(path, n)
        for p in (int(v) for v in args.partitions.split(",")):
            runs.append({"rows": n, "partitions": p, **bench_scale.run_child("spark", path, 2, p)})
            record["runs"] = runs
            harness.write_results(args.out, record, TITLE, body(runs))
            print(runs[-1], flush=True)


if __name__ == "__main__":
    main()
