"""The merged cells of ``AnchorConfig(label_pairs=True)`` per table and epsilon (issue 22).

For each table and epsilon: a fit with no generator training (steps 0, seed 0) that records
the label x a x b marginals round 2 measures, as ``a x b: cells -> merged cells``, with the
public inputs of the merging rule (released N, classes, noise sd per cell, the cells a class's
table may have). The merging follows from public inputs only; which pairs are chosen follows
the noisy scores of seed 0. One JSON line per (table, epsilon) on stdout::

    cd bench && python label_pairs_cells.py nmes,wage,psid,healthins,fair \
        > results/label_pairs_cells.jsonl
"""

from __future__ import annotations

import json
import sys
import warnings

import dpforge.statistics.rounds as rounds
import harness
from dpforge import Synthesizer
from dpforge.statistics.anchor import AnchorConfig
from tables_runs import load_dataset

NO_TRAINING = AnchorConfig(steps=0, scout_steps=0, batch_size=64, label_pairs=True)


def merged_cells(name: str, data, epsilon: float) -> dict:
    """The merging of one fit of ``data`` at ``epsilon`` (seed 0), read where it is made."""
    seen: dict = {}
    rule = rounds.label_pair_marginals

    def spy(pairs, label, sizes, total, n_classes, std, snr):
        marginals, groups = rule(pairs, label, sizes, total, n_classes, std, snr)
        cells = [
            f"{a} x {b}: {sizes[a]} x {sizes[b]} -> "
            f"{max(ga) + 1 if ga else sizes[a]} x {max(gb) + 1 if gb else sizes[b]}"
            for (a, b), (_, ga, gb) in zip(pairs, groups, strict=True)
        ]
        budget = total / (n_classes * snr * std)
        seen.update(n_public=round(total), classes=n_classes, cell_std=round(std, 2),
                    cells_per_class=round(budget, 1), pairs=cells)  # fmt: skip
        return marginals, groups

    rounds.label_pair_marginals = spy
    try:
        synth = Synthesizer(
            data.schema, epsilon=epsilon, seed=0, progress=False, anchor=NO_TRAINING
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            synth.fit(data.train)
    finally:
        rounds.label_pair_marginals = rule
    return {"table": name, "epsilon": epsilon, **seen}


def main() -> None:
    for name in sys.argv[1].split(","):
        data = load_dataset(name, harness.data_dir(None))
        for epsilon in (1.0, 3.0):
            print(json.dumps(merged_cells(name, data, epsilon)), flush=True)


if __name__ == "__main__":
    main()
