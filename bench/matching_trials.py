"""Trial (issue 22): matched rows drawn with repeats (weights and resampling, the default)
against distinct rows (fitted inclusion probabilities), matching to the marginals without the
label only (``no-label``), the systematic draw over a random order of the pool
(``random-order``, the default before session 34), the pool sorted by its cells (``sorted``)
and the sorted draw balanced on every column and pair (``repeats``, the default), and the
unmatched draws, per fit (``--variants``).

One fit per (table, epsilon, seed) at the library's defaults; each variant samples as many
rows as the training split with the same seed and is scored as ``bench_tables.py`` scores.
One JSON line per variant in ``--out``.

    python bench/matching_trials.py wage,healthins,fair,nmes,psid,thyroid --epsilons 1,3 \
        --seeds 0, --out results/matching_trials.jsonl
"""

from __future__ import annotations

import argparse
import time
from contextlib import contextmanager

import torch

import harness
from dpforge.statistics.marginal_release import MarginalRelease
from dpforge.statistics.reweight import ReweightSettings
from tables_runs import SAMPLE_SEED, load_dataset, log_scored, score, timed_fit

VARIANTS = {
    "unmatched": False,
    "repeats": ReweightSettings(),  # the pool sorted by its cells (the default order)
    "random-order": ReweightSettings(order="random", balance=0),  # the draw before session 34
    "sorted": ReweightSettings(balance=0),  # sorted by the cells, not balanced after the draw
    "distinct": ReweightSettings(distinct=True),
    "no-label": ReweightSettings(),  # matched to the marginals without the label only
    # weights kept nearer equal (the KL term's weight), down to about equal weights (spread100:
    # the draw balanced to the generator's own pool)
    "spread0.03": ReweightSettings(spread=0.03),
    "spread0.1": ReweightSettings(spread=0.1),
    "spread0.3": ReweightSettings(spread=0.3),
    "spread100": ReweightSettings(spread=100.0),
    # about equal weights drawn at random: the generator's own rows through the pool's path
    "uniform-random": ReweightSettings(spread=100.0, order="random", balance=0),
}


@contextmanager
def release_for(synth, tag: str):
    """The model's stored release, or for ``no-label`` the release less every marginal that
    holds the label (a trial: the library always matches to all of them)."""
    release = synth.sample_release_
    if tag == "no-label":
        label = synth.schema_.label
        kept = tuple(m for m in release.marginals if label not in m.columns)
        synth.sample_release_ = MarginalRelease(kept)
    try:
        yield
    finally:
        synth.sample_release_ = release


def one_fit(name: str, data, epsilon: float, seed: int, out, variants) -> None:
    synth, wall, cpu = timed_fit(data, epsilon, seed)
    fit = {"fit_seconds": round(wall, 1), "fit_cpu_seconds": round(cpu, 1)}
    for tag, move in VARIANTS.items():
        if tag not in variants:
            continue
        cpu = time.process_time()
        with release_for(synth, tag):
            rows = synth.sample(len(data.train), seed=SAMPLE_SEED + seed, move=move)
        seconds = time.process_time() - cpu
        result = score(rows, data, seed, None)
        result.pop("classifier_info", None)
        record = {"table": name, "epsilon": epsilon, "seed": seed, "tag": tag,
                  "sample_cpu_seconds": round(seconds, 1), **fit, **result}  # fmt: skip
        log_scored(out, record, f"({seconds:.1f} s)")


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("tables", help="comma list of bench_tables.py's table names")
    p.add_argument("--epsilons", type=harness.floats, default=(1.0,))
    harness.add_seeds(p, "1")
    p.add_argument("--variants", default="unmatched,repeats,distinct", help=f"of {list(VARIANTS)}")
    harness.add_data_dir(p)
    harness.add_out(p, harness.RESULTS / "matching_trials.jsonl")
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    for name in args.tables.split(","):
        data = load_dataset(name, harness.data_dir(args.data_dir))
        for epsilon in args.epsilons:
            for seed in harness.seeds(args):
                one_fit(name, data, epsilon, seed, args.out, args.variants.split(","))


if __name__ == "__main__":
    main()
