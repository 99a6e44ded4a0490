"""One anchored fit on Adult or Thyroid with chosen settings: the trials that set the defaults.

The defaults of :class:`dpforge.statistics.anchor.AnchorConfig` (64 cells, 1,000 Adam steps
per round at learning rate 1e-2 decaying to 0, one selected pair per column, DP-placed cells)
were chosen with this script on the two public benchmark tables, never on a user's data; the
results are in ``bench/results/anchor_defaults.md``. Prints 1-way and 2-way TVD against the
training rows, random-forest AUC (Adult) or macro AuROC of MLP and RF (Thyroid) on the real
test rows, the fit time and the ledger.

    python bench/anchor_trials.py adult --epsilon 1
    python bench/anchor_trials.py adult --epsilon inf --pairs 91   # non-private, every pair
    python bench/anchor_trials.py thyroid --epsilon 3.7 --n-bins 16
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import dpforge.statistics.rounds as rounds
import harness
from dpforge import Synthesizer
from dpforge.datasets.adult import load_adult
from dpforge.datasets.thyroid import load_thyroid
from dpforge.evaluation.fidelity import marginal_fidelity
from dpforge.evaluation.utility import tstr_auroc
from dpforge.statistics.anchor import AnchorConfig
from peers.cells import ADULT_DECLARED_BOUNDS, declare_bounds


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("dataset", choices=("adult", "thyroid"))
    p.add_argument("--epsilon", type=float, default=1.0, help="inf: the non-private baseline")
    p.add_argument("--seed", type=int, default=0)
    harness.add_data_dir(p)
    p.add_argument("--steps", type=int, default=AnchorConfig.steps)
    p.add_argument("--lr", type=float, default=AnchorConfig.lr)
    p.add_argument("--batch-size", type=int, default=AnchorConfig.batch_size)
    p.add_argument("--loss", default=AnchorConfig.loss, choices=("l1", "chi2"))
    p.add_argument("--implied-weight", type=float, default=AnchorConfig.implied_weight)
    p.add_argument("--n-bins", type=int, default=AnchorConfig.n_bins)
    p.add_argument("--no-select", action="store_true", help="round 1 only")
    p.add_argument("--pairs", type=int, default=None, help="pairs in round 2 (default: rule)")
    p.add_argument("--hidden", default="128", help="generator hidden widths, e.g. 256,256")
    return p.parse_args(argv)


def load(name: str, data_dir: Path):
    if name == "adult":
        train, test, schema = load_adult(data_dir, balanced=False)
        return train, test, declare_bounds(schema, ADULT_DECLARED_BOUNDS)
    return load_thyroid(data_dir)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if args.pairs is not None:
        rounds.pairs_to_measure = lambda candidates, columns: min(candidates, args.pairs)
    train, test, schema = load(args.dataset, harness.data_dir(args.data_dir))
    anchor = AnchorConfig(
        steps=args.steps,
        lr=args.lr,
        n_bins=args.n_bins,
        select_pairs=not args.no_select,
        batch_size=args.batch_size,
        implied_weight=args.implied_weight,
        loss=args.loss,
    )
    from dpforge.methods.dpcgan import DPCGANConfig

    options = DPCGANConfig(generator_hidden=harness.widths(args.hidden))
    with harness.Timer() as fit:
        synth = Synthesizer(
            schema, epsilon=args.epsilon, seed=args.seed, progress=False, anchor=anchor,
            method_options=options,
        ).fit(train)  # fmt: skip
    rows = synth.sample(len(train), seed=args.seed + 1)
    fidelity = marginal_fidelity(train, rows, schema)
    scores = {c: tstr_auroc(rows, test, schema, classifier=c).value for c in ("rf", "mlp", "lr")}
    eps = synth.privacy_spent().epsilon
    print(
        f"{args.dataset} eps={args.epsilon:g} seed={args.seed}: fit {fit.seconds:.0f} s, "
        f"spent {'inf' if math.isinf(eps) else f'{eps:.3f}'}, 1-way TVD "
        f"{fidelity.mean_one_way:.4f}, 2-way TVD {fidelity.mean_two_way:.4f}, AuROC "
        + ", ".join(f"{k} {v:.3f}" for k, v in scores.items())
    )
    worst = sorted(fidelity.two_way.items(), key=lambda kv: -kv[1])[:8]
    print("  worst pairs: " + ", ".join(f"{k} {v:.3f}" for k, v in worst))
    for entry in synth.ledger_.entries:
        print(f"  ledger: {entry.name}: {entry.event}")


if __name__ == "__main__":
    main()
