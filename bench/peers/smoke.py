"""Hand-run smoke test of the smartnoise bridge (not a pytest file: it needs the peers' venv).

    python bench/peers/smoke.py adult-mst       # MST eps 1 on 5,000 Adult rows, both samplers
    python bench/peers/smoke.py thyroid-mst     # MST eps 3.7 on Thyroid's training table
    python bench/peers/smoke.py adult-aim --cache-dir /work/peer-cache   # AIM eps 1, 30,162 rows

Each prints the fit and sample seconds, checks the synthetic cells lie in the domain, decodes
them back to a table with ``from_cells`` and prints the mean 1-way / 2-way marginal TVD against
the training cells (a sanity check, not a result).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: harness, peers.*

from dpforge.datasets.adult import load_adult  # noqa: E402
from dpforge.datasets.thyroid import load_thyroid  # noqa: E402
from dpforge.evaluation.fidelity import marginal_fidelity  # noqa: E402
from lib import harness  # noqa: E402
from peers.adapter import run_peer_samplers  # noqa: E402
from peers.cells import (  # noqa: E402
    ADULT_DECLARED_BOUNDS,
    cell_domain,
    declare_bounds,
    from_cells,
    to_cells,
)

N_BINS = 64
DELTA = 1e-5


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("case", choices=("adult-mst", "adult-aim", "thyroid-mst"))
    p.add_argument("--cache-dir", type=Path, default=None)
    harness.add_data_dir(p)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--log", type=Path, default=None, help="append the peer's progress here")
    args = p.parse_args(argv)

    data_dir = harness.data_dir(args.data_dir)
    if args.case.startswith("adult"):
        train, _, schema = load_adult(data_dir, balanced=False)
        schema = declare_bounds(schema, ADULT_DECLARED_BOUNDS)
        if args.case == "adult-mst":
            rng = np.random.default_rng(args.seed)
            keep = np.sort(rng.choice(len(train), 5000, replace=False))
            train = train.iloc[keep].reset_index(drop=True)
        method, epsilon = args.case.split("-")[1], 1.0
    else:
        train, _, schema = load_thyroid(data_dir)
        method, epsilon = "mst", 3.7

    cells, domain = to_cells(train, schema, N_BINS), cell_domain(schema, N_BINS)
    print(f"{args.case}: {len(cells)} rows, {len(domain)} columns, cells {list(domain.values())}")
    with harness.Timer() as wall:
        results = run_peer_samplers(
            cells, domain, method, epsilon, DELTA, args.seed, len(cells), cache_dir=args.cache_dir,
            log_path=args.log,
        )  # fmt: skip
    for sampler, (synth, info) in results.items():
        if list(synth.columns) != list(domain) or len(synth) != len(cells):
            raise RuntimeError(
                f"{sampler}: got columns {list(synth.columns)} and {len(synth)} rows, expected "
                f"{list(domain)} and {len(cells)}"
            )
        outside = [c for c, s in domain.items() if not synth[c].between(0, s - 1).all()]
        if outside:
            raise RuntimeError(f"{sampler}: codes outside the declared domain in {outside}")
        table = from_cells(synth, schema, N_BINS, np.random.default_rng(args.seed))
        # Integer columns: a few public cells hold no whole number (log-spaced cells below 1)
        # and decode moves their rows to a neighbouring cell; count how many rows move.
        moved = (to_cells(table, schema, N_BINS) != synth).mean()
        moved = {c: f"{m:.2%}" for c, m in moved.items() if m > 0}
        fid = marginal_fidelity(train, table, schema, N_BINS)
        print(
            f"  {sampler:7s} fit {info['fit_seconds']:8.1f} s"
            f"  sample {info['sample_seconds']:6.1f} s"
            f"  cached={info['cached']}  TVD 1-way {fid.mean_one_way:.3f}"
            f"  2-way {fid.mean_two_way:.3f}"
        )
        if moved:
            print(f"          rows whose cell moved in from_cells/to_cells: {moved}")
    print(f"  wall {wall.seconds:.1f} s (subprocess included); versions {info['versions']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
