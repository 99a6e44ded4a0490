"""Which features' synthetic label relations cost a linear classifier AUC (issue 22, nmes).

One fit (``quality_trials.py``'s settings), its rows drawn as the trials draw them, then for
every feature: the LR AUC on the real test rows when that feature is left out of training, on
real and on synthetic training rows. A feature whose removal raises the synthetic-trained AUC
while it barely moves the real-trained one carries a relation the synthetic rows invent.
Also each numeric column's mean per class, real and synthetic. Diagnostic only: it reads the
real training rows, as the scores do.

    python bench/lr_feature_drop.py nmes --epsilon 1 --seed 1
"""

from __future__ import annotations

import argparse

import pandas as pd
import torch

import harness
from dpforge.evaluation.utility import auroc_scores, predict_test
from dpforge.schema.table import Schema
from quality_trials import anchor_config
from tables_runs import SAMPLE_SEED, load_dataset, timed_fit


def lr_auc(train: pd.DataFrame, data, drop: str | None = None) -> float:
    """LR AUC of the positive class on the real test rows, without column ``drop``."""
    columns = tuple(c for c in data.schema.columns if c.name != drop)
    schema = Schema(columns, label=data.schema.label, label_prior=data.schema.label_prior)
    keep = [c.name for c in columns]
    pred = predict_test(train[keep], data.test[keep], schema, classifier="lr", seed=0)
    return auroc_scores(pred)["per_class"][data.positive]


def report(data, rows: pd.DataFrame) -> list[str]:
    """The drop-one table and the class means, as text lines."""
    base = {"real": lr_auc(data.train, data), "synthetic": lr_auc(rows, data)}
    lines = [f"LR AUC, every feature: real {base['real']:.3f}, synthetic {base['synthetic']:.3f}"]
    lines.append("left out     real  synthetic  (AUC change)")
    label = data.schema.label
    for column in data.schema.feature_columns:
        real = lr_auc(data.train, data, column.name) - base["real"]
        synth = lr_auc(rows, data, column.name) - base["synthetic"]
        lines.append(f"{column.name:10s} {real:+.3f}  {synth:+.3f}")
    lines.append("numeric means per class (real / synthetic)")
    for column in (c for c in data.schema.feature_columns if c.is_numeric):
        classes = sorted(data.train[label].unique())
        fs = (data.train, rows)
        means = [f"{k}: {f[f[label] == k][column.name].mean():.2f}" for k in classes for f in fs]
        lines.append(f"{column.name:10s} " + "  ".join(means))
    return lines


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("table")
    p.add_argument("--epsilon", type=float, default=1.0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--set", action="append", default=[], help="AnchorConfig key=value")
    harness.add_data_dir(p)
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    data = load_dataset(args.table, harness.data_dir(args.data_dir))
    synth, _, cpu = timed_fit(data, args.epsilon, args.seed, anchor_config(args.set))
    rows = synth.sample(len(data.train), seed=SAMPLE_SEED + args.seed)
    print(f"{args.table} eps={args.epsilon:g} seed={args.seed} {' '.join(args.set)} "
          f"(fit {cpu:.1f} CPU s)")  # fmt: skip
    print("\n".join(report(data, rows)))


if __name__ == "__main__":
    main()
