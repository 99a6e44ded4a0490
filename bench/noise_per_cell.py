"""The noise of the default anchoring plan per measured cell (issue 22's gap paragraphs).

For each table and epsilon: fit with no generator training (steps 0) and read the plan: the
noise standard deviation of each cell count of round 1 (1-way and label x column marginals)
and of round 2 (the selected pairs), and the cells per column. The plan and the cells follow
from public inputs and the released N, so this is what the default fit measures. One JSON line
per (table, epsilon) on stdout::

    cd bench && python noise_per_cell.py wage,healthins,psid,fair,nmes,adult \
        > results/noise_per_cell.jsonl
"""

from __future__ import annotations

import json
import math
import sys
import warnings

import harness
from dpforge import Synthesizer
from dpforge.statistics.anchor import AnchorConfig
from tables_runs import load_dataset

NO_TRAINING = AnchorConfig(steps=0, scout_steps=0, batch_size=64)


def plan_noise(name: str, data, epsilon: float) -> dict:
    """The plan's noise per cell for one fit of ``data`` at ``epsilon`` (seed 0)."""
    synth = Synthesizer(data.schema, epsilon=epsilon, seed=0, progress=False, anchor=NO_TRAINING)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        synth.fit(data.train)
    plan = synth.anchor_plan_
    first = next(e.name for e in synth.ledger_.entries if "marginals (1-way" in e.name)
    marginals = int(first.split("anchor: ")[1].split()[0])
    return {
        "table": name,
        "epsilon": epsilon,
        "n_train": len(data.train),
        "marginals": marginals,
        "round1_cell_std": round(plan.round_one_noise * math.sqrt(marginals), 2),
        "pairs": plan.pairs,
        "pair_cell_std": round(plan.pair_noise * math.sqrt(max(plan.pairs, 1)), 2),
        "cells": {span.column: span.dim for span in synth.encoder_.spans},
    }


def main() -> None:
    for name in sys.argv[1].split(","):
        data = load_dataset(name, harness.data_dir(None))
        for epsilon in (1.0, 3.0):
            print(json.dumps(plan_noise(name, data, epsilon)), flush=True)


if __name__ == "__main__":
    main()
