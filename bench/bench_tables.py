"""Side by side (issue 10, part 5): our default, the DP GANs, MST, AIM and real data.

One command fills the table of issue 10: for every dataset x epsilon (Adult at 1 and 3,
Thyroid at 3.7; delta 1e-5) and seed, each method fits on the real training rows and samples as
many synthetic rows (seeded), which are scored against real data:

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
(``adapter.ADULT_DECLARED_BOUNDS``), Thyroid's public schema. The test rows never train, tune or
select anything.

Results go to ``--out`` (JSON) and the markdown next to it, rewritten after every run; with
``--resume`` the runs already there (same settings) are skipped, so a stopped command can be
run again to finish; runs recorded as "not run" or "failed" are tried again. The full benchmark
(3 seeds; roughly 1 to 1.5 hours on 2 idle cores with the peers from the cache, most of it the
GANs on Adult)::

    python bench/bench_tables.py --resume --no-peer-fit

Without ``--no-peer-fit`` a peer result missing from the cache is fitted (AIM on Adult: 5 to 17
minutes a fit); ``bench/peers/fill_cache.py`` fills the cache ahead.

Quick checks (one seed, GANs cut to 150 steps; written to bench/results/tables_quick.json)::

    python bench/bench_tables.py --quick --datasets thyroid --methods dpforge,real,mst
    python bench/bench_tables.py --quick --datasets adult --epsilons 1 --methods dpforge --resume
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import shlex
import subprocess
import sys
import time
import warnings
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

from bench_adult import _json_default, _sample_rate, _seeds, fmt, mean_std  # noqa: E402
from bench_common import floats, machine  # noqa: E402 (bench/ is on sys.path when run)
from dpforge import Schema, Synthesizer
from dpforge.datasets.adult import load_adult
from dpforge.datasets.thyroid import load_thyroid
from dpforge.evaluation.fidelity import EVAL_BINS, marginal_fidelity
from dpforge.evaluation.utility import accuracy_scores, auroc_scores, predict_test
from dpforge.methods import METHODS
from peers.adapter import (  # noqa: E402
    ADULT_DECLARED_BOUNDS,
    PeerNotCachedError,
    cell_domain,
    declare_bounds,
    from_cells,
    run_peer_samplers,
    to_cells,
)

DATASETS = ("adult", "thyroid")
EPSILONS = {"adult": (1.0, 3.0), "thyroid": (3.7,)}
GANS = ("dpcgan", "dpwgan", "gswgan")
PEERS = ("mst", "aim")
SAMPLERS = ("default", "iid")
METHOD_ORDER = ("dpforge", *GANS, *PEERS, "real")
PEER_BINS = 64  # the public cells every peer sees (adapter.to_cells), as in peers/fill_cache.py
QUICK_GAN_STEPS = 150  # --quick: GANs train this many discriminator steps (minimum 100)
SAMPLE_SEED = 10_000  # synthetic rows are drawn with seed SAMPLE_SEED + seed
RESULTS = Path(__file__).resolve().parent / "results"
DEFAULT_PEER_CACHE = Path("/work/peer-cache")
LABELS = {
    "dpforge": "dpforge (default)",
    "dpcgan": "dpcgan",
    "dpwgan": "dpwgan",
    "gswgan": "gswgan",
    "mst": "MST",
    "aim": "AIM",
    "real": "real data",
}


# -- arguments -----------------------------------------------------------------------------------
def _names(text: str, allowed: tuple[str, ...], what: str) -> list[str]:
    names = [n.strip().lower() for n in text.split(",") if n.strip()]
    bad = [n for n in names if n not in allowed]
    if bad or not names:
        raise argparse.ArgumentTypeError(f"{what} must be a comma list of {allowed}, got {text!r}")
    return list(dict.fromkeys(names))


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--datasets",
        type=lambda t: _names(t, DATASETS, "--datasets"),
        default=list(DATASETS),
        help="comma list of adult, thyroid (default both)",
    )
    p.add_argument(
        "--methods",
        type=lambda t: _names(t, METHOD_ORDER, "--methods"),
        default=list(METHOD_ORDER),
        help=f"comma list of {', '.join(METHOD_ORDER)} (default all)",
    )
    p.add_argument(
        "--epsilons",
        type=floats,
        default=None,
        help="keep only these of each dataset's epsilons (Adult 1, 3; Thyroid 3.7)",
    )
    p.add_argument("--seeds", type=_seeds, default=_seeds("3"), help="a count (3) or a list 0,1,2")
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
    p.add_argument("--resume", action="store_true", help="keep and skip the runs in --out")
    p.add_argument("--data-dir", default=None, help="folder holding adult/ and thyroid/")
    p.add_argument("--out", type=Path, default=None, help="JSON (markdown written next to it)")
    p.add_argument("--threads", type=int, default=1, help="torch threads (1 is fastest here)")
    args = p.parse_args(argv)
    if args.quick:
        args.seeds = args.seeds[:1]
    if args.out is None:
        args.out = RESULTS / ("tables_quick.json" if args.quick else "tables.json")
    return args


# -- data ------------------------------------------------------------------------------------------
@dataclass
class Dataset:
    """A table to benchmark on: real training and test rows, the schema every tool gets."""

    name: str
    train: pd.DataFrame
    test: pd.DataFrame
    schema: Schema
    positive: str | None  # binary: the class whose AUC is reported; None: macro AuROC
    classifiers: tuple[str, ...]
    info: dict[str, Any] = field(default_factory=dict)


def load_dataset(name: str, data_dir: str | None) -> Dataset:
    if name == "adult":
        train, test, schema = load_adult(data_dir, balanced=False)
        schema = declare_bounds(schema, ADULT_DECLARED_BOUNDS)
        info = {
            "source": "adult.data / adult.test (rows with '?' dropped), natural class balance",
            "train_file": train.attrs,
            "test_file": test.attrs,
            "declared_bounds": {k: list(v) for k, v in ADULT_DECLARED_BOUNDS.items()},
        }
        return Dataset(name, train, test, schema, ">50K", ("rf", "lr"), info)
    train, test, schema = load_thyroid(data_dir)
    info = {"source": "ann-train / ann-test (UCI thyroid, public schema)"}
    return Dataset(name, train, test, schema, None, ("mlp", "rf", "lr"), info)


def describe(data: Dataset) -> dict[str, Any]:
    return {
        **data.info,
        "n_train": len(data.train),
        "n_test": len(data.test),
        "label": data.schema.label,
        "label_prior": str(getattr(data.schema, "label_prior", None)),
        "train_classes": data.train[data.schema.label].value_counts().to_dict(),
        "test_classes": data.test[data.schema.label].value_counts().to_dict(),
    }


# -- scores --------------------------------------------------------------------------------------
def score(synthetic: pd.DataFrame, data: Dataset, seed: int, fidelity_of: pd.DataFrame | None):
    """TVD of ``fidelity_of`` (default: ``synthetic``) to the real training rows, and the
    classifiers trained on ``synthetic``, tested on the real test rows."""
    start = time.perf_counter()
    fid = marginal_fidelity(
        data.train, synthetic if fidelity_of is None else fidelity_of, data.schema
    )
    out: dict[str, Any] = {"tvd_1way": fid.mean_one_way, "tvd_2way": fid.mean_two_way}
    notes = {}
    for kind in data.classifiers:
        pred = predict_test(synthetic, data.test, data.schema, classifier=kind, seed=seed)
        auc = auroc_scores(pred)
        out[f"{kind}_auc"] = auc["per_class"][data.positive] if data.positive else auc["macro"]
        out[f"{kind}_bal_acc"] = accuracy_scores(pred)["balanced_accuracy"]
        notes[kind] = {
            k: pred.info[k]
            for k in ("degenerate", "converged", "classes_missing_from_train")
            if k in pred.info
        }
    out["classifier_info"] = notes
    out["eval_seconds"] = time.perf_counter() - start
    return out


# -- runs ------------------------------------------------------------------------------------------
def setting(method: str, data: Dataset, args: argparse.Namespace) -> str:
    """What a run's figures depend on beyond (dataset, epsilon, method, seed): a resumed run
    reuses a stored result only when this matches."""
    if method in GANS:
        epochs = gan_epochs(method, data, args)
        return "library defaults (50 epochs)" if epochs is None else f"epochs={epochs:.6g}"
    if method in PEERS:
        return f"smartnoise defaults, {PEER_BINS} public cells per numeric column"
    return "library defaults" if method == "dpforge" else "real training rows"


def gan_epochs(method: str, data: Dataset, args: argparse.Namespace) -> float | None:
    if args.gan_epochs is not None:
        return args.gan_epochs
    if args.quick:  # QUICK_GAN_STEPS steps at the method's default sampling rate
        config = METHODS[method][1]()
        return QUICK_GAN_STEPS * _sample_rate(method, config, len(data.train))
    return None


def run_ours(method: str, data: Dataset, epsilon: float, seed: int, args) -> dict[str, Any]:
    """Fit our default (``dpforge``) or a GAN without anchoring; sample; score."""
    options: dict[str, Any] = {}
    if method in GANS:
        options = {"method": method, "anchor": None, "epochs": gan_epochs(method, data, args)}
    synth = Synthesizer(
        data.schema, epsilon=epsilon, delta=args.delta, seed=seed, progress=False, **options
    )
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="values outside the bounds were clipped")
        synth.fit(data.train)
    fit_seconds = time.perf_counter() - start
    start = time.perf_counter()
    synthetic = synth.sample(len(data.train), seed=SAMPLE_SEED + seed)
    sample_seconds = time.perf_counter() - start
    report = synth.privacy_spent()
    plan = synth.plan_
    return {
        **score(synthetic, data, seed, None),
        "fit_seconds": fit_seconds,
        "sample_seconds": sample_seconds,
        "epsilon_spent": report.epsilon,
        "accountant": report.accountant,
        "epsilon_pld": report.epsilon_pld,
        "epsilon_rdp": report.epsilon_rdp,
        "steps": plan.steps,
        "noise_multiplier": plan.noise_multiplier,
        "epochs": plan.steps * plan.sample_rate,
        "ledger": [e.name for e in synth.ledger_.entries],
    }


def run_peer_seed(method: str, data: Dataset, epsilon: float, seed: int, args, cells, domain):
    """MST or AIM: both samplers from one (cached) fit, each decoded and scored."""
    results = run_peer_samplers(
        cells,
        domain,
        method,
        epsilon,
        args.delta,
        seed,
        len(data.train),
        SAMPLERS,
        cache_dir=args.peer_cache,
        cache_only=args.no_peer_fit,
    )
    out = {}
    for sampler, (synth_cells, info) in results.items():
        synthetic = from_cells(synth_cells, data.schema, PEER_BINS, np.random.default_rng(seed))
        out[sampler] = {
            **score(synthetic, data, seed, None),
            "fit_seconds": info["fit_seconds"],
            "sample_seconds": info["sample_seconds"],
            "epsilon_spent": epsilon,  # smartnoise spends its target; it reports no ledger
            "accountant": "target (smartnoise)",
            "cached": info["cached"],
            "fit_id": info.get("fit_id"),
            "versions": info.get("versions", {}),
        }
    return out


def run_real(data: Dataset, seed: int) -> dict[str, Any]:
    """The real training rows as the synthetic set; TVD of the real TEST rows to the training
    rows (the training rows against themselves would be 0): sampling noise, for reference."""
    return {
        **score(data.train, data, seed, fidelity_of=data.test),
        "fit_seconds": None,
        "epsilon_spent": None,
    }


# -- the results file ------------------------------------------------------------------------------
def run_key(run: dict[str, Any]) -> tuple:
    return (run["dataset"], run["epsilon"], run["method"], run.get("sampler"), run["seed"])


class Results:
    """The JSON document; every change is written at once (json and markdown)."""

    def __init__(self, args: argparse.Namespace, command: str):
        self.out = args.out
        self.doc: dict[str, Any] = {}
        if args.resume and self.out.is_file():
            self.doc = json.loads(self.out.read_text())
            if self.doc.get("delta") != args.delta:
                sys.exit(
                    f"{self.out} holds delta {self.doc.get('delta')}, not {args.delta}: "
                    "choose another --out or run without --resume"
                )
        self.doc.setdefault("title", "Issue 10, part 5: side-by-side benchmark of tables")
        self.doc.setdefault("commands", [])
        self.doc.setdefault("runs", [])
        self.doc.setdefault("data", {})
        self.doc.setdefault("peer_versions", {})
        self.doc["delta"] = args.delta
        self.doc["eval_bins"] = EVAL_BINS
        self.doc["peer_bins"] = PEER_BINS
        self.doc["command"] = command
        self.doc["machine"] = machine()
        self.doc["versions"] = versions()
        self.entry = {
            "command": command,
            "date": now(),
            "machine": self.doc["machine"],
            "versions": self.doc["versions"],
            "git": git_state(),
            "wall_seconds": 0.0,
        }
        self.start = time.perf_counter()

    def done(self, key: tuple, setting_: str) -> bool:
        return any(
            run_key(r) == key and r["status"] == "ok" and r["setting"] == setting_
            for r in self.doc["runs"]
        )

    def put(self, run: dict[str, Any]) -> None:
        if self.entry not in self.doc["commands"]:  # listed once it has written a run
            self.doc["commands"].append(self.entry)
        self.doc["runs"] = [r for r in self.doc["runs"] if run_key(r) != run_key(run)]
        self.doc["runs"].append(run)
        if run.get("versions"):
            self.doc["peer_versions"][run["method"]] = run["versions"]
        self.write()

    def write(self) -> None:
        self.entry["wall_seconds"] = time.perf_counter() - self.start
        self.entry["finished"] = now()
        self.out.parent.mkdir(parents=True, exist_ok=True)
        text = json.dumps(self.doc, indent=2, default=_json_default) + "\n"
        tmp = self.out.with_name(f".{self.out.name}.tmp")
        tmp.write_text(text)
        tmp.replace(self.out)
        self.out.with_suffix(".md").write_text(markdown(self.doc))


def now() -> str:
    return datetime.datetime.now().astimezone().isoformat(timespec="seconds")


def git_state() -> dict[str, Any]:
    """The commit the code ran at, and the files under src/ and bench/ (results aside) that
    differed from it."""
    root = Path(__file__).resolve().parent.parent

    def git(*cmd: str) -> str:
        try:
            return subprocess.run(
                ["git", *cmd], cwd=root, capture_output=True, text=True, check=True
            ).stdout.rstrip("\n")
        except (OSError, subprocess.CalledProcessError):
            return ""

    changed = git("status", "--porcelain", "--", "src", "bench", ":!bench/results").splitlines()
    return {"commit": git("rev-parse", "HEAD").strip() or "unknown", "changed": changed}


def versions() -> dict[str, str]:
    out = {}
    for name in ("dpforge", "torch", "numpy", "pandas", "scikit-learn", "dp-accounting", "opendp"):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


# -- tables --------------------------------------------------------------------------------------
def columns(dataset: str) -> list[tuple[str, str, int]]:
    """(run key, header, digits) of a dataset's table."""
    cols = [("mlp_auc", "MLP macro AuROC", 3)] if dataset == "thyroid" else []
    auc = "macro AuROC" if dataset == "thyroid" else "AUC"
    cols += [
        ("tvd_1way", "1-way TVD", 3),
        ("tvd_2way", "2-way TVD", 3),
        ("rf_auc", f"RF {auc}", 3),
        ("rf_bal_acc", "RF bal. acc.", 3),
        ("lr_auc", f"LR {auc}", 3),
        ("lr_bal_acc", "LR bal. acc.", 3),
        ("fit_seconds", "fit s", 0),
        ("epsilon_spent", "ε spent", 2),
    ]
    return cols


