"""Fit smartnoise-synth's MST or AIM on integer cells and sample synthetic cells (peers' venv).

Runs INSIDE the peers' virtual environment (bench/peers/setup.sh) and imports nothing from
dpforge: it reads and writes CSV/JSON only, so that smartnoise-synth's pins (opacus 0.14) never
meet dpforge's dependencies. bench/peers/adapter.py drives it.

    python smartnoise_run.py --train cells.csv --domain domain.json --method mst \\
        --epsilon 1 --delta 1e-5 --seed 0 --rows 30162 \\
        --sampler iid --out synth_iid.csv [--sampler default --out synth_default.csv] \\
        --timing timing.json

Input: ``cells.csv`` holds one integer cell code per column and row (columns discretised by
the caller); ``domain.json`` maps each column to its number of cells, in column order. The
domain is public and shared by every tool compared: each column is declared categorical with
the full set of codes 0..size-1 (a LabelTransformer fitted on those codes, never on the data),
so smartnoise's preprocessor infers nothing from the records and spends no budget
(``preprocessor_eps=0``; the run checks that its odometer stayed at 0).

Samplers, several from ONE fit (``--sampler``/``--out`` may be repeated, in pairs):

* ``default``: smartnoise's own ``sample``, i.e. Private-PGM's ``synthetic_data`` with its
  default ``method="round"`` (randomised rounding of the model's conditionals);
* ``iid``: the same code path with ``synthetic_data(method="sample")``, i.i.d. records from the
  fitted graphical model. smartnoise's MST/AIM keep the fitted ``mbi.MarkovRandomField`` as
  ``self.synthesizer`` and call ``self.synthesizer.synthetic_data(rows=n)`` in ``sample``; the
  model is a frozen dataclass, so for the duration of the call we swap ``self.synthesizer`` for
  a proxy whose ``synthetic_data`` passes ``method="sample"``. MST's domain decompression and
  AIM's column reordering and the inverse transform then run unchanged.

Seeding: ``--seed`` seeds numpy's global generator (``np.random.seed``) before the fit, which
drives MST's and AIM's exponential-mechanism selections, MST's decompression draws, and the
synthetic sampling (reseeded from the seed before each sampler, so the sampler order does not
matter). What CANNOT be seeded: the Gaussian noise of every measurement, which smartnoise draws
through OpenDP's ``make_gaussian`` from OpenDP's own secure (OS-entropy) generator. Two runs with
the same seed therefore differ; the seed only fixes the non-noise randomness.

Output: each ``--out`` CSV has the input's columns, integer codes; ``--timing`` JSON holds
``fit_seconds``, ``sample_seconds`` (per sampler), the library versions and the run's inputs.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.metadata as md
import json
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

METHODS = ("mst", "aim")
SAMPLERS = ("default", "iid")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--train", required=True, type=Path, help="CSV of integer cell codes")
    p.add_argument("--domain", required=True, type=Path, help="JSON: column -> number of cells")
    p.add_argument("--method", required=True, choices=METHODS)
    p.add_argument("--epsilon", required=True, type=float)
    p.add_argument("--delta", required=True, type=float)
    p.add_argument("--seed", required=True, type=int)
    p.add_argument("--rows", required=True, type=int, help="synthetic rows to generate")
    p.add_argument("--sampler", action="append", choices=SAMPLERS, required=True)
    p.add_argument("--out", action="append", type=Path, required=True)
    p.add_argument("--timing", required=True, type=Path)
    p.add_argument("--verbose", action="store_true", help="the synthesizer's progress lines")
    args = p.parse_args(argv)
    if len(args.sampler) != len(args.out) or len(set(args.sampler)) != len(args.sampler):
        p.error("give --sampler and --out in pairs, each sampler once")
    if args.rows < 1 or args.epsilon <= 0 or not 0 <= args.delta < 1:
        p.error("need rows >= 1, epsilon > 0 and 0 <= delta < 1")
    return args


def read_inputs(train: Path, domain_path: Path) -> tuple[pd.DataFrame, dict[str, int]]:
    domain = {str(k): int(v) for k, v in json.loads(domain_path.read_text()).items()}
    cells = pd.read_csv(train, dtype=np.int64)
    if list(cells.columns) != list(domain):
        raise SystemExit(
            f"columns of {train} {list(cells.columns)} differ from the domain {list(domain)}"
        )
    for name, size in domain.items():
        col = cells[name].to_numpy()
        if size < 1 or col.min() < 0 or col.max() >= size:
            raise SystemExit(f"column '{name}' holds codes outside 0..{size - 1}")
    return cells, domain


def public_transformer(domain: dict[str, int]):
    """One categorical transformer per column, fitted on the codes 0..size-1 (public)."""
    from snsynth.transform.label import LabelTransformer
    from snsynth.transform.table import TableTransformer

    columns = []
    for size in domain.values():
        t = LabelTransformer(nullable=False)
        t.fit(list(range(size)))  # sorted ints: code i <-> label i
        columns.append(t)
    table = TableTransformer(columns)
    if not table.fit_complete or table.needs_epsilon:
        raise RuntimeError(
            "smartnoise's transformer wants to fit on the data or spend budget; the domain must "
            "be declared in full (every column's codes 0..size-1)"
        )
    if table.cardinality != list(domain.values()):
        raise RuntimeError(
            f"smartnoise's transformer has cardinalities {table.cardinality}, not the declared "
            f"domain {list(domain.values())}"
        )
    return table


class _IIDProxy:
    """Stands in for the fitted mbi model during ``sample``: i.i.d. ``synthetic_data``."""

    def __init__(self, model):
        self.model = model

    def synthetic_data(self, rows=None, method="round"):
        return self.model.synthetic_data(rows=rows, method="sample")


def sample(synth, rows: int, sampler: str) -> pd.DataFrame:
    if sampler == "default":
        return synth.sample(rows)
    model = synth.synthesizer
    synth.synthesizer = _IIDProxy(model)
    try:
        return synth.sample(rows)
    finally:
        synth.synthesizer = model


def versions() -> dict[str, str]:
    out = {}
    for name in ("smartnoise-synth", "smartnoise-sql", "mbi", "opendp", "opacus", "torch", "jax"):
        with contextlib.suppress(md.PackageNotFoundError):
            out[name] = md.version(name)
    out["numpy"], out["pandas"] = np.__version__, pd.__version__
    out["python"] = sys.version.split()[0]
    return out


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    started = time.perf_counter()
    cells, domain = read_inputs(args.train, args.domain)

    if args.method == "mst":
        from snsynth.mst import MSTSynthesizer as cls
    else:
        from snsynth.aim import AIMSynthesizer as cls
    synth = cls(epsilon=float(args.epsilon), delta=float(args.delta), verbose=args.verbose)
    transformer = public_transformer(domain)
    import_seconds = time.perf_counter() - started

    np.random.seed(args.seed)
    t0, cpu0 = time.perf_counter(), time.process_time()
    synth.fit(cells, transformer=transformer, preprocessor_eps=0.0)
    fit_seconds = time.perf_counter() - t0
    fit_cpu_seconds = time.process_time() - cpu0  # every thread of the fit: the machine is shared
    spent_eps, _ = transformer.odometer.spent
    if spent_eps != 0.0 or synth.epsilon != float(args.epsilon):
        raise SystemExit(f"smartnoise's preprocessor spent epsilon {spent_eps}; expected none")
    print(f"{args.method} fit: {fit_seconds:.1f} s", flush=True)

    sample_seconds = {}
    for i, (sampler, out) in enumerate(zip(args.sampler, args.out, strict=True)):
        np.random.seed([args.seed, 1 + SAMPLERS.index(sampler)])  # independent of the order
        t0 = time.perf_counter()
        synthetic = sample(synth, args.rows, sampler)
        sample_seconds[sampler] = time.perf_counter() - t0
        synthetic = pd.DataFrame(synthetic, columns=list(domain)).astype(np.int64)
        if len(synthetic) != args.rows:
            raise SystemExit(f"{sampler}: got {len(synthetic)} rows, asked for {args.rows}")
        out.parent.mkdir(parents=True, exist_ok=True)
        synthetic.to_csv(out, index=False)
        print(f"{sampler} sample ({i + 1}/{len(args.out)}): {sample_seconds[sampler]:.1f} s")

    timing = {
        "method": args.method,
        "epsilon": args.epsilon,
        "delta": args.delta,
        "seed": args.seed,
        "rows": args.rows,
        "train_rows": len(cells),
        "columns": len(domain),
        "fit_seconds": fit_seconds,
        "fit_cpu_seconds": fit_cpu_seconds,
        "sample_seconds": sample_seconds,
        "import_seconds": import_seconds,
        "total_seconds": time.perf_counter() - started,
        "unseeded": "measurement noise (OpenDP's secure generator)",
        "versions": versions(),
    }
    args.timing.parent.mkdir(parents=True, exist_ok=True)
    args.timing.write_text(json.dumps(timing, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
