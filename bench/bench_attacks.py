"""Attack sanity in numbers (issue 12): the membership attacks see overfitting, and DP hides it.

On a small subset of Adult (``--train-rows`` rows, 200 by default, drawn with the seed from the
balanced training file) the same code path is fitted four ways, and the three attacks of
``dpforge.evaluation.attacks`` are run against each release:

* ``copy``: the training rows themselves released as "synthetic" (what a generator that
  memorised everything would give: the attacks' ceiling);
* ``overfit``: the non-private baseline of ``--method`` (DP-WGAN by default; epsilon = inf:
  sigma = 0, C = inf, no anchoring), generator and critic two hidden layers of ``--hidden``
  units, trained for many epochs (``--overfit-epochs``) so that it overfits 200 rows;
* ``dp``: the same configuration at a small epsilon (``--epsilon``, delta 1e-5),
  same number of epochs (sigma calibrated by the accountant);
* ``default``: dpforge's default table synthesizer (marginal anchoring) at the same epsilon;
* ``holdout``: other real rows, never trained on, released as "synthetic" (the attacks'
  floor: AUC near 0.5 whatever the attack).

Members: the training rows. Non-members and the attacker's reference rows: held-out rows of the
Adult TEST file (``--held-out-rows``, never used in training). Every release has
``--synthetic-rows`` rows. Each model is fitted once per seed; the attack's split of targets
uses the same seed. Single-threaded. Results: ``bench/results/attacks.json`` and ``.md`` (with
the command), rewritten after every run::

    OMP_NUM_THREADS=1 python bench/bench_attacks.py
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import shlex
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

from bench_common import machine  # noqa: E402 (bench/ is on sys.path when run)
from dpforge import Synthesizer
from dpforge.datasets.adult import load_adult
from dpforge.evaluation.attacks import ATTACKS, membership_attacks, table_matrix
from dpforge.evaluation.inputs import typed_table
from dpforge.methods import METHODS
from dpforge.schema.table import Schema

RELEASES = ("copy", "overfit", "dp", "default", "holdout")
RESULTS = Path(__file__).resolve().parent / "results"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--train-rows", type=int, default=200)
    p.add_argument("--held-out-rows", type=int, default=2000)
    p.add_argument("--synthetic-rows", type=int, default=2000)
    p.add_argument("--overfit-epochs", type=float, default=1500.0)
    p.add_argument("--epsilon", type=float, default=1.0)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--method", default="dpwgan", choices=sorted(METHODS))
    p.add_argument("--hidden", type=int, default=256, help="width of both hidden layers, G and D")
    p.add_argument("--seeds", default="0,1")
    p.add_argument("--releases", default=",".join(RELEASES))
    p.add_argument("--out", type=Path, default=RESULTS / "attacks.json")
    return p.parse_args(argv)


def complete_schema(schema: Schema, rows: pd.DataFrame) -> Schema:
    """Bounds for the columns Adult leaves to DP (fnlwgt, capital-loss): the held-out rows' range
    widened by 10 %, used only to encode records for the attacks of releases that are not
    models (copy, holdout); a fitted model's own completed schema is used for it."""
    columns = []
    for column in schema.columns:
        if column.is_numeric and not column.is_complete:
            low, high = float(rows[column.name].min()), float(rows[column.name].max())
            pad = 0.1 * (high - low)
            column = type(column)(column.name, column.type, lower=low - pad, upper=high + pad)
        columns.append(column)
    return Schema(tuple(columns), label=schema.label, label_prior=schema.label_prior)


def fit_release(kind: str, args, train, seed: int, schema: Schema) -> tuple[Any, dict]:
    """The fitted model of ``kind`` (or None) and what to record about it."""
    wide = (args.hidden, args.hidden)
    config = METHODS[args.method][1](
        batch_size=args.batch_size, generator_hidden=wide, discriminator_hidden=wide
    )
    if kind == "overfit":
        synth = Synthesizer(
            schema, method=args.method, epsilon=math.inf, method_options=config,
            epochs=args.overfit_epochs, anchor=None, seed=seed, progress=False,
        )  # fmt: skip
    elif kind == "dp":
        synth = Synthesizer(
            schema, method=args.method, epsilon=args.epsilon, delta=1e-5, method_options=config,
            epochs=args.overfit_epochs, anchor=None, seed=seed, progress=False,
        )  # fmt: skip
    elif kind == "default":
        synth = Synthesizer(schema, epsilon=args.epsilon, delta=1e-5, seed=seed, progress=False)
    else:
        return None, {}
    started = time.perf_counter()
    synth.fit(train)
    info = {
        "fit_seconds": round(time.perf_counter() - started, 1),
        "epsilon_spent": synth.privacy_spent().epsilon,
        "steps": synth.plan_.steps,
        "noise_multiplier": synth.plan_.noise_multiplier,
    }
    return synth, info