def primary(dataset: str) -> str:
    """The score that picks the better peer sampler (the issue's headline utility figure)."""
    return "mlp_auc" if dataset == "thyroid" else "rf_auc"


def rows(doc: dict[str, Any], dataset: str, epsilon: float) -> list[dict[str, Any]]:
    """One row per method (peers: per sampler), in METHOD_ORDER: label, stats, notes."""
    out = []
    for method in METHOD_ORDER:
        for sampler in SAMPLERS if method in PEERS else (None,):
            eps = None if method == "real" else epsilon
            runs = [
                r
                for r in doc["runs"]
                if (r["dataset"], r["epsilon"], r["method"], r.get("sampler"))
                == (dataset, eps, method, sampler)
            ]
            if not runs:
                continue
            ok = sorted((r for r in runs if r["status"] == "ok"), key=lambda r: r["seed"])
            label = LABELS[method] + (f" ({sampler})" if sampler else "")
            stats = {
                key: mean_std([r.get(key) for r in ok]) if ok else None
                for key, _, _ in columns(dataset)
            }
            notes = [
                f"seed {r['seed']}: {r['status']} ({r.get('note', '')})"
                for r in runs
                if r["status"] != "ok"
            ]
            settings = sorted({r["setting"] for r in ok})
            out.append(
                {
                    "method": method,
                    "sampler": sampler,
                    "label": label,
                    "stats": stats,
                    "n": len(ok),
                    "seeds": [r["seed"] for r in ok],
                    "notes": notes,
                    "settings": settings,
                }
            )
    for method in PEERS:  # mark the better sampler (by the primary score's mean)
        pair = [r for r in out if r["method"] == method and r["stats"].get(primary(dataset))]
        if len(pair) == 2:
            best = max(pair, key=lambda r: r["stats"][primary(dataset)]["mean"])
            best["label"] += " ★"
    return out


