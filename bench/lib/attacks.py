"""Attack sanity in numbers (issue 12): the membership attacks see overfitting, and DP hides it.

Set-up, per seed. One pool of records, Adult's balanced TRAINING file reduced to ``--columns``
(age, fnlwgt, hours-per-week and the label by default), is permuted with the seed; the first
``--members`` rows (40 by default) are the members (the only rows any model trains on), the next
``--held-out-rows`` are the attacker's non-member targets and reference set, and the next
``--synthetic-rows`` are the ``holdout`` release. Members and non-members therefore come from the
same file and the same distribution: a difference between them is membership only.

Releases (``--synthetic-rows`` rows each), attacked with the three attacks of
``dpforge.evaluation.attacks``:

* ``copy``: the members themselves (the attacks' ceiling, not a model);
* ``holdout``: other rows of the pool, never trained on (the floor: AUC 0.5 whatever the attack);
* ``anchor-overfit``: dpforge's default table synthesizer (marginal anchoring, no discriminator
  steps) with privacy OFF (epsilon = inf): it measures the members' 1-way, label x column and
  column-pair marginals exactly (with 3 feature columns every pair is selected) on fine
  data-following cells, and trains its generator to reproduce them. On a few dozen members this
  is the deliberately overfitted model: a real generator fitted to statistics that, at this
  size, pin down the members;
* ``anchor-dp``: the same synthesizer and settings at ``--epsilon`` (delta 1e-5);
* ``gan-overfit``: DP-WGAN with privacy off (sigma = 0, no clipping, no anchoring), generator
  and critic two hidden layers of ``--hidden`` units, full-batch, ``--gan-epochs`` epochs at
  learning rate ``--gan-lr``;
* ``gan-dp``: the same DP-WGAN at ``--epsilon`` (sigma calibrated by the accountant).

All releases are encoded with one schema for the attacks: the model schema, with fnlwgt's bounds
(left to dpforge's DP estimate when training) taken from the held-out rows' range widened by
10 %. With ``--members`` m, each attack has m member and m non-member targets, so an AUC of 0.5
has a standard error of about sqrt((m + 1) / (12 m^2)) (0.065 at m = 40; Hanley-McNeil at the
measured AUC is printed), and TPR at 1 % FPR is the TPR at zero false positives when m < 100.
Single-threaded. Results: ``bench/results/audits/attacks.json`` and ``.md`` (with the command),
rewritten after every run::

    OMP_NUM_THREADS=1 python bench/audits.py attacks
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

from dpforge import Synthesizer
from dpforge.datasets.adult import load_adult
from dpforge.evaluation.attacks import ATTACKS, membership_attacks, table_matrix
from dpforge.evaluation.inputs import typed_table
from dpforge.methods.dpwgan import DPWGANConfig
from dpforge.schema.table import Schema
from dpforge.statistics.anchor import AnchorConfig
from lib import harness

RELEASES = ("copy", "holdout", "anchor-overfit", "anchor-dp", "gan-overfit", "gan-dp")
DELTA = 1e-5


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--members", type=int, default=40)
    p.add_argument("--columns", default="age,fnlwgt,hours-per-week")
    p.add_argument("--held-out-rows", type=int, default=2000)
    p.add_argument("--synthetic-rows", type=int, default=2000)
    p.add_argument("--epsilon", type=float, default=1.0)
    p.add_argument("--anchor-steps", type=int, default=3000)
    p.add_argument("--gan-epochs", type=float, default=30000.0)
    p.add_argument("--gan-lr", type=float, default=1e-3)
    p.add_argument("--hidden", type=int, default=256, help="width of both hidden layers, G and D")
    harness.add_seeds(p, "0,1,2")
    harness.add_data_dir(p)
    p.add_argument("--releases", default=",".join(RELEASES))
    harness.add_out(p, harness.results("audits", "attacks.json"))
    return p.parse_args(argv)


def subset_schema(schema: Schema, columns: list[str]) -> Schema:
    """Adult's public schema reduced to ``columns`` and the label."""
    keep = [c for c in schema.columns if c.name in columns or c.name == schema.label]
    return Schema(tuple(keep), label=schema.label, label_prior=schema.label_prior)


def complete_schema(schema: Schema, rows: pd.DataFrame) -> Schema:
    """Bounds for the columns Adult leaves to DP (fnlwgt, capital-loss): the held-out rows' range
    widened by 10 %; used only to encode records for the attacks, the same for every release."""
    columns = []
    for column in schema.columns:
        if column.is_numeric and not column.is_complete:
            low, high = float(rows[column.name].min()), float(rows[column.name].max())
            pad = 0.1 * (high - low)
            column = type(column)(column.name, column.type, lower=low - pad, upper=high + pad)
        columns.append(column)
    return Schema(tuple(columns), label=schema.label, label_prior=schema.label_prior)


def make_model(kind: str, args, schema: Schema, n: int, seed: int) -> Synthesizer | None:
    """The synthesizer of release ``kind`` (None for the copy and holdout releases)."""
    epsilon = math.inf if kind.endswith("overfit") else args.epsilon
    if kind.startswith("anchor"):
        # the default synthesizer (no discriminator options: none applies without one)
        anchor = AnchorConfig(steps=args.anchor_steps)
        return Synthesizer(
            schema, epsilon=epsilon, delta=DELTA, anchor=anchor, seed=seed, progress=False
        )
    if kind.startswith("gan"):
        wide = (args.hidden, args.hidden)
        options = DPWGANConfig(
            batch_size=n, generator_hidden=wide, discriminator_hidden=wide,
            g_lr=args.gan_lr, d_lr=args.gan_lr,
        )  # fmt: skip
        return Synthesizer(
            schema, method="dpwgan", epsilon=epsilon, delta=DELTA, method_options=options,
            epochs=args.gan_epochs, anchor=None, seed=seed, progress=False,
        )  # fmt: skip
    return None


