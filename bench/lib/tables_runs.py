"""The runs of tables.py: the data sets, and one fit-sample-score per method and seed.

Every method sees the same public schema and is scored the same way (``score``): fidelity of
the synthetic rows to the real training rows, utility of classifiers trained on them and tested
on the real test rows.
"""

from __future__ import annotations

import argparse
import math
import time
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dpforge import Schema, Synthesizer
from dpforge.datasets.adult import load_adult
from dpforge.datasets.thyroid import load_thyroid
from dpforge.evaluation.association import cell_associations
from dpforge.evaluation.fidelity import marginal_fidelity
from dpforge.evaluation.inputs import typed_table
from dpforge.evaluation.utility import accuracy_scores, auroc_scores, predict_test
from dpforge.methods import METHODS
from dpforge.schema.table import Column
from lib import harness
from lib.harness import Timer, append_jsonl
from lib.new_tables import NEW_TABLES, PRIVACY_UNITS, load_new_table
from lib.public_tables import HOLDOUT_TABLES, PUBLIC_TABLES, load_public_table
from peers.adapter import run_peer_samplers
from peers.cells import ADULT_DECLARED_BOUNDS, declare_bounds, from_cells


def sample_rate(method: str, config: Any, n_records: int) -> float:
    """The method's sampling rate q (B/N, or 1/K for gswgan): steps = epochs / q."""
    method_cls = METHODS[method][0]
    if hasattr(method_cls, "sample_rate"):
        return method_cls.sample_rate(config, n_records)
    return config.batch_size / n_records


DATASETS = ("adult", "thyroid", *PUBLIC_TABLES, *NEW_TABLES)
# run unless --datasets names others: the holdout tables (tables/holdout.json) and issue 44's
# new tables (tables/new_tables.md) only when named
DEFAULT_DATASETS = tuple(n for n in DATASETS if n not in HOLDOUT_TABLES and n not in NEW_TABLES)
EPSILONS = {
    "adult": (1.0, 3.0),
    "thyroid": (3.7,),
    **{name: (1.0, 3.0) for name in (*PUBLIC_TABLES, *NEW_TABLES)},
}
GANS = ("dpcgan", "dpwgan", "gswgan")
PEERS = ("mst", "aim")
SAMPLERS = ("default", "iid")
METHOD_ORDER = ("dpforge", *GANS, *PEERS, "real")
PEER_BINS = 64  # the public cells every peer sees (cells.to_cells), as in peers/fill_cache.py
QUICK_GAN_STEPS = 150  # --quick: GANs train this many discriminator steps (minimum 100)
SAMPLE_SEED = 10_000  # synthetic rows are drawn with seed SAMPLE_SEED + seed


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
    unit: tuple[str, int] | None = None  # the privacy unit's column and public k, if any


def load_dataset(name: str, data_dir: Path) -> Dataset:
    """Adult (natural class balance, two bounds declared), Thyroid or a table of
    ``public_tables``, with their schemas."""
    if name in NEW_TABLES:
        train, test, schema = load_new_table(name)
        info = {"source": f"bench/lib/new_tables.py: {name} (public split, seed 0)"}
        unit = PRIVACY_UNITS.get(name)
        if unit:
            info["privacy_unit"] = {"column": unit[0], "k": unit[1]}
        return Dataset(name, train, test, schema, "yes", ("rf", "lr"), info, unit)
    if name in PUBLIC_TABLES:
        train, test, schema = load_public_table(name)
        info = {"source": f"bench/lib/public_tables.py: {name} (public split, seed 0)"}
        return Dataset(name, train, test, schema, "yes", ("rf", "lr"), info)
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


def each_fit(tables: str, args: argparse.Namespace) -> Iterator[tuple[str, Dataset, float, int]]:
    """(table, data, epsilon, seed) for every table of a comma list, each at its benchmark
    epsilons and at ``args``' seeds (``harness.add_seeds``, ``harness.add_data_dir``)."""
    for name in tables.split(","):
        data = load_dataset(name, harness.data_dir(args.data_dir))
        for epsilon in EPSILONS[name]:
            for seed in harness.seeds(args):
                yield name, data, epsilon, seed


def timed_fit(data: Dataset, epsilon: float, seed: int, anchor: Any = "auto"):
    """dpforge fitted on ``data``'s training rows (``anchor``: an AnchorConfig, or "auto" for
    the default), with the fit's wall-clock and CPU seconds (the machine may be shared: CPU
    time is the comparable one)."""
    synth = Synthesizer(data.schema, epsilon=epsilon, seed=seed, progress=False, anchor=anchor)
    started, cpu = time.perf_counter(), time.process_time()
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="values outside the bounds")
        synth.fit(data.train)
    return synth, time.perf_counter() - started, time.process_time() - cpu


