"""Where a holdout table's TVD comes from: per column 1-way TVD (and the worst 2-way pairs) of our
default and of each peer sampler, one seed (report only; nothing is tuned on these tables).

Our default is fitted and sampled as ``bench_tables.py`` does (same seeds); the peers' rows come
from the peer cache that ``bench_tables.py`` filled (no new peer fit). One JSON line per
(table, epsilon, method, sampler) on stdout::

    cd bench && python holdout_columns.py creditcard --epsilons 1,3 --seed 0 \\
        >> results/tables_holdout_columns.jsonl
"""

from __future__ import annotations

import argparse
import json
import warnings

import numpy as np

import harness
from bench_tables import DEFAULT_PEER_CACHE
from dpforge import Synthesizer
from dpforge.evaluation.fidelity import marginal_fidelity
from peers.adapter import run_peer_samplers
from peers.cells import cell_domain, from_cells, to_cells
from tables_runs import PEER_BINS, PEERS, SAMPLE_SEED, SAMPLERS, load_dataset

DELTA = 1e-5  # as bench_tables.py (--delta)


def columns_line(table: str, epsilon: float, method: str, sampler, data, synthetic) -> dict:
    """Per column 1-way TVD and the five worst 2-way marginals of ``synthetic``."""
    fid = marginal_fidelity(data.train, synthetic, data.schema)
    worst = sorted(fid.two_way.items(), key=lambda kv: -kv[1])[:5]
    return {
        "table": table,
        "epsilon": epsilon,
        "method": method,
        "sampler": sampler,
        "tvd_1way": round(fid.mean_one_way, 4),
        "one_way": {k: round(v, 3) for k, v in fid.one_way.items()},
        "worst_two_way": {k: round(v, 3) for k, v in worst},
    }


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("tables", help="comma list of tables")
    p.add_argument("--epsilons", type=harness.floats, default=[1.0, 3.0])
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    seed = args.seed
    for table in args.tables.split(","):
        data = load_dataset(table, harness.data_dir(None))
        cells, domain = (
            to_cells(data.train, data.schema, PEER_BINS),
            cell_domain(data.schema, PEER_BINS),
        )
        for epsilon in args.epsilons:
            synth = Synthesizer(
                data.schema, epsilon=epsilon, delta=DELTA, seed=seed, progress=False
            )
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                synth.fit(data.train)
            rows = synth.sample(len(data.train), seed=SAMPLE_SEED + seed)
            print(json.dumps(columns_line(table, epsilon, "dpforge", None, data, rows)), flush=True)
            for method in PEERS:
                results = run_peer_samplers(
                    cells, domain, method, epsilon, DELTA, seed, len(data.train), SAMPLERS,
                    cache_dir=DEFAULT_PEER_CACHE, cache_only=True,
                )  # fmt: skip
                for sampler, (synth_cells, _) in results.items():
                    rows = from_cells(
                        synth_cells, data.schema, PEER_BINS, np.random.default_rng(seed)
                    )
                    line = columns_line(table, epsilon, method, sampler, data, rows)
                    print(json.dumps(line), flush=True)


if __name__ == "__main__":
    main()
