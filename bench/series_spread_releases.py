"""The released range and class counts of ItalyPowerDemand's default fit at seeds 0-9 (anchor
steps 0: the release does not depend on the steps; the library's own seeding). Usage (from
bench/, ``OMP_NUM_THREADS=1 PYTHONPATH=../src``)::

    python series_spread_releases.py 3 > results/series_spread_releases.jsonl
"""

from __future__ import annotations

import json
import sys
import warnings
from dataclasses import replace

import numpy as np
import torch

from dpforge import Synthesizer
from dpforge.datasets.series import load_italy_power_demand
from dpforge.statistics.features import feature_anchor_defaults


def main() -> None:
    warnings.filterwarnings("ignore")
    torch.set_num_threads(1)
    train, _, schema = load_italy_power_demand(seed=0, test_size=0.3)
    epsilon = float(sys.argv[1])
    anchor = replace(feature_anchor_defaults("timeseries"), steps=0)
    for seed in range(10):
        synth = Synthesizer(schema, epsilon=epsilon, delta=1e-4, metadata_share=0.1, seed=seed,
                            progress=False, anchor=anchor)  # fmt: skip
        synth.fit(train)
        release = synth.sample_release_.embedding
        channel = synth.schema_.channels[0]
        row = {
            "epsilon": epsilon, "seed": seed, "range": [channel.lower, channel.upper],
            "counts": [round(c, 1) for c in release.noisy_counts.tolist()],
            "sum_norms": [round(float(np.linalg.norm(v)), 2) for v in release.noisy_sums],
        }  # fmt: skip
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