def describe(data: Dataset) -> dict[str, Any]:
    """Sizes, label and class counts of a data set, for the results file."""
    return {
        **data.info,
        "n_train": len(data.train),
        "n_test": len(data.test),
        "label": data.schema.label,
        "label_prior": str(getattr(data.schema, "label_prior", None)),
        "train_classes": data.train[data.schema.label].value_counts().to_dict(),
        "test_classes": data.test[data.schema.label].value_counts().to_dict(),
    }


def score(synthetic: pd.DataFrame, data: Dataset, seed: int, fidelity_of: pd.DataFrame | None):
    """TVD and Cramér's V (``association``) of ``fidelity_of`` (default: ``synthetic``) against
    the real training rows, and the classifiers trained on ``synthetic``, tested on the real
    test rows."""
    rows = synthetic if fidelity_of is None else fidelity_of
    with Timer() as timer:
        fid = marginal_fidelity(_on_axis(data.train, data), _on_axis(rows, data), data.schema)
        out: dict[str, Any] = {"tvd_1way": fid.mean_one_way, "tvd_2way": fid.mean_two_way}
        out.update(association(data.train, rows, data.schema))
        out["classifier_info"] = {
            kind: classifier_scores(synthetic, data, kind, seed, out) for kind in data.classifiers
        }
    out["eval_seconds"] = timer.seconds
    return out


def _on_axis(table: pd.DataFrame, data: Dataset) -> pd.DataFrame:
    """``table`` with its dates as numbers on their time axis (``marginal_fidelity`` bins
    numbers); as it is when the schema has no date."""
    if any(c.is_time for c in data.schema.columns):
        return typed_table(table, data.schema, "evaluated")
    return table


def association(real: pd.DataFrame, rows: pd.DataFrame, schema: Schema) -> dict[str, Any]:
    """Mean |synthetic V - real V| over the column pairs on the evaluation's cells, the pair
    of the largest excess and the pairs that invent a dependence (``cell_associations``)."""
    result = cell_associations(real, rows, schema)
    return {
        "v_mean_abs_diff": result.value,
        "v_largest_excess": result.details["largest_excess"],
        "v_invented": result.details["invented"],
    }


def classifier_scores(synthetic, data: Dataset, kind: str, seed: int, out: dict) -> dict:
    """AUC and balanced accuracy of one classifier into ``out``; its fit notes returned."""
    rows, test = _on_axis(synthetic, data), _on_axis(data.test, data)  # the classifiers read
    pred = predict_test(rows, test, data.schema, classifier=kind, seed=seed)  # numbers
    auc = auroc_scores(pred)
    out[f"{kind}_auc"] = auc["per_class"][data.positive] if data.positive else auc["macro"]
    out[f"{kind}_bal_acc"] = accuracy_scores(pred)["balanced_accuracy"]
    notes = ("degenerate", "converged", "classes_missing_from_train")
    return {k: pred.info[k] for k in notes if k in pred.info}


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
    """The GANs' epochs: --gan-epochs, else (--quick) a few steps' worth, else the default."""
    if args.gan_epochs is not None:
        return args.gan_epochs
    if args.quick:  # QUICK_GAN_STEPS steps at the method's default sampling rate
        config = METHODS[method][1]()
        return QUICK_GAN_STEPS * sample_rate(method, config, len(data.train))
    return None


def run_ours(method: str, data: Dataset, epsilon: float, seed: int, args) -> dict[str, Any]:
    """Fit our default (``dpforge``) or a GAN without anchoring; sample; score."""
    options: dict[str, Any] = {}
    if method in GANS:
        options = {"method": method, "anchor": None, "epochs": gan_epochs(method, data, args)}
    schema = data.schema
    if data.unit is not None:  # the guarantee per person: the unit column joins as "drop"
        column, k = data.unit
        schema = replace(schema, columns=(*schema.columns, Column(column, "drop")))
        options.update(privacy_unit=column, max_rows_per_unit=k)
    synth = Synthesizer(
        schema, epsilon=epsilon, delta=args.delta, seed=seed, progress=False, **options
    )
    cpu = time.process_time()
    with Timer() as fit, warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="values outside the bounds were clipped")
        synth.fit(data.train)
    cpu = time.process_time() - cpu  # the machine may be shared: the CPU time of the fit too
    cpu_sample = time.process_time()
    with Timer() as sample:
        synthetic = synth.sample(len(data.train), seed=SAMPLE_SEED + seed)
    cpu_sample = time.process_time() - cpu_sample
    report = synth.privacy_spent()
    plan = synth.plan_
    return {
        **score(synthetic, data, seed, None),
        **unmatched_scores(synth, data, seed),
        "sample_cpu_seconds": cpu_sample,
        "fit_seconds": fit.seconds,
        "fit_cpu_seconds": cpu,
        "sample_seconds": sample.seconds,
        "epsilon_spent": report.epsilon,
        "accountant": report.accountant,
        "epsilon_pld": report.epsilon_pld,
        "epsilon_rdp": report.epsilon_rdp,
        "steps": plan.steps,
        "noise_multiplier": plan.noise_multiplier,
        "epochs": plan.steps * plan.sample_rate,
        "ledger": [e.name for e in synth.ledger_.entries],
    }