def table(doc: dict[str, Any], dataset: str, epsilon: float) -> list[str]:
    cols = columns(dataset)
    head = ["method", "n", *[h for _, h, _ in cols]]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in rows(doc, dataset, epsilon):
        if row["n"] == 0:
            lines.append(
                f"| {row['label']} | 0 | " + "; ".join(row["notes"]) + " |" + " |" * (len(cols) - 1)
            )
            continue
        cells = [fmt(row["stats"][key], digits) for key, _, digits in cols]
        lines.append(f"| {row['label']} | {row['n']} | " + " | ".join(cells) + " |")
    return lines


def checks(doc: dict[str, Any], dataset: str, epsilon: float) -> list[str]:
    """Our default against the better AIM sampler, metric by metric, and the issue's targets."""
    table_rows = {(r["method"], r["sampler"]): r for r in rows(doc, dataset, epsilon)}
    ours = table_rows.get(("dpforge", None))
    if ours is None or ours["n"] == 0:
        return []
    out = []
    aims = [table_rows[k] for k in (("aim", s) for s in SAMPLERS) if k in table_rows]
    aims = [r for r in aims if r["n"]]
    if aims:
        best = max(aims, key=lambda r: r["stats"][primary(dataset)]["mean"])
        verdicts = []
        for key, head, _ in columns(dataset):
            if key == "epsilon_spent":
                continue
            a, b = ours["stats"][key], best["stats"][key]
            lower_better = key.startswith("tvd") or key == "fit_seconds"
            good = a["mean"] <= b["mean"] if lower_better else a["mean"] >= b["mean"]
            verdicts.append(
                f"{head} {'≥' if good else '<'} AIM"
                if not lower_better
                else f"{head} {'at or below' if good else 'above'} AIM"
            )
        speed = best["stats"]["fit_seconds"]["mean"] / max(
            ours["stats"]["fit_seconds"]["mean"], 1e-9
        )
        out.append(
            f"- dpforge vs {best['label'].removesuffix(' ★')}: "
            + "; ".join(verdicts)
            + f" (means; fit {speed:.1f}× faster than AIM)."
        )
    targets = {
        ("adult", 1.0): [("rf_auc", ">=", 0.845), ("tvd_1way", "<=", 0.02)],
        ("adult", 3.0): [("rf_auc", ">=", 0.86)],
        ("thyroid", 3.7): [("mlp_auc", ">=", 0.98)],
    }
    for key, op, value in targets.get((dataset, epsilon), []):
        mean = ours["stats"][key]["mean"]
        met = mean >= value if op == ">=" else mean <= value
        out.append(
            f"- Issue 10 target {key} {op} {value}: dpforge {mean:.3f} "
            f"({'met' if met else 'NOT met'})."
        )
    return out


