"""The demo's utility over seeds (issue 22): `dpforge demo`'s table (455 breast-cancer records,
epsilon 3, delta 1e-5, the demo's metadata share), fitted per seed with the anchoring batch
that follows N (the default) and fixed at 1,024 (the default before session 34), each sampled
with the default matched and balanced draw; LR trained on the synthetic rows, AuROC on the 114
held-out records. One JSON line per fit in ``--out``.

    OMP_NUM_THREADS=1 python bench/tables.py demo --seeds 5
"""

from __future__ import annotations

import argparse
import warnings

import torch

from dpforge import Synthesizer
from dpforge.cli.demo import DEMO_METADATA_SHARE, _mean_features
from dpforge.datasets.breast_cancer import load_breast_cancer_demo
from dpforge.evaluation.utility import tstr_auroc
from dpforge.statistics.anchor import AnchorConfig
from lib import harness

BATCHES = {"batch-follows-n": None, "batch-1024": 1024}


def one_fit(train, test, schema, seed: int, batch: int | None) -> float:
    anchor = AnchorConfig(batch_size=batch)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="values outside the bounds")
        synth = Synthesizer(
            schema, epsilon=3.0, delta=1e-5, metadata_share=DEMO_METADATA_SHARE, seed=seed,
            progress=False, anchor=anchor,
        ).fit(train)  # fmt: skip
    rows = synth.sample(len(train), seed=seed)
    return float(tstr_auroc(rows, test, schema=synth.schema_, classifier="lr").value)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    harness.add_seeds(p, "5")
    harness.add_out(p, harness.results("tables", "demo_seeds.jsonl"))
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    train, test, schema = _mean_features(*load_breast_cancer_demo(seed=0))
    for seed in harness.seeds(args):
        for tag, batch in BATCHES.items():
            auroc = one_fit(train, test, schema, seed, batch)
            row = {"seed": seed, "tag": tag, "lr_auroc": round(auroc, 4)}
            harness.append_jsonl(args.out, row)
            print(row, flush=True)