def log_scored(out, record: dict[str, Any], note: str = "") -> None:
    """Append one scored trial (``record``: table, epsilon, seed, tag and ``score``'s figures)
    to the JSON lines ``out`` and print its headline figures."""
    append_jsonl(out, record)
    print(
        f"{record['table']} eps={record['epsilon']:g} seed={record['seed']} {record['tag']}: "
        f"1w {record['tvd_1way']:.4f} 2w {record['tvd_2way']:.4f} rf {record['rf_auc']:.3f} "
        f"lr {record['lr_auc']:.3f} {note}",
        flush=True,
    )


def unmatched_scores(synth, data: Dataset, seed: int) -> dict[str, Any]:
    """The same fit's draws as they come (``move=False``), scored side by side with the rows
    matched to the release (the default for tables anchored on marginals), or {} where
    nothing is matched (the GANs)."""
    if getattr(synth, "sample_release_", None) is None:
        return {}
    rows = synth.sample(len(data.train), seed=SAMPLE_SEED + seed, move=False)
    out = score(rows, data, seed, None)
    out.pop("classifier_info", None)
    return {"unmatched": out}


def peer_budget(data: Dataset, epsilon: float, delta: float) -> tuple[float, float]:
    """The per-row (epsilon, delta) a peer runs at so that its release is (epsilon, delta)-DP
    per person: the peers know no privacy unit, so with k rows per person kept (``peer_rows``)
    group privacy applies: an (e, d)-DP release is (k e, k exp((k - 1) e) d)-DP for groups of
    k rows (Dwork and Roth, 2014, Theorem 2.2 and its approximate form). Unchanged without a
    unit."""
    if data.unit is None:
        return epsilon, delta
    k = data.unit[1]
    per_row = epsilon / k
    return per_row, delta / (k * math.exp((k - 1) * per_row))


def peer_rows(data: Dataset) -> pd.DataFrame:
    """The training rows a peer sees: with a privacy unit, at most k rows per person (chosen
    with the public seed 0; all of them when no person has more than k)."""
    if data.unit is None:
        return data.train
    column, k = data.unit
    shuffled = data.train.sample(frac=1.0, random_state=0)
    return shuffled.groupby(column, sort=False).head(k).sort_index()


def run_peer_seed(method: str, data: Dataset, epsilon: float, seed: int, args, cells, domain):
    """MST or AIM: both samplers from one (cached) fit, each decoded and scored; a fit past
    ``args.peer_timeout`` seconds raises the adapter's ``PeerTimeoutError``."""
    peer_epsilon, peer_delta = peer_budget(data, epsilon, args.delta)
    results = run_peer_samplers(
        cells,
        domain,
        method,
        peer_epsilon,
        peer_delta,
        seed,
        len(data.train),
        SAMPLERS,
        cache_dir=args.peer_cache,
        cache_only=args.no_peer_fit,
        timeout=args.peer_timeout,
    )
    out = {}
    for sampler, (synth_cells, info) in results.items():
        synthetic = from_cells(synth_cells, data.schema, PEER_BINS, np.random.default_rng(seed))
        out[sampler] = {
            **score(synthetic, data, seed, None),
            "fit_seconds": info["fit_seconds"],
            "fit_cpu_seconds": info.get("fit_cpu_seconds"),  # fits since issue 22's rerun
            "sample_seconds": info["sample_seconds"],
            "epsilon_spent": epsilon,  # smartnoise spends its target; it reports no ledger
            "accountant": "target (smartnoise)"
            + ("" if data.unit is None else f", per row {peer_epsilon:.4g} (group privacy)"),
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
