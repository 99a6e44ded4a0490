"""Peak memory of sampling and fitting large tables through the command line (issue 14, Scale).

Measured, each in its own process (peak resident set size from ``/usr/bin/time -v``):

- ``dpforge sample`` of 10^6 and 10^7 rows of a 20-column table to CSV (streamed in chunks);
- the same 10^6 rows through the in-memory path ``Synthesizer.sample(n)`` + ``to_csv``, the
  way the command line sampled before streaming, side by side;
- ``dpforge fit`` on a 1,000,000 x 20 table (the default for tables: marginal anchoring);
- with ``--matched N ...``, only: ``dpforge sample`` of N rows of the demo's model (``dpforge
  demo --seed 0``), matched to the stored marginals (the default) and plain (``--no-move``),
  with the CPU seconds of each (issue 44: 10^6 matched rows in at most 60 CPU s and 1 GB) and
  the rows' TVD to the stored marginals and to the demo's real records; results in
  bench/results/memory/matched_sampling.md (``--results`` for another file, e.g. the same
  command run with ``PYTHONPATH`` at an earlier commit's ``src``).

The table is synthetic and public by construction (10 numeric columns, 9 categorical ones and a
binary label, drawn from a fixed generator), with every bound and category declared in the
schema, so no DP metadata estimate is involved. Results go to bench/results/memory/sample_and_fit.md
(and .json) with the command that reproduced them, rewritten after every measurement.

    OMP_NUM_THREADS=1 nice -n 10 python bench/memory.py --work /tmp/bench_memory
    OMP_NUM_THREADS=1 nice -n 10 python bench/memory.py --matched 1000000 100000 --work /tmp/bm

Options split the work (``--sample-rows``, ``--model`` to sample an existing model,
``--sample-timeout`` / ``--fit-timeout`` to stop a run and keep its peak so far, ``--fit-rows 0``
to skip the big fit, ``--results`` for the output file).
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dpforge.schema.table import Column, Schema
from lib import harness

RESULTS = harness.results("memory", "sample_and_fit.md")
TITLE = "Peak memory: sampling and fitting 20-column tables (bench/memory.py)"
MATCHED_RESULTS = harness.results("memory", "matched_sampling.md")
MATCHED_TITLE = (
    "Matched sampling of the demo's model: CPU and peak memory (bench/memory.py --matched)"
)
CLI = [sys.executable, "-c", "from dpforge.cli import main; main()"]
IN_MEMORY = """
import sys
from dpforge import load
load(sys.argv[1]).sample(int(sys.argv[2]), seed=0).to_csv(sys.argv[3], index=False)
"""


def make_table(n_rows: int, rng: np.random.Generator) -> pd.DataFrame:
    """A public 20-column table: numeric x0..x9, categorical c0..c8, binary label y."""
    columns = {}
    for i in range(10):
        columns[f"x{i}"] = np.clip(rng.normal(50.0, 15.0, n_rows), 0.0, 100.0).round(3)
    for i in range(9):
        columns[f"c{i}"] = rng.choice(np.array([f"k{j}" for j in range(6)]), n_rows)
    columns["y"] = rng.choice(np.array(["no", "yes"]), n_rows, p=[0.7, 0.3])
    return pd.DataFrame(columns)


def make_schema() -> Schema:
    numeric = [Column(f"x{i}", "continuous", lower=0.0, upper=100.0) for i in range(10)]
    categories = tuple(f"k{j}" for j in range(6))
    categorical = [Column(f"c{i}", "categorical", categories=categories) for i in range(9)]
    label = Column("y", "categorical", categories=("no", "yes"))
    return Schema(columns=(*numeric, *categorical, label), label="y")


def measured(command: list[str], timeout: float | None = None) -> dict[str, Any]:
    """Run ``command`` under /usr/bin/time -v; its wall time and peak RSS. After ``timeout``
    seconds the command is stopped (SIGKILL to it, not to time) and the peak so far is kept,
    with ``stopped`` set."""
    timer = harness.Timer()
    process = subprocess.Popen(
        ["/usr/bin/time", "-v", *command],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(),
    )
    stopped = False
    try:
        _, err = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        for child in _children(process.pid):
            os.kill(child, signal.SIGKILL)
        _, err = process.communicate()
        stopped = True
    seconds = timer.elapsed
    if process.returncode != 0 and not stopped:
        raise RuntimeError(f"{command} failed:\n{err[-3000:]}")
    peak_kb = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", err)[1])
    cpu = sum(
        float(re.search(rf"{kind} time \(seconds\): ([\d.]+)", err)[1])
        for kind in ("User", "System")
    )
    return {
        "seconds": round(seconds, 1),
        "cpu_s": round(cpu, 1),
        "peak_rss_mb": round(peak_kb / 1024, 1),
        "stopped": stopped,
    }


def _children(pid: int) -> list[int]:
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(c) for c in path.read_text().split()] if path.exists() else []


def _env() -> dict[str, str]:
    return {**os.environ, "OMP_NUM_THREADS": "1"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, default=Path("/tmp/bench_memory"))
    parser.add_argument("--sample-rows", type=int, nargs="*", default=[10**6, 10**7])
    parser.add_argument("--sample-timeout", type=float, default=None)
    parser.add_argument("--model", type=Path, default=None, help="sample this model (no fit)")
    parser.add_argument("--in-memory", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument("--fit-rows", type=int, default=10**6, help="0: no big fit")
    parser.add_argument("--fit-timeout", type=float, default=900.0)
    parser.add_argument("--results", type=Path, default=None, help="markdown file to write")
    parser.add_argument(
        "--matched", type=int, nargs="*", default=None, metavar="N",
        help="only sample N rows of the demo's model (or --model, a demo folder's), matched "
        "and --no-move: CPU s, peak RSS, TVD to the stored marginals and the real records",
    )  # fmt: skip
    args = parser.parse_args()
    work = args.work
    work.mkdir(parents=True, exist_ok=True)
    if args.matched:
        measure = recorder(args.results or MATCHED_RESULTS, MATCHED_TITLE)
        return matched_sampling(measure, work, args.matched, args.model)
    measure = recorder(args.results or RESULTS, TITLE)
    rng = np.random.default_rng(0)
    schema_path = work / "schema.json"
    schema_path.write_text(make_schema().to_json())
    model = args.model or work / "model"
    quiet = work / "quiet.toml"  # dpforge fit's options file: no progress bar
    quiet.write_text("[output]\nprogress = false\n")
    if args.sample_rows and args.model is None:
        small = work / "small.csv"
        make_table(20_000, rng).to_csv(small, index=False)
        fit = [*CLI, "fit", str(small), "--schema", str(schema_path), "--out", str(model)]
        quiet_fit = [*fit, "--overwrite", "--options", str(quiet)]
        measure("fit 20,000 x 20 (the model sampled below)", quiet_fit)
    for n in args.sample_rows:
        sample_once(measure, model, n, work, args.sample_timeout)
        if n <= 10**6 and args.in_memory:
            memory_out = work / "in_memory.csv"
            cmd = [sys.executable, "-c", IN_MEMORY, str(model), str(n), str(memory_out)]
            measure(f"Synthesizer.sample({n:,}) + to_csv (in memory, as before)", cmd)
            memory_out.unlink()
    if args.fit_rows:
        big = work / "big.csv"
        make_table(args.fit_rows, rng).to_csv(big, index=False)
        out = work / "big"
        fit_big = [*CLI, "fit", str(big), "--schema", str(schema_path), "--out", str(out)]
        command = [*fit_big, "--overwrite", "--options", str(quiet), "--delta", "1e-7"]
        measure(f"dpforge fit {args.fit_rows:,} x 20", command, args.fit_timeout)


def recorder(results: Path, title: str):
    """``measure(what, command, timeout)``: runs ``command`` (:func:`measured`), adds its row
    and rewrites ``results`` (Markdown and JSON); ``measure.rewrite()`` after adding a note."""
    rows: list[tuple[str, str, dict[str, Any]]] = []
    record = {**harness.provenance(__file__), "rows": []}

    def save() -> None:
        record["rows"] = [{"what": w, "command": c, **r} for w, c, r in rows]
        harness.write_results(results.with_suffix(".json"), record, title, markdown(rows))

    def measure(what: str, command: list[str], timeout: float | None = None) -> dict[str, Any]:
        result = measured(command, timeout)
        if result["stopped"]:
            what += f" (stopped after {timeout:g} s)"
        shown = " ".join(c for c in command if "\n" not in c)
        rows.append((what, shown, result))
        print(what, result, flush=True)
        save()
        return result

    measure.rewrite = save
    return measure


def matched_sampling(measure, work: Path, sizes: list[int], model: Path | None) -> None:
    """The demo's model (``dpforge demo --seed 0``: 455 breast-cancer records, epsilon = 3;
    or ``model``, a demo folder's), then ``dpforge sample`` of each of ``sizes`` rows streamed
    to CSV, matched to its stored marginals (the default) and plain (``--no-move``), each in
    its own process on one thread, with the rows' TVD (:func:`fidelity`)."""
    if model is None:
        demo = work / "demo"
        command = [*CLI, "demo", "--out", str(demo), "--seed", "0"]
        measure("dpforge demo --seed 0 (the model sampled below)", command)
        model = demo / "model"
    out = work / "sample.csv"
    for n in sizes:
        for flag, how in (([], "matched (the default)"), (["--no-move"], "unmatched (--no-move)")):
            command = [*CLI, "sample", str(model), "-n", str(n), "-o", str(out), "--overwrite"]
            result = measure(f"dpforge sample {n:,} rows, {how}", [*command, "--seed", "0", *flag])
            result.update(fidelity(model, out))
            measure.rewrite()
            out.unlink()