def markdown(doc: dict[str, Any]) -> str:
    m, v = doc["machine"], doc["versions"]
    lines = [
        f"# {doc['title']}",
        "",
        f"Command (latest): `{doc['command']}`",
        "",
        "All commands that wrote this file (a resumed run keeps the earlier runs):",
        "",
        *[command_line(c) for c in doc["commands"]],
        "",
        f"Machine: {m['cpu_count']} CPU cores ({m['processor']}), {m['platform']}, Python "
        f"{m['python']}, torch {m['torch']} ({m['torch_threads']} thread), shared with other "
        "jobs (times are indicative).",
        "",
        "Versions: " + ", ".join(f"{k} {val}" for k, val in v.items()) + ".",
    ]
    for method, pv in sorted(doc["peer_versions"].items()):
        lines.append(
            f"Peer {method.upper()} (own venv): "
            + ", ".join(f"{k} {val}" for k, val in pv.items())
            + "."
        )
    lines += ["", *method_notes(doc), "", *sections(doc)]
    return "\n".join(lines).rstrip() + "\n"


def command_line(entry: dict[str, Any]) -> str:
    git = entry.get("git") or {}
    state = f", at {git['commit'][:10]}" if git.get("commit") else ""
    if git.get("changed"):
        state += " with uncommitted changes to " + ", ".join(line[3:] for line in git["changed"])
    return f"- {entry['date']}: `{entry['command']}` ({entry['wall_seconds'] / 60:.1f} min{state})"


