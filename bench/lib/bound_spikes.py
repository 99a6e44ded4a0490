"""Spikes on generous public bounds (issue 46.3): the share of synthetic values exactly on a
declared bound against the real share, next to the 1-way / 2-way TVD and a classifier's AUC.

Two public tables with bounds declared wide, as the README tells users to: the Palmer
penguins (bill length [0, 100] mm, flipper [0, 300] mm, body mass [0, 10,000] g) and eight
columns of sklearn's breast cancer table (every measure from 0 to a round number well above
its range). Each run fits the default on a public split's training two thirds (seed 0) and
samples 5,000 rows; fidelity is against the training rows, the AUC (logistic regression,
``dpforge.evaluation.evaluate.utility_scores``) on the test third. ``--label`` names the code
measured (``before``: run with ``PYTHONPATH`` at the commit before the fix, into another
file, then ``--merge`` it); the runs accumulate in bench/results/tables/bound_spikes.json and
its Markdown::

    python bench/tables.py spikes --label after --epsilons 1 3 --seeds 0 1 2
    PYTHONPATH=OLD/src python bench/tables.py spikes --label before --out /tmp/before.json
    python bench/tables.py spikes --merge /tmp/before.json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pandas as pd

from dpforge import Synthesizer
from dpforge.evaluation.evaluate import fidelity_scores, utility_scores
from dpforge.schema.table import Column, Schema
from lib import harness

OUT = Path(__file__).resolve().parents[1] / "results" / "tables" / "bound_spikes.json"
TITLE = "Spikes on generous public bounds (issue 46.3)"
SAMPLES = 5000


def _penguins() -> tuple[pd.DataFrame, Schema]:
    import palmerpenguins

    frame = palmerpenguins.load_penguins().drop(columns=["year"])
    schema = Schema(
        columns=(
            Column("species", "categorical", categories=("Adelie", "Chinstrap", "Gentoo")),
            Column("island", "categorical", categories=("Biscoe", "Dream", "Torgersen")),
            Column("bill_length_mm", "continuous", 0.0, 100.0, nullable=True),
            Column("bill_depth_mm", "continuous", 0.0, 50.0, nullable=True),
            Column("flipper_length_mm", "continuous", 0.0, 300.0, nullable=True),
            Column("body_mass_g", "continuous", 0.0, 10000.0, nullable=True),
            Column("sex", "categorical", categories=("female", "male"), nullable=True),
        ),
        label="species",
    )
    return frame, schema


CANCER_BOUNDS = {
    "mean radius": 50.0, "mean texture": 100.0, "mean perimeter": 500.0, "mean area": 5000.0,
    "mean smoothness": 1.0, "mean compactness": 1.0, "mean concavity": 1.0,
    "mean symmetry": 1.0,
}  # fmt: skip


def _cancer() -> tuple[pd.DataFrame, Schema]:
    from sklearn.datasets import load_breast_cancer

    data = load_breast_cancer(as_frame=True)
    frame = data.frame[list(CANCER_BOUNDS)].copy()
    frame["diagnosis"] = np.where(data.frame["target"] == 1, "benign", "malignant")
    columns = [Column(n, "continuous", 0.0, upper) for n, upper in CANCER_BOUNDS.items()]
    categories = ("benign", "malignant")
    columns.append(Column("diagnosis", "categorical", categories=categories))
    return frame, Schema(columns=tuple(columns), label="diagnosis")


TABLES = {"penguins": _penguins, "breast_cancer": _cancer}


def _split(frame: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    order = np.random.default_rng(0).permutation(len(frame))
    cut = 2 * len(frame) // 3
    return frame.iloc[order[:cut]], frame.iloc[order[cut:]]


def bound_shares(frame: pd.DataFrame, schema: Schema) -> dict[str, list[float]]:
    """Per numeric column, the share of its present values equal to its lower and upper bound."""
    out = {}
    for c in schema.columns:
        if c.is_numeric:
            values = pd.to_numeric(frame[c.name], errors="coerce").dropna()
            out[c.name] = [float((values == c.lower).mean()), float((values == c.upper).mean())]
    return out


def run_one(table: str, epsilon: float, seed: int) -> dict:
    frame, schema = TABLES[table]()
    train, test = _split(frame)
    synth = Synthesizer(schema, epsilon=epsilon, seed=seed, progress=False).fit(train)
    rows = synth.sample(SAMPLES, seed=seed)
    real, synthetic = bound_shares(train, schema), bound_shares(rows, schema)
    excess = max(s - r for n in real for s, r in zip(synthetic[n], real[n], strict=True))
    tvd = fidelity_scores(train, rows, schema)["tvd"]
    auc = utility_scores(train, test, rows, schema, classifiers=("lr",), seed=seed)
    return {
        "table": table, "epsilon": epsilon, "seed": seed, "real": real, "synthetic": synthetic,
        "excess": excess, "tvd1": tvd["mean_one_way"], "tvd2": tvd["mean_two_way"],
        "auc": auc["mean"]["synthetic"]["auroc_macro"],
    }  # fmt: skip


def _means(runs: list[dict]) -> list[str]:
    """The mean over seeds of each (code, table, epsilon)."""
    groups: dict[tuple, list[dict]] = {}
    for r in runs:
        groups.setdefault((r["label"], r["table"], r["epsilon"]), []).append(r)
    lines = [
        "| code | table | ε | seeds | largest excess (max) | 1-way TVD | 2-way TVD | AuROC |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for (label, table, epsilon), rs in sorted(groups.items(), key=lambda g: g[0][1:] + g[0][:1]):
        mean = {k: float(np.mean([r[k] for r in rs])) for k in ("tvd1", "tvd2", "auc")}
        lines.append(
            f"| {label} | {table} | {epsilon:g} | {len(rs)} | "
            f"{max(r['excess'] for r in rs):.3f} | {mean['tvd1']:.3f} | {mean['tvd2']:.3f} | "
            f"{mean['auc']:.3f} |"
        )
    return lines


def _body(runs: list[dict], commands: list[str] = (), notes: list[str] = ()) -> list[str]:
    lines = [
        "Runs: " + "; ".join(f"`{c}`" for c in commands),
        "",
        *[f"{n}\n" for n in notes],
        *_means(runs),
        "",
        "Each run:",
        "",
        "Largest excess: the most that a bound's synthetic share exceeds its real share, over",
        "the numeric columns and both bounds (done: at most 0.01).",
        "",
        "| code | table | ε | seed | largest excess | where (its shares) | 1-way TVD | 2-way TVD "
        "| LR macro AuROC |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in runs:
        where = max(r["synthetic"], key=lambda n: max(r["synthetic"][n]))
        lines.append(
            f"| {r['label']} | {r['table']} | {r['epsilon']:g} | {r['seed']} | "
            f"{r['excess']:.3f} | {where} {[round(v, 3) for v in r['synthetic'][where]]} "
            f"| {r['tvd1']:.3f} | {r['tvd2']:.3f} | {r['auc']:.3f} |"
        )
    return lines


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="tables.py spikes", description=__doc__.split("\n\n")[0])
    p.add_argument("--label", default="after", help="which code is measured (before / after)")
    p.add_argument("--merge", type=Path, help="add the runs of this results file (no fits)")
    p.add_argument("--tables", nargs="+", default=list(TABLES), choices=list(TABLES))
    p.add_argument("--epsilons", nargs="+", type=float, default=[1.0, 3.0])
    p.add_argument("--seeds", nargs="+", type=int, default=[0])
    p.add_argument("--out", type=Path, default=OUT)
    args = p.parse_args(argv)
    doc = json.loads(args.out.read_text()) if args.out.is_file() else {"runs": []}
    tables = str(Path(__file__).resolve().parents[1] / "tables.py")
    doc.update(harness.provenance(tables, ["spikes", *(argv or [])]))
    doc.setdefault("commands", []).append(doc["command"])
    if args.merge is not None:
        doc["runs"] += json.loads(args.merge.read_text())["runs"]
        harness.write_results(
            args.out, doc, TITLE, _body(doc["runs"], doc["commands"], doc.get("notes", []))
        )
        return
    for table in args.tables:
        for epsilon in args.epsilons:
            for seed in args.seeds:
                run = {"label": args.label, **run_one(table, epsilon, seed)}
                key = (args.label, table, epsilon, seed)
                doc["runs"] = [
                    r for r in doc["runs"]
                    if (r["label"], r["table"], r["epsilon"], r["seed"]) != key
                ] + [run]  # fmt: skip
                harness.write_results(
                    args.out, doc, TITLE, _body(doc["runs"], doc["commands"], doc.get("notes", []))
                )
                print(_body([run])[-1], flush=True)
