"""UCI Adult, balanced classes (Frigerio et al. 2019): random-forest TSTR for every method.

For each method variant, privacy level and seed: fit ``Synthesizer(method, epsilon)`` on the
balanced training table (15,016 rows, ``dpforge.datasets.adult.load_adult``), sample as many
rows, train a random forest (``dpforge.evaluation.utility``, ``classifier="rf"``) on the
synthetic rows and score accuracy, balanced accuracy and AUC on the balanced real test table
(7,400 rows). The same forest trained on the real training table gives the real baseline.

The issue's plan (used unless ``--epsilons`` is given): ``dpwgan`` without and with clipping
decay at epsilon = 3 and 7, next to the paper's figures, plus ``dpwgan`` at epsilon = inf (the
same code with sigma = 0 and C = inf, for context); ``dpcgan`` and ``gswgan`` at 3; every other
registered method at 3 as well. A method that is not registered is skipped with a note.
The epsilon is the ledger's, metadata included (the DP bounds of fnlwgt and capital-loss; the
label prior is uniform and free, see ``dpforge.datasets.adult``), reported under PLD and RDP.

Hyperparameters: ``TUNED`` below, chosen on a validation split of the training table
(``--validation``: 80/20, stratified, seeded; adult.test is not even read), never on the test
file. ``--set key=value`` overrides a config field for every variant that has it. Validation
runs append a line each to ``--tuning-log``; the reported run lists that log in its markdown (or,
without ``--tuning-log``, the tuning rows already stored in the ``--out`` JSON).

Examples::

    python bench/bench_adult.py --seeds 3 --out bench/results/adult_methods.json
    python bench/bench_adult.py --quick                    # smoke test, about a minute
    python bench/bench_adult.py --validation --methods dpwgan --epsilons 3 --seeds 1 \\
        --set batch_size=512 --tuning-log /tmp/adult_tuning.jsonl --note "B=512"
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path
from typing import Any

import torch

import harness
from adult_report import PAPER, TITLE, markdown, print_table
from adult_runs import (
    DECAY,
    DEFAULT_EPSILON,
    METRICS,
    changes,
    load_data,
    run_seed,
    scores,
    summarise,
)
from dpforge.methods import METHODS
from stats import mean_std

ISSUE_METHODS = ("dpwgan", "dpcgan", "gswgan")
ISSUE_EPSILONS = {"dpwgan": (3.0, 7.0)}  # every other method: 3 only


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line (--quick keeps one seed)."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    harness.add_data_dir(p)
    harness.add_seeds(p, "3")
    p.add_argument(
        "--methods", default=None,
        help="comma list; variants too (dpwgan+decay). Default: the issue's and every "
        "registered method",
    )  # fmt: skip
    p.add_argument(
        "--epsilons", type=harness.floats, default=None,
        help="comma list, for every selected method; default: the issue's plan",
    )  # fmt: skip
    p.add_argument("--delta", type=float, default=1e-5)
    harness.add_out(p)
    p.add_argument("--quick", action="store_true", help="tiny run for smoke tests")
    p.add_argument("--validation", action="store_true", help="score on a split of adult.data")
    p.add_argument("--tuning-log", default=None, help="JSON lines: appended to (--validation) "
                   "or listed in the markdown")  # fmt: skip
    p.add_argument("--note", default="", help="what this validation run tries (tuning log)")
    p.add_argument("--no-real", action="store_true", help="skip the real-data baseline")
    harness.add_threads(p)
    p.add_argument("--epochs", type=float, default=None, help="override every variant's epochs")
    p.add_argument("--metadata-share", type=float, default=0.1)
    p.add_argument(
        "--set", action="append", default=[], metavar="KEY=VALUE",
        help="override a config field (e.g. batch_size=512, discriminator_hidden=256,256)",
    )  # fmt: skip
    args = p.parse_args(argv)
    args.seeds = harness.seeds(args)[:1] if args.quick else harness.seeds(args)
    return args


def plan_cells(args: argparse.Namespace) -> tuple[list[tuple[str, float]], list[dict]]:
    """(variant, epsilon) pairs to run, and notes for the methods skipped."""
    if args.methods:  # as given: "dpwgan" is without decay, "dpwgan+decay" with it
        wanted = [m.strip() for m in args.methods.split(",") if m.strip()]
    else:  # the issue's plan: dpwgan without and with decay, then every registered method
        issue = [m if m != "dpwgan" else (m, m + DECAY) for m in ISSUE_METHODS]
        flat = [v for m in issue for v in ((m,) if isinstance(m, str) else m)]
        wanted = list(dict.fromkeys([*flat, *sorted(METHODS)]))
    cells, skipped = [], []
    for name in wanted:
        base = name.removesuffix(DECAY)
        if base not in METHODS:
            skipped.append({"method": name, "note": f"'{base}' is not registered in "
                            f"dpforge.methods.METHODS ({sorted(METHODS)}); skipped"})  # fmt: skip
            continue
        epsilons = args.epsilons or ISSUE_EPSILONS.get(base, (DEFAULT_EPSILON,))
        if not args.epsilons and name == "dpwgan":  # context: the same GAN without privacy
            epsilons = (*epsilons, math.inf)
        cells += [(name, eps) for eps in epsilons]
    return cells, skipped


def previous_tuning(out: Path) -> list[dict]:
    """The tuning rows of an earlier result at ``out`` (kept when no --tuning-log is given)."""
    try:
        return list(harness.read_results(out).get("tuning") or [])
    except (OSError, ValueError):
        return []


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Run every (variant, epsilon) cell over the seeds, the real baseline, write the files."""
    timer = harness.Timer()
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    train, test, schema, data = load_data(args)
    print_data(data)
    plan, skipped = plan_cells(args)
    for skip in skipped:
        print(f"note: {skip['note']}")
    cells = [run_cell(variant, epsilon, args, train, test, schema) for variant, epsilon in plan]
    real = None
    if not args.no_real:
        runs = [scores(train, test, schema, seed) for seed in args.seeds]
        real = {"runs": runs, "summary": {k: mean_std([r[k] for r in runs]) for k in METRICS}}
    print_table(cells, real, data["evaluation_set"])
    result = {
        **harness.provenance(__file__, argv),
        "data": data,
        "delta": args.delta,
        "metadata_share": args.metadata_share,
        "seeds": args.seeds,
        "cells": cells,
        "real": real,
        "skipped": skipped,
        "paper": {f"{k[0]}@{k[1]}": v for k, v in PAPER.items()},
        "wall_seconds": timer.elapsed,
    }
    if args.validation and args.tuning_log:
        append_tuning(cells, args, Path(args.tuning_log))
    if args.out:
        tuning = [] if args.validation else harness.read_jsonl(args.tuning_log)
        result["tuning"] = tuning or previous_tuning(args.out)
        harness.write_results(args.out, result, TITLE, markdown(result, result["tuning"]))
        print(f"wrote {args.out} and {args.out.with_suffix('.md')}")
    return result