def sections(doc: dict[str, Any]) -> list[str]:
    """The tables: one section per dataset x epsilon."""
    lines = []
    for dataset in DATASETS:
        epsilons = sorted(
            {
                r["epsilon"]
                for r in doc["runs"]
                if r["dataset"] == dataset and r["epsilon"] is not None
            }
        )
        if not epsilons and any(r["dataset"] == dataset for r in doc["runs"]):
            epsilons = EPSILONS[dataset]
        info = doc["data"].get(dataset, {})
        for epsilon in epsilons:
            lines += [
                f"## {dataset.capitalize()}, ε = {epsilon:g}, δ = {doc['delta']:g}",
                "",
                f"{info.get('n_train', '?')} training rows, {info.get('n_test', '?')} test "
                "rows; mean ± std over the n seeds.",
                "",
                *table(doc, dataset, epsilon),
                "",
                *checks(doc, dataset, epsilon),
                *settings_notes(doc, dataset, epsilon),
                "",
            ]
    return lines


def settings_notes(doc: dict[str, Any], dataset: str, epsilon: float) -> list[str]:
    out = []
    for row in rows(doc, dataset, epsilon):
        if row["method"] in GANS and row["settings"]:
            out.append(f"- {row['label']}: {'; '.join(row['settings'])}.")
        if row["notes"] and row["n"]:
            out.append(f"- {row['label']}: " + "; ".join(row["notes"]) + ".")
    return out