def release_rows(kind: str, synth, args, train, spare, seed: int) -> pd.DataFrame:
    if kind == "copy":
        return train
    if kind == "holdout":
        return spare.iloc[: args.synthetic_rows]
    return synth.sample(args.synthetic_rows, seed=seed)


def one_run(kind: str, seed: int, args, data) -> dict[str, Any]:
    full_train, full_test, schema = data
    rng = np.random.default_rng(seed)
    train = full_train.iloc[rng.choice(len(full_train), args.train_rows, replace=False)]
    train = train.reset_index(drop=True)
    order = rng.permutation(len(full_test))
    held = full_test.iloc[order[: args.held_out_rows]].reset_index(drop=True)
    spare = full_test.iloc[order[args.held_out_rows :]].reset_index(drop=True)
    synth, info = fit_release(kind, args, train, seed, schema)
    encode_schema = synth.schema_ if synth is not None else complete_schema(schema, held)
    released = release_rows(kind, synth, args, train, spare, seed)
    matrices = [
        table_matrix(typed_table(t, encode_schema, role), encode_schema)
        for t, role in ((train, "train"), (held, "held out"), (released, "release"))
    ]
    started = time.perf_counter()
    result = membership_attacks(*matrices, seed=seed)
    attacks = {
        name: {k: a[k] for k in ("auc", "tpr_at_1pct_fpr")} for name, a in result["attacks"].items()
    }
    return {
        "release": kind,
        "seed": seed,
        **info,
        "attack_seconds": round(time.perf_counter() - started, 1),
        "targets": result["targets"],
        "synthetic_rows": len(released),
        "attacks": attacks,
    }


def markdown(record: dict[str, Any]) -> str:
    lines = [
        "# Membership attacks: overfitted vs DP (issue 12)",
        "",
        f"Command: `{record['command']}`  ",
        f"Date: {record['date']}; machine: {record['machine']['processor']}, "
        f"{record['machine']['cpu_count']} cores, torch threads "
        f"{record['machine']['torch_threads']}.",
        "",
        f"Adult, {record['settings']['train_rows']} training rows (members), non-members and "
        f"reference from {record['settings']['held_out_rows']} held-out rows of the test file; "
        f"{record['settings']['synthetic_rows']} released rows. AUC 0.5 = guessing; "
        "TPR@1%FPR: share of members found at 1 % false positives. Mean over seeds "
        "(min-max in brackets).",
        "",
        "| release | eps spent | "
        + " | ".join(f"{a} AUC | {a} TPR@1%" for a in ATTACKS)
        + " | fit s |",
        "|---|---|" + "---|---|" * len(ATTACKS) + "---|",
    ]
    for kind in RELEASES:
        runs = [r for r in record["runs"] if r["release"] == kind]
        if not runs:
            continue
        cells = [kind, _eps(runs)]
        for a in ATTACKS:
            for key in ("auc", "tpr_at_1pct_fpr"):
                values = [r["attacks"][a][key] for r in runs]
                cells.append(f"{np.mean(values):.3f} [{min(values):.2f}-{max(values):.2f}]")
        cells.append(_fit_seconds(runs))
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "Releases: see the docstring of bench/bench_attacks.py.", ""]
    return "\n".join(lines)


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
    train, test, schema = load_adult()
    record = {
        "command": "OMP_NUM_THREADS=1 python bench/bench_attacks.py "
        + shlex.join(sys.argv[1:] if argv is None else argv),
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "machine": machine(),
        "settings": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
        "runs": [],
    }
    for seed in (int(s) for s in args.seeds.split(",")):
        for kind in args.releases.split(","):
            run = one_run(kind, seed, args, (train, test, schema))
            record["runs"].append(run)
            print(json.dumps(run), flush=True)
            write(record, args.out)


def write(record: dict[str, Any], out: Path) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    safe = json.loads(json.dumps(record, default=str).replace("Infinity", '"inf"'))
    tmp = out.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(safe, indent=2) + "\n")
    tmp.replace(out)
    md = out.with_suffix(".md")
    md.with_suffix(".md.tmp").write_text(markdown(record))
    md.with_suffix(".md.tmp").replace(md)


if __name__ == "__main__":
    main()