def fidelity(model: Path, sample: Path) -> dict[str, float]:
    """The sampled rows' mean TVD to the model's stored marginals (the one-column ones, and
    the others), and to the real records beside it (the demo's ``public-train.csv``): mean
    1-way and 2-way TVD of :func:`dpforge.evaluation.fidelity.marginal_fidelity`."""
    from dpforge import load
    from dpforge.evaluation.fidelity import marginal_fidelity
    from dpforge.statistics.marginals import encoded_cells
    from dpforge.statistics.reweight import MarginalTargets

    synth, rows = load(model), pd.read_csv(sample)
    label = synth.schema_.label
    targets = MarginalTargets(synth.sample_release_.marginals, label)
    index = targets.cell_index(encoded_cells(synth.encoder_, rows, label))
    hist = np.bincount(index.reshape(-1), minlength=targets.flat.size) / len(rows)
    gaps: dict[int, list[float]] = {1: [], 2: []}
    for i, target in enumerate(targets.targets):
        part = slice(targets.offsets[i], targets.offsets[i + 1])
        tvd = 0.5 * float(np.abs(hist[part] - target.distribution).sum())
        gaps[min(len(target.columns), 2)].append(tvd)
    real = marginal_fidelity(pd.read_csv(model.parent / "public-train.csv"), rows, synth.schema_)
    return {
        "stored_tvd_1way": round(float(np.mean(gaps[1])), 5),
        "stored_tvd_kway": round(float(np.mean(gaps[2])), 5),
        "real_tvd_1way": round(real.mean_one_way, 5),
        "real_tvd_2way": round(real.mean_two_way, 5),
    }


