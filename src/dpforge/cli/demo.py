"""``dpforge demo``: the main job on an embedded default, real records shipped by scikit-learn.

The default table synthesizer (a generator anchored on DP-measured marginals) at the requested
(epsilon, delta) on 80% of the breast-cancer records (Wisconsin diagnostic, 569 patients), with
every bound and the label prior estimated under DP and charged to the budget; then synthetic
rows are written and a classifier trained on them is tested on the 20% of real records held
out, next to the same classifier trained on the real 80%. The split is public (the records ship
with scikit-learn), so it is written beside the model (``public-train.csv``,
``public-test.csv``) and the demo ends with the two commands that evaluate and report it.
"""

from __future__ import annotations

import shlex
import time
from dataclasses import replace
from pathlib import Path

import pandas as pd
from rich.console import Console

from dpforge.datasets.breast_cancer import load_breast_cancer_demo
from dpforge.evaluation.utility import tstr_auroc
from dpforge.model_io import is_model_folder
from dpforge.schema.table import Schema
from dpforge.storage import FolderKind, atomic_write
from dpforge.synthesizer import Synthesizer

# 21 DP releases (two histograms per bound pair, one for the label prior) on 455 records need
# a larger share than the library's default 10% to give usable bounds.
DEMO_METADATA_SHARE = 0.2


def _mean_features(train: pd.DataFrame, test: pd.DataFrame, schema: Schema):
    """Keep the ten 'mean ...' measurements and the label: fewer bounds to pay for."""
    keep = [c for c in schema.columns if c.name.startswith("mean ") or c.name == schema.label]
    names = [c.name for c in keep]
    return train[names], test[names], replace(schema, columns=tuple(keep))


def _is_demo_folder(path: Path) -> bool:
    return is_model_folder(path / "model")


# The demo's public split, written beside the model so that evaluate and report can use it.
TRAIN_CSV, TEST_CSV = "public-train.csv", "public-test.csv"
# The demo's folder holds its model folder and its CSVs; only such a folder is written into.
DEMO_FOLDER = FolderKind(
    "demo folder",
    frozenset({"model", "synthetic.csv", TRAIN_CSV, TEST_CSV, "evaluation.json", "report.html"}),
    _is_demo_folder,
)


def _write_split(out: Path, train: pd.DataFrame, test: pd.DataFrame) -> None:
    """The public training and held-out records, as CSV files beside the model."""
    for name, frame in ((TRAIN_CSV, train), (TEST_CSV, test)):
        atomic_write(out / name, lambda p, f=frame: f.to_csv(p, index=False), overwrite=True)


def next_commands(out: Path) -> list[str]:
    """The two commands that evaluate and report the demo's model on its public split."""
    q = {
        k: shlex.quote(str(out / v)) for k, v in (("m", "model"), ("a", TRAIN_CSV), ("b", TEST_CSV))
    }
    split = f"--real-train {q['a']} --real-test {q['b']}"
    return [
        f"dpforge evaluate {q['m']} {split} -o {shlex.quote(str(out / 'evaluation.json'))}",
        f"dpforge report {q['m']} {split} -o {shlex.quote(str(out / 'report.html'))}",
    ]


def run_demo(out: Path, epsilon: float, delta: float, seed: int | None, console: Console) -> None:
    train, test, schema = _mean_features(*load_breast_cancer_demo(seed=0))
    console.print(
        f"[bold]dpforge demo[/bold]: marginal-anchored generator on {len(train)} breast-cancer "
        "records "
        f"({len(schema.columns) - 1} features, label '{schema.label}'), epsilon = {epsilon:g}, "
        f"delta = {delta:g}"
    )
    started = time.perf_counter()
    synth = Synthesizer(
        schema, epsilon=epsilon, delta=delta, metadata_share=DEMO_METADATA_SHARE, seed=seed
    ).fit(train)
    rows = synth.sample(len(train), seed=seed)
    elapsed = time.perf_counter() - started
    out.mkdir(parents=True, exist_ok=True)
    synth.save(out / "model", overwrite=True)
    atomic_write(out / "synthetic.csv", lambda p: rows.to_csv(p, index=False), overwrite=True)
    _write_split(out, train, test)
    report = synth.privacy_spent()
    console.print(f"wrote {out / 'model'} and {len(rows)} rows to {out / 'synthetic.csv'}")
    console.print(
        f"privacy spent: {report.summary()}, metadata included; training and sampling "
        f"took {elapsed:.0f} s"
    )
    synthetic_score = tstr_auroc(rows, test, schema=synth.schema_, classifier="lr")
    real_score = tstr_auroc(train, test, schema=synth.schema_, classifier="lr")
    console.print(
        f"utility: logistic regression trained on synthetic rows, tested on {len(test)} held-out "
        f"real records: AuROC {synthetic_score.value:.3f} (trained on the real records: "
        f"{real_score.value:.3f})"
    )
    console.print(
        f"the public split is beside the model ({out / TRAIN_CSV}, {out / TEST_CSV}); "
        "evaluate and report the model with:"
    )
    for command in next_commands(out):
        console.print(f"  {command}", markup=False, highlight=False, soft_wrap=True)