def one_run(kind: str, seed: int, args, pool: pd.DataFrame, schema: Schema) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(pool))
    n, h = args.members, args.held_out_rows
    members = pool.iloc[order[:n]].reset_index(drop=True)
    held = pool.iloc[order[n : n + h]].reset_index(drop=True)
    spare = pool.iloc[order[n + h : n + h + args.synthetic_rows]].reset_index(drop=True)
    synth = make_model(kind, args, schema, n, seed)
    info: dict[str, Any] = {}
    if synth is not None:
        with harness.Timer() as fit:
            synth.fit(members)
        info = {
            "fit_seconds": round(fit.seconds, 1),
            "epsilon_spent": synth.privacy_spent().epsilon,
            "discriminator_steps": synth.plan_.steps,
            "noise_multiplier": synth.plan_.noise_multiplier,
            "ledger": [e.name for e in synth.ledger_.entries],
        }
        released = synth.sample(args.synthetic_rows, seed=seed)
    else:
        released = members if kind == "copy" else spare
    encode = complete_schema(schema, held)
    matrices = [
        table_matrix(typed_table(t, encode, role), encode)
        for t, role in ((members, "train"), (held, "held out"), (released, "release"))
    ]
    result = membership_attacks(*matrices, seed=seed)
    attacks = {
        name: {k: a[k] for k in ("auc", "tpr_at_1pct_fpr")} for name, a in result["attacks"].items()
    }
    return {"release": kind, "seed": seed, **info, "targets": result["targets"], "attacks": attacks}


def auc_standard_error(auc: float, n_pos: int, n_neg: int) -> float:
    """Hanley & McNeil (1982): the standard error of an AUC from n_pos and n_neg scores."""
    q1, q2 = auc / (2 - auc), 2 * auc**2 / (1 + auc)
    var = auc * (1 - auc) + (n_pos - 1) * (q1 - auc**2) + (n_neg - 1) * (q2 - auc**2)
    return math.sqrt(max(var, 0.0) / (n_pos * n_neg))


TITLE = "Membership attacks: overfitted vs DP (issue 12)"


def markdown(record: dict[str, Any]) -> list[str]:
    """The Markdown body under the harness header: one row per release."""
    s = record["settings"]
    lines = [
        f"Adult's balanced training file, columns {s['columns']} + label, one pool permuted per "
        f"seed: {s['members']} members (training rows), {s['held_out_rows']} held-out rows "
        "(non-member targets + attacker's reference) and the holdout release, all from that "
        f"one pool; {s['synthetic_rows']} released rows. Cells: mean AUC over seeds ± its "
        "standard error for one run (Hanley-McNeil at that AUC, "
        f"{s['members']} members vs {s['members']} non-members), [min-max over seeds]; TPR at "
        "1 % FPR as mean [min-max].",
        "",
        "| release | eps spent | seeds | "
        + " | ".join(f"{a} AUC | {a} TPR@1%" for a in ATTACKS)
        + " | fit s |",
        "|---|---|---|" + "---|---|" * len(ATTACKS) + "---|",
    ]
    for kind in RELEASES:
        runs = [r for r in record["runs"] if r["release"] == kind]
        if runs:
            lines.append(_row(kind, runs))
    lines += ["", "Releases: see the docstring of bench/audits.py attacks.", ""]
    return lines


def _row(kind: str, runs: list[dict]) -> str:
    cells = [kind, _eps(runs), str(len(runs))]
    for a in ATTACKS:
        aucs = [r["attacks"][a]["auc"] for r in runs]
        t = runs[0]["targets"]
        se = auc_standard_error(float(np.mean(aucs)), t["members"], t["non_members"])
        cells.append(f"{np.mean(aucs):.3f} ± {se:.3f} [{min(aucs):.2f}-{max(aucs):.2f}]")
        tprs = [r["attacks"][a]["tpr_at_1pct_fpr"] for r in runs]
        cells.append(f"{np.mean(tprs):.2f} [{min(tprs):.2f}-{max(tprs):.2f}]")
    cells.append(_fit_seconds(runs))
    return "| " + " | ".join(cells) + " |"


def _eps(runs: list[dict]) -> str:
    values = [r.get("epsilon_spent") for r in runs if "epsilon_spent" in r]
    if not values:
        return "n/a (not a model)"
    if any(isinstance(v, str) or not math.isfinite(v) for v in values):
        return "inf"  # read back from JSON, infinity is the string "inf"
    return f"{max(values):.2f}"


def _fit_seconds(runs: list[dict]) -> str:
    values = [r["fit_seconds"] for r in runs if "fit_seconds" in r]
    return f"{np.mean(values):.0f}" if values else "-"


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    torch.set_num_threads(1)
    train, _, schema = load_adult(harness.data_dir(args.data_dir))
    columns = args.columns.split(",")
    schema = subset_schema(schema, columns)
    pool = train[schema.names].reset_index(drop=True)
    record = {
        **harness.provenance(__file__, argv),
        "settings": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
        "runs": [],
    }
    for seed in harness.seeds(args):
        for kind in args.releases.split(","):
            run = one_run(kind, seed, args, pool, schema)
            record["runs"].append(run)
            print(json.dumps(run, default=str), flush=True)
            write(record, args.out)


def write(record: dict[str, Any], out: Path) -> None:
    """Both files, by the harness's writer (rewritten after every run)."""
    harness.write_results(out, record, TITLE, markdown(record))


if __name__ == "__main__":
    main()
