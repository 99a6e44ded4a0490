"""Trial (issue 22): matched rows drawn with repeats (weights and resampling, the default)
against distinct rows (fitted inclusion probabilities), and the unmatched draws, per fit.

One fit per (table, epsilon, seed) at the library's defaults; each variant samples as many
rows as the training split with the same seed and is scored as ``bench_tables.py`` scores.
One JSON line per variant in ``--out``.

    python bench/matching_trials.py wage,healthins,fair,nmes,psid,thyroid --epsilons 1,3 \
        --seeds 0, --out results/matching_trials.jsonl
"""

from __future__ import annotations

import argparse
import time
import warnings

import torch

import harness
from dpforge import Synthesizer
from dpforge.statistics.reweight import ReweightSettings
from tables_runs import SAMPLE_SEED, load_dataset, log_scored, score

VARIANTS = {
    "unmatched": False,
    "repeats": ReweightSettings(),
    "distinct": ReweightSettings(distinct=True),
}


def one_fit(name: str, data, epsilon: float, seed: int, out) -> None:
    synth = Synthesizer(data.schema, epsilon=epsilon, seed=seed, progress=False)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="values outside the bounds")
        synth.fit(data.train)
    for tag, move in VARIANTS.items():
        cpu = time.process_time()
        rows = synth.sample(len(data.train), seed=SAMPLE_SEED + seed, move=move)
        seconds = time.process_time() - cpu
        result = score(rows, data, seed, None)
        result.pop("classifier_info", None)
        record = {"table": name, "epsilon": epsilon, "seed": seed, "tag": tag,
                  "sample_cpu_seconds": round(seconds, 1), **result}  # fmt: skip
        log_scored(out, record, f"({seconds:.1f} s)")


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("tables", help="comma list of bench_tables.py's table names")
    p.add_argument("--epsilons", type=harness.floats, default=(1.0,))
    harness.add_seeds(p, "1")
    harness.add_data_dir(p)
    harness.add_out(p, harness.RESULTS / "matching_trials.jsonl")
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    for name in args.tables.split(","):
        data = load_dataset(name, harness.data_dir(args.data_dir))
        for epsilon in args.epsilons:
            for seed in harness.seeds(args):
                one_fit(name, data, epsilon, seed, args.out)


if __name__ == "__main__":
    main()
