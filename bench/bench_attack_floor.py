"""The membership attacks' floor when members and non-members come from two different files.

The full report takes members from ``--real-train`` and non-members (and the attacker's reference)
from ``--real-test``. If the two files differ in distribution, the attacks can separate them
without any leakage. This benchmark measures that floor for Thyroid (ann-train vs ann-test) with
REAL rows as the "release", so no model is involved:

1. members: a random half A of ann-train; non-members and reference: ann-test (as in the report);
   release: the other half B of ann-train (real rows that are not members);
2. the same with members and non-members both drawn from ann-test (one file), release B.

An AUC above 0.5 in (1) and not in (2) is the difference between the files, not membership.
Usage (seconds)::

    OMP_NUM_THREADS=1 python bench/bench_attack_floor.py
"""

from __future__ import annotations

import argparse

import numpy as np

import harness
from dpforge.datasets.thyroid import load_thyroid
from dpforge.evaluation.attacks import membership_attacks, table_matrix
from dpforge.evaluation.inputs import typed_table


def attack(schema, members, held_out, release, seed: int) -> dict[str, tuple[float, float]]:
    roles = ((members, "train"), (held_out, "held out"), (release, "release"))
    matrices = [table_matrix(typed_table(t, schema, r), schema) for t, r in roles]
    result = membership_attacks(*matrices, seed=seed)
    return {
        k: (round(v["auc"], 3), round(v["tpr_at_1pct_fpr"], 3))
        for k, v in result["attacks"].items()
    }


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seed", type=int, default=0, help="the halves' split and the attacks' seed")
    harness.add_data_dir(p)
    args = p.parse_args(argv)
    seed = args.seed
    train, test, schema = load_thyroid(harness.data_dir(args.data_dir))
    rng = np.random.default_rng(seed)
    order, half = rng.permutation(len(train)), len(train) // 2
    a, b = train.iloc[order[:half]], train.iloc[order[half:]]
    print("(1) members ann-train A, non-members ann-test, release ann-train B (AUC, TPR@1%):")
    print("   ", attack(schema, a, test, b, seed))
    t_order, t_half = rng.permutation(len(test)), len(test) // 2
    one, other = test.iloc[t_order[:t_half]], test.iloc[t_order[t_half:]]
    print("(2) members and non-members both from ann-test, release ann-train B:")
    print("   ", attack(schema, one, other, b, seed))


if __name__ == "__main__":
    main()