def method_notes(doc: dict[str, Any]) -> list[str]:
    return [
        "How to read it:",
        "",
        f"- 1-way / 2-way TVD: mean total-variation distance of every 1-way and 2-way marginal "
        f"to the real TRAINING rows, on the public cells of `marginal_fidelity` "
        f"({doc['eval_bins']} per numeric column). Lower is better.",
        "- RF / LR: random forest (200 trees) and logistic regression trained on the synthetic "
        "rows, tested on the real test rows (`dpforge.evaluation.utility`). Adult: AUC of "
        "'>50K'; Thyroid: one-vs-rest macro AuROC, and the MLP (the issue's Thyroid figure) "
        "first. bal. acc.: balanced accuracy (mean recall over the classes) at the argmax.",
        "- fit s: wall clock of `fit` (ours) or the fit time smartnoise reports (peers, "
        "possibly from the cache, i.e. from an earlier run on the same machine). ε spent: "
        "the ledger's (PLD when it applies), metadata included; the peers spend their target.",
        "- dpforge (default): `Synthesizer(schema, epsilon, delta, seed)`, marginal anchoring "
        "(the default for tables). dpcgan, dpwgan, gswgan: `anchor=None`, library defaults "
        "unless the epochs are capped (said under each table).",
        f"- MST, AIM: smartnoise-synth in its own venv on the same public schema, "
        f"{doc['peer_bins']} public cells per numeric column, decoded to values inside the "
        "cells; 'default' is smartnoise's sampler, 'iid' i.i.d. rows from the fitted "
        "Private-PGM model (same fit). ★ marks the better sampler by the table's headline "
        "utility score (Adult RF AUC, Thyroid MLP AuROC); dpforge is compared with that one.",
        "- real data: the real training rows as the synthetic set (classifier seeds vary); its "
        "TVD is the real TEST rows' against the training rows (sampling noise, for scale).",
        "- Synthetic sets have as many rows as the training table; seed s fits with seed s and "
        f"samples with seed {SAMPLE_SEED} + s. The test rows never train, tune or select.",
    ]


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


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    command = shlex.join(
        ["python", *(sys.argv if argv is None else ["bench/bench_tables.py", *argv])]
    )
    results = Results(args, command)
    if args.gan_epochs is not None:
        print(f"note: GAN epochs capped at {args.gan_epochs:g} (library default 50)")
    datasets = {}
    for name in args.datasets:
        datasets[name] = load_dataset(name, args.data_dir)
        results.doc["data"][name] = describe(datasets[name])
        print(
            f"{name}: {len(datasets[name].train)} training, {len(datasets[name].test)} test rows",
            flush=True,
        )
    peer_inputs = {
        name: (to_cells(d.train, d.schema, PEER_BINS), cell_domain(d.schema, PEER_BINS))
        for name, d in datasets.items()
    }
    jobs = plan(args)
    if not jobs:
        print("nothing to run (check --datasets, --epsilons and --methods)")
    for dataset, epsilon, method, seed in jobs:
        data = datasets[dataset]
        setting_ = setting(method, data, args)
        samplers = SAMPLERS if method in PEERS else (None,)
        keys = [(dataset, epsilon, method, s, seed) for s in samplers]
        what = f"{dataset} eps={'-' if epsilon is None else f'{epsilon:g}'} {method} seed={seed}"
        if args.resume and all(results.done(k, setting_) for k in keys):
            print(f"{what}: in {args.out.name}, skipped", flush=True)
            continue
        base = {
            "dataset": dataset,
            "epsilon": epsilon,
            "method": method,
            "seed": seed,
            "setting": setting_,
            "date": now(),
        }
        start = time.perf_counter()
        try:
            if method in PEERS:
                out = run_peer_seed(method, data, epsilon, seed, args, *peer_inputs[dataset])
            elif method == "real":
                out = {None: run_real(data, seed)}
            else:
                out = {None: run_ours(method, data, epsilon, seed, args)}
        except PeerNotCachedError as exc:
            for k in keys:
                results.put(
                    {
                        **base,
                        "sampler": k[3],
                        "status": "not run",
                        "note": "not in the peer cache (--no-peer-fit)",
                        "detail": str(exc),
                    }
                )
            print(f"{what}: not run (not in the peer cache; --no-peer-fit)", flush=True)
            continue
        except Exception as exc:  # a broken method must not hide the others' results
            for k in keys:
                results.put(
                    {
                        **base,
                        "sampler": k[3],
                        "status": "failed",
                        "note": f"{type(exc).__name__}: {exc}",
                    }
                )
            print(f"{what}: FAILED: {type(exc).__name__}: {exc}", flush=True)
            continue
        wall = time.perf_counter() - start
        for sampler, run in out.items():
            results.put({**base, "sampler": sampler, "status": "ok", "wall_seconds": wall, **run})
            print(
                f"{what}{f' {sampler}' if sampler else ''}: " + summary_line(run, data), flush=True
            )
    if results.entry in results.doc["commands"]:
        results.write()
    print()
    print("\n".join(sections(results.doc)))
    print(f"wrote {args.out} and {args.out.with_suffix('.md')}")
    return results.doc


def summary_line(run: dict[str, Any], data: Dataset) -> str:
    parts = [
        f"{h} {run[k]:.{max(d, 3) if k != 'fit_seconds' else 0}f}"
        for k, h, d in columns(data.name)
        if run.get(k) is not None
    ]
    if run.get("cached") is not None:
        parts.append("cached" if run["cached"] else "fitted now")
    return ", ".join(parts)


if __name__ == "__main__":
    main()
