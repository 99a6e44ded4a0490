"""The record checks on Spark local[2], before and after they became Spark SQL (issue 23.1).

One table of the known Bayesian network (``bench_scale.network``, written as Parquet by this
script); ``SparkTable.validated`` (the pipeline's ``check_records`` on Spark: every value
checked against the schema, the typed records persisted, their number counted) timed in fresh
processes, side by side under the same load: ``before`` imports dpforge from a copy of the
source at ``--before`` (git archive: Python's ``validate_table`` on every Arrow batch, in
Python workers), ``after`` from this checkout (one pass of Spark SQL expressions,
``dpforge.engines.spark_checks``). Also timed: ``validate_table`` in memory on the same rows.
Wall time, and CPU time of this process and all its descendants (the JVM, its Python workers),
for a first check (a fresh JVM) and a second one in the same process (JVM warm).

    OMP_NUM_THREADS=1 nice -n 10 python bench/bench_spark_checks.py --rows 1000000
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import time
from io import BytesIO
from pathlib import Path

import harness
from bench_scale import child_peaks, schema, write_parquet

RESULTS = harness.RESULTS / "spark_checks.json"
TITLE = "Spark record checks before and after Spark SQL (bench/bench_spark_checks.py)"


def tree_cpu() -> float:
    """CPU seconds of this process and its live descendants (with their reaped children)."""
    tick = os.sysconf("SC_CLK_TCK")
    parents: dict[int, tuple[int, float]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            cpu = sum(int(v) for v in fields[11:15]) / tick  # utime stime cutime cstime
            parents[int(stat.parent.name)] = (int(fields[1]), cpu)
        except (OSError, ValueError, IndexError):
            continue
    total = 0.0
    for pid, (_, cpu) in parents.items():
        ancestor = pid
        while ancestor not in (None, 0, 1, os.getpid()):
            ancestor = parents.get(ancestor, (None,))[0]
        total += cpu if ancestor == os.getpid() else 0.0
    return total


def one_run(engine: str, path: Path, partitions: int) -> dict:
    """Check the records once in this process: wall and CPU seconds, peak memory."""
    import resource

    if engine == "memory":
        import pandas as pd

        from dpforge.data.tables import validate_table

        frame = pd.read_parquet(path)
        cpu, start = tree_cpu(), time.perf_counter()
        validate_table(frame, schema())
        wall = time.perf_counter() - start
    else:
        from dpforge.engines.spark import spark_session
        from dpforge.engines.spark_table import SparkTable

        session = spark_session(f"local[{partitions}]")
        session.conf.set("spark.sql.shuffle.partitions", str(partitions))
        frame = session.read.parquet(str(path))
        cpu, start = tree_cpu(), time.perf_counter()
        SparkTable(frame).validated(schema(), "error").unpersist()
        wall = time.perf_counter() - start
        cpu, warm = tree_cpu() - cpu, tree_cpu()
        start = time.perf_counter()
        SparkTable(frame).validated(schema(), "error").unpersist()  # again, the JVM warm
        warm_wall, warm = time.perf_counter() - start, tree_cpu() - warm
        return {"check_s": wall, "cpu_s": cpu, "warm_check_s": warm_wall, "warm_cpu_s": warm,
                "driver_peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                "jvm_peak_mib": max([0.0, *child_peaks()])}  # fmt: skip
    return {"check_s": wall, "cpu_s": tree_cpu() - cpu,
            "driver_peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "jvm_peak_mib": max([0.0, *child_peaks()])}  # fmt: skip


def source_at(commit: str, work: Path) -> Path:
    """dpforge's ``src`` at ``commit``, extracted under ``work`` (git archive)."""
    target = work / f"src_{commit[:12]}"
    if not target.exists():
        tar = subprocess.run(["git", "archive", commit, "src"], capture_output=True, check=True,
                             cwd=harness.REPO)  # fmt: skip
        with tarfile.open(fileobj=BytesIO(tar.stdout)) as archive:
            archive.extractall(work / f"tmp_{commit[:12]}", filter="data")
        (work / f"tmp_{commit[:12]}" / "src").rename(target)
    return target


def run_child(engine: str, src: Path, path: Path, partitions: int) -> dict:
    """:func:`one_run` in a fresh process importing dpforge from ``src``."""
    argv = [sys.executable, __file__, "--child", engine, "--data", str(path)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(src), str(Path(__file__).parent)])}
    done = subprocess.run([*argv, "--partitions", str(partitions)], capture_output=True,
                          text=True, check=False, env=env)  # fmt: skip
    if done.returncode != 0:
        return {"error": done.stderr.strip().splitlines()[-1] if done.stderr else "failed"}
    return json.loads(done.stdout.strip().splitlines()[-1])


def body(rows: list[dict], partitions: int) -> list[str]:
    """The Markdown table."""
    lines = ["| checks | rows | wall (s) | CPU, all processes (s) | again: wall (s) | "
             "again: CPU (s) | driver peak (MiB) | JVM peak (MiB) |",
             "|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['what']} | {r['rows']:,} | failed: {r['error']} | | | |")
            continue
        again = [f"{r[k]:.1f}" if k in r else "-" for k in ("warm_check_s", "warm_cpu_s")]
        lines.append(f"| {r['what']} | {r['rows']:,} | {r['check_s']:.1f} | {r['cpu_s']:.1f} | "
                     f"{again[0]} | {again[1]} | {r['driver_peak_mib']:.0f} | "
                     f"{r['jvm_peak_mib']:.0f} |")  # fmt: skip
    return lines + [
        "",
        f"Spark on local[{partitions}]; 'again': the same check a second time in "
        "the same process (JVM warm, nothing cached). The JVM peak is 0 in memory.",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--partitions", type=int, default=2, help="Spark local[P]")
    parser.add_argument("--before", default="69de537", help="commit with the Python checks")
    parser.add_argument("--work", type=Path, default=Path("/tmp/dpforge_checks"))
    parser.add_argument("--child", choices=("memory", "spark"), help=argparse.SUPPRESS)
    parser.add_argument("--data", type=Path, help=argparse.SUPPRESS)
    harness.add_out(parser, RESULTS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(one_run(args.child, args.data, args.partitions)))
        return
    record = harness.provenance(__file__)
    args.work.mkdir(parents=True, exist_ok=True)
    path = args.work / f"network_{args.rows}.parquet"
    if not path.exists():
        write_parquet(path, args.rows)
    here = Path(__file__).resolve().parents[1] / "src"
    runs = [("spark, before (Python on each batch)", "spark", source_at(args.before, args.work)),
            ("spark, after (Spark SQL, one pass)", "spark", here),
            ("in memory (validate_table)", "memory", here)]  # fmt: skip
    rows = []
    for what, engine, src in runs:
        rows.append({"what": what, "rows": args.rows, **run_child(engine, src, path,
                                                                   args.partitions)})  # fmt: skip
        record["runs"] = rows
        harness.write_results(args.out, record, TITLE, body(rows, args.partitions))
        print(rows[-1], flush=True)


if __name__ == "__main__":
    main()