def sample_once(measure, model: Path, n: int, work: Path, timeout: float | None) -> None:
    """``dpforge sample`` of ``n`` rows; when stopped, how many rows it had streamed out."""
    out = work / f"sample_{n}.csv"
    cmd = [*CLI, "sample", str(model), "-n", str(n), "-o", str(out), "--overwrite", "--seed", "0"]
    result = measure(f"dpforge sample {n:,} rows (streamed)", cmd, timeout)
    if result["stopped"]:
        partial = sorted(work.glob(f".{out.name}.*.tmp"))
        written = sum(_lines(p) for p in partial) - len(partial)  # headers
        print(f"  stopped after {written:,} rows written", flush=True)
        rows_note = f"{written:,} of {n:,} rows written when stopped"
        result["note"] = rows_note
        measure.rewrite()
        for p in partial:
            p.unlink()
    out.unlink(missing_ok=True)


def _lines(path: Path) -> int:
    with open(path, "rb") as handle:
        return sum(chunk.count(b"\n") for chunk in iter(lambda: handle.read(1 << 20), b""))


# The TVD columns of --matched: their headings and keys (see fidelity()).
TVD = {
    "TVD stored 1-way": "stored_tvd_1way",
    "TVD stored k-way": "stored_tvd_kway",
    "TVD real 1-way": "real_tvd_1way",
    "TVD real 2-way": "real_tvd_2way",
}


def markdown(rows) -> list[str]:
    """The Markdown body: one table row per measured command, then the commands."""
    lines = [
        "Peak RSS of each command's process from `/usr/bin/time -v`.",
        "",
        "| what | peak RSS (MB) | CPU (s) | wall (s) |" + "".join(f" {t} |" for t in TVD),
        "|---|---:|---:|---:|" + "---:|" * len(TVD),
    ]
    for what, _, result in rows:
        note = f" ({result['note']})" if result.get("note") else ""
        cells = [result["peak_rss_mb"], result.get("cpu_s", ""), result["seconds"]]
        cells += [result.get(key, "") for key in TVD.values()]
        lines.append(f"| {what}{note} | " + " | ".join(f"{c:,}" if c else "" for c in cells) + " |")
    lines += ["", "Commands:", ""]
    return lines + [f"- {what}: `{command}`" for what, command, _ in rows]


if __name__ == "__main__":
    main()