def print_data(data: dict[str, Any]) -> None:
    """What was read from the files, on the console."""
    for key in ("train_file", "test_file"):
        if key in data:
            a = data[key]
            print(
                f"{Path(a['source']).name}: {a['rows_read']} rows, {a['rows_dropped_missing']} "
                f"dropped (missing values), {a['rows']} after balancing {a['class_counts']}"
            )


def run_cell(variant: str, epsilon: float, args, train, test, schema) -> dict[str, Any]:
    """Every seed of one (variant, epsilon); a failure is recorded in the cell, not raised
    (a broken method must not hide the others' results)."""
    cell: dict[str, Any] = {"variant": variant, "epsilon": epsilon,
                            "changes": changes(variant, args), "runs": []}  # fmt: skip
    try:
        for seed in args.seeds:
            run = run_seed(variant, epsilon, args, train, test, schema, seed)
            cell["runs"].append(run)
            print(
                f"{variant} eps {epsilon:g} seed {seed}: accuracy {run['accuracy']:.4f}, "
                f"AUC {run['auc']:.4f}, eps PLD {run['epsilon_pld'] or math.nan:.3f} RDP "
                f"{run['epsilon_rdp'] or math.nan:.3f}, {run['steps']} steps, sigma "
                f"{run['noise_multiplier']:.3f}, fit {run['fit_seconds']:.0f} s",
                flush=True,
            )
        cell["summary"] = summarise(cell["runs"])
    except Exception as exc:  # a broken method must not hide the others' results
        cell["error"] = f"{type(exc).__name__}: {exc}"
        print(f"{variant} eps {epsilon:g}: FAILED: {cell['error']}", flush=True)
    return cell


def append_tuning(cells: list[dict], args: argparse.Namespace, path: Path) -> None:
    """One line per cell that ran, appended to the tuning log (--validation)."""
    for c in cells:
        if "error" in c:
            continue
        s, r0 = c["summary"], c["runs"][0]
        row = {"variant": c["variant"], "epsilon": c["epsilon"], "changes": c["changes"],
               "steps": r0["steps"], "sigma": r0["noise_multiplier"],
               "accuracy": s["accuracy"]["mean"], "auc": s["auc"]["mean"],
               "fit_seconds": s["fit_seconds"]["mean"], "seeds": len(c["runs"]),
               "note": args.note}  # fmt: skip
        harness.append_jsonl(path, row)


if __name__ == "__main__":
    main()
