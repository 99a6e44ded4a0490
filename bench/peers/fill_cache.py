"""Fill the peers' result cache: smartnoise MST/AIM on the benchmark tables, one fit at a time.

    nohup nice -n 10 python bench/peers/fill_cache.py --cache-dir /work/peer-cache \\
        >> /work/peer-cache/log.txt 2>&1 &
    python bench/peers/fill_cache.py --seeds 1 --only fair,wage --methods mst   # a subset

Runs (n_bins 64, delta 1e-5, rows = the training table's rows, both samplers from one fit; the
seeds of ``--seeds``, 0 1 2 by default; ``--only`` and ``--methods`` narrow them):

* Thyroid (ann-train, 3,772 rows, public schema): epsilon 3.7;
* the tables of ``public_tables.py`` (their public training split): epsilon 1 and 3; the
  holdout tables (``HOLDOUT_TABLES``) only when ``--only`` names them;
* Adult (unbalanced training table, 30,162 rows, schema with the declared bounds of
  ``cells.ADULT_DECLARED_BOUNDS``): epsilon 1 and 3.

MST before AIM, and every setting's first seed before further seeds (AIM on Adult takes 5 to
17 minutes a fit on 2 cores). Entries already in the cache are
skipped, so the script can be stopped and restarted; a failed fit is logged and the next one
runs. The machine has 2 shared cores: run one copy at a time (a lock file refuses a second).
"""

from __future__ import annotations

import argparse
import fcntl
import sys
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: harness, peers.*

from dpforge.datasets.adult import load_adult  # noqa: E402
from dpforge.datasets.thyroid import load_thyroid  # noqa: E402
from lib import harness  # noqa: E402
from lib.public_tables import HOLDOUT_TABLES, PUBLIC_TABLES, load_public_table  # noqa: E402
from peers.adapter import SAMPLERS, run_peer_samplers  # noqa: E402
from peers.cells import ADULT_DECLARED_BOUNDS, cell_domain, declare_bounds, to_cells  # noqa: E402

N_BINS = 64
DELTA = 1e-5


def jobs(seeds: list[int], methods: tuple[str, ...] = ("mst", "aim")):
    """(dataset, method, epsilon, seed): every setting's first seed before further seeds,
    cheapest first within each (AIM on Adult takes 5 to 17 minutes a fit on 2 cores); the
    tables of ``public_tables`` at epsilon 1 and 3."""
    settings = [(name, m, e) for m in methods for name, e in _settings()]
    return [(name, m, e, s) for s in seeds for name, m, e in settings]


def _settings() -> list[tuple[str, float]]:
    public = [(name, e) for name in PUBLIC_TABLES for e in (1.0, 3.0)]
    return [("thyroid", 3.7), *public, ("adult", 1.0), ("adult", 3.0)]


def tables(data_dir: Path, names):
    """The cells and domain of each named table (its training rows)."""
    out = {}
    for name in names:
        if name in PUBLIC_TABLES:
            table, _, schema = load_public_table(name)
        elif name == "adult":
            table, _, schema = load_adult(data_dir, balanced=False)
            schema = declare_bounds(schema, ADULT_DECLARED_BOUNDS)
        else:
            table, _, schema = load_thyroid(data_dir)
        out[name] = (to_cells(table, schema, N_BINS), cell_domain(schema, N_BINS))
    return out


def log(message: str) -> None:
    print(f"[{time.strftime('%Y-%m-%d %H:%M:%S')}] {message}", flush=True)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cache-dir", type=Path, default=Path("/work/peer-cache"))
    harness.add_data_dir(p)
    harness.add_seeds(p, "3")
    p.add_argument(
        "--only",
        default=None,
        help="comma list of datasets to run (default all but the holdout tables)",
    )
    p.add_argument("--methods", default="mst,aim", help="comma list of mst, aim (in order)")
    args = p.parse_args(argv)
    args.cache_dir.mkdir(parents=True, exist_ok=True)

    lock = open(args.cache_dir / ".fill.lock", "w")  # noqa: SIM115 (held for the whole run)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        log(f"another fill_cache.py holds {args.cache_dir / '.fill.lock'}; exiting")
        return 1

    only = None if args.only is None else args.only.split(",")
    methods = tuple(args.methods.split(","))
    todo = [
        j
        for j in jobs(harness.seeds(args), methods)
        if (j[0] not in HOLDOUT_TABLES if only is None else j[0] in only)
    ]
    data = tables(harness.data_dir(args.data_dir), sorted({j[0] for j in todo}))
    log(f"{len(todo)} fits to check; cache {args.cache_dir}")
    failures = 0
    for i, (name, method, epsilon, seed) in enumerate(todo, 1):
        cells, domain = data[name]
        what = f"[{i}/{len(todo)}] {name} {method} eps={epsilon:g} seed={seed} rows={len(cells)}"
        timer = harness.Timer()
        try:
            results = run_peer_samplers(
                cells, domain, method, epsilon, DELTA, seed, len(cells), SAMPLERS,
                cache_dir=args.cache_dir,
                log_path=args.cache_dir / f"peer-{name}-{method}-eps{epsilon:g}-seed{seed}.log",
            )  # fmt: skip
        except Exception:
            failures += 1
            log(f"{what}: FAILED after {timer.elapsed:.0f} s\n{traceback.format_exc()}")
            continue
        info = next(iter(results.values()))[1]
        if info["cached"]:
            log(f"{what}: cached (fit {info['fit_seconds']:.0f} s)")
        else:
            samples = ", ".join(f"{s} {r[1]['sample_seconds']:.1f} s" for s, r in results.items())
            log(f"{what}: fit {info['fit_seconds']:.0f} s, sample {samples}")
    log(f"done: {len(todo) - failures} of {len(todo)} fits in the cache, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
