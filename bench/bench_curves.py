"""Privacy–utility curves on Adult (issue 12): one method at several ε, utility and attacks.

The same method and settings (dpforge's default table synthesizer, marginal anchoring, unless
``--method`` names a GAN, then ``anchor=None``) are fitted on ``--train-rows`` rows of the
balanced Adult training file (drawn with the seed) at every ε of ``--epsilons`` (``inf``: the
non-private baseline of the same code path), delta 1e-5. Each model is evaluated with
``dpforge.evaluation.curves.privacy_utility_curve`` against ``--test-rows`` rows of the Adult
TEST file (utility: logistic regression and random forest trained on synthetic and on real
rows, scored on those test rows; fidelity: TVD to the training rows; attacks: members are the
training rows, non-members and the attacker's reference come from the test rows).
Single-threaded. Results: ``bench/results/curves.json``, ``curves.md`` (with the command) and
``curves.png``, rewritten after every point::

    OMP_NUM_THREADS=1 python bench/bench_curves.py
"""

from __future__ import annotations

import argparse
import base64
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import torch

import harness
from dpforge import Synthesizer
from dpforge.datasets.adult import load_adult
from dpforge.evaluation.curves import plot_curve, privacy_utility_curve
from dpforge.methods import METHODS

TITLE = "Privacy–utility curve on Adult (issue 12)"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--train-rows", type=int, default=3000)
    p.add_argument("--test-rows", type=int, default=2000)
    p.add_argument("--epsilons", default="0.3,1,3,10,inf")
    p.add_argument("--method", default="default", choices=["default", *sorted(METHODS)])
    p.add_argument("--epochs", type=float, default=None, help="GAN methods: epochs at every ε")
    p.add_argument("--seed", type=int, default=0)
    harness.add_data_dir(p)
    harness.add_out(p, harness.RESULTS / "curves.json")
    return p.parse_args(argv)


def fitter(args, schema, train):
    """``fit(epsilon)``: the same method and settings at every ε."""

    def fit(epsilon: float):
        if args.method == "default":
            synth = Synthesizer(schema, epsilon=epsilon, delta=1e-5, seed=args.seed, progress=False)
        else:
            synth = Synthesizer(
                schema, method=args.method, epsilon=epsilon, delta=1e-5, anchor=None,
                epochs=args.epochs, seed=args.seed, progress=False,
            )  # fmt: skip
        return synth.fit(train)

    return fit


def markdown(record: dict[str, Any]) -> list[str]:
    """The Markdown body under the harness header: one row per ε, then the plot."""
    record = harness.jsonable(record)  # infinite epsilons as "inf"
    lines = [
        f"Method: {record['settings']['method']}; {record['settings']['train_rows']} training "
        f"rows, {record['settings']['test_rows']} test rows; seed {record['settings']['seed']}. "
        "AuROC: mean of logistic regression and random forest (macro, real test rows).",
        "",
        "| ε | ε spent | AuROC syn | AuROC real | TVD 1-way | TVD 2-way | attack AUC dcr / "
        "domias / classifier | fit s |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for p in record["points"]:
        attacks = " / ".join(f"{v:.3f}" for v in (p["attack_auc"] or {}).values())
        spent = p["epsilon_spent"]
        lines.append(
            f"| {p['epsilon']} | {spent if isinstance(spent, str) else f'{spent:.3f}'} | "
            f"{p['auroc_macro']:.3f} | {p['auroc_macro_real']:.3f} | {p['tvd_one_way']:.3f} | "
            f"{p['tvd_two_way']:.3f} | {attacks} | {p['fit_seconds']:.0f} |"
        )
    lines += ["", "![curves](curves.png)", ""]
    return lines


def write(record: dict[str, Any], points: list[dict[str, Any]], out: Path) -> None:
    """JSON and Markdown by the harness's writer, and the plot next to them."""
    harness.write_results(out, record, TITLE, markdown(record))
    uri = plot_curve(points, title=f"Adult, {record['settings']['method']}")
    png = out.with_suffix(".png")
    tmp = png.with_name(png.name + ".tmp")
    tmp.write_bytes(base64.b64decode(uri.split(",", 1)[1]))
    tmp.replace(png)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    torch.set_num_threads(1)
    full_train, full_test, schema = load_adult(harness.data_dir(args.data_dir))
    rng = np.random.default_rng(args.seed)
    train = full_train.iloc[rng.choice(len(full_train), args.train_rows, replace=False)]
    test = full_test.iloc[rng.choice(len(full_test), args.test_rows, replace=False)]
    train, test = train.reset_index(drop=True), test.reset_index(drop=True)
    record = {
        **harness.provenance(__file__, argv),
        "settings": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
        "points": [],
    }
    epsilons = [math.inf if e.strip() == "inf" else float(e) for e in args.epsilons.split(",")]

    def keep(point: dict[str, Any]) -> None:
        record["points"].append(point)
        print(json.dumps(point, default=str), flush=True)
        write(record, record["points"], args.out)

    privacy_utility_curve(
        fitter(args, schema, train), epsilons, train, test, seed=args.seed, on_point=keep
    )


if __name__ == "__main__":
    main()
