"""Fit CPU seconds of a small table's default fit, side by side with MST and AIM on one host
(issue 22, speed; bench/results/tables_speed/).

The machine is shared, and CPU time per unit of work moves with its load, so arms run at
different times are hard to compare. Here every arm runs in the same process, one right after
the other for each (table, epsilon, seed), after a warm-up fit that pays the one-time imports
(at an epsilon the run does not measure: see ``warm_epsilon``).
The one arm by default is ``AnchorConfig()`` ("default"). One JSON line per (table, epsilon,
seed) goes to ``--out``; the README's figure (bench/results/tables_speed/fit_cpu_peers.jsonl)::

    cd bench && OMP_NUM_THREADS=1 python tables_speed.py fair,wage,hmda,creditcard \
        --epsilons 1,3 --seeds 0, --peers mst,aim --out results/tables_speed/fit_cpu_peers.jsonl

``--arm NAME:key=value,key=value`` (repeated) replaces the arm by named AnchorConfig settings
(``NAME:`` alone is the default), e.g. the generator widths of results/tables_speed/fit_speed.md::

    python tables_speed.py nmes --seeds 0, --arm default: --arm h128:generator_hidden=128,128

``--peers mst,aim`` also fits smartnoise-synth's MST and AIM (their own venv, ``peers/``), never
from the cache, on the public cells of ``tables.py`` right after the arms of each (table,
epsilon, seed), and records their fit CPU seconds (the peers' process, every thread) beside
ours: the issue's speed goal as a comparison on one host in one run.
"""

from __future__ import annotations

import argparse
from dataclasses import fields, replace

import torch

from dpforge.statistics.anchor import AnchorConfig
from lib import harness
from lib.tables_runs import PEER_BINS, load_dataset, timed_fit
from peers.adapter import run_peer_samplers
from peers.cells import cell_domain, to_cells

ARMS = {"default": AnchorConfig()}


def anchor_config(settings: list[str]) -> AnchorConfig:
    """AnchorConfig() with the ``key=value`` settings (an unknown key exits naming it)."""
    types = {f.name: str(f.type) for f in fields(AnchorConfig)}
    changes = {}
    for item in settings:
        key, _, text = item.partition("=")
        if key not in types:
            raise SystemExit(
                f"--arm {item}: AnchorConfig has no field {key!r}; valid: {sorted(types)}"
            )
        changes[key] = _value(types[key], text)
    return replace(AnchorConfig(), **changes)


def _value(field_type: str, text: str) -> object:
    """``text`` as the field's value: true/false, an int tuple, an int, a float or the text."""
    if text in ("true", "false"):
        return text == "true"
    if "tuple" in field_type:
        return tuple(int(v) for v in text.split(","))
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            continue
    return text


def warm_epsilon(epsilons: tuple[float, ...]) -> float:
    """The warm-up fit's ε: one the run does not measure. The accountant keeps every ε it has
    computed for the process, and a fit's ledger does not depend on the seed, so a warm-up at
    a measured ε would hand that ε's fits their whole calibration, which a user's first fit
    pays (hmda, ε = 1, main at 4d86abd: 14.6 CPU s after a warm-up at ε = 1, 44.3 s in a fresh
    process; results/tables_speed/calibration_cold.md)."""
    return max(epsilons) + 1.0


def fit_cpu(data, epsilon: float, seed: int, config: AnchorConfig) -> float:
    """CPU seconds of one fit (all threads of this process; torch runs one)."""
    return round(timed_fit(data, epsilon, seed, config)[2], 2)


def peer_fit_cpu(cells, domain, epsilon: float, seed: int, method: str, delta: float) -> float:
    """CPU seconds of one uncached MST or AIM fit on the benchmark's public ``cells``."""
    fitted = run_peer_samplers(cells, domain, method, epsilon, delta, seed, len(cells))
    return round(next(iter(fitted.values()))[1]["fit_cpu_seconds"], 2)


def parse_arms(given: list[str] | None) -> dict[str, AnchorConfig]:
    """``--arm`` values as {name: AnchorConfig}; ARMS when none were given."""
    if not given:
        return ARMS
    arms = {}
    for text in given:
        name, _, settings = text.partition(":")
        items = [s for s in settings.split(",") if s]
        merged: list[str] = []  # "generator_hidden=128,128" splits into "...=128" and "128"
        for item in items:
            if "=" in item or not merged:
                merged.append(item)
            else:
                merged[-1] += "," + item
        arms[name] = anchor_config(merged)
    return arms


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("tables", help="comma list of tables.py's names")
    p.add_argument("--epsilons", type=harness.floats, default=(1.0, 3.0))
    harness.add_seeds(p, "3")
    harness.add_data_dir(p)
    harness.add_out(p, harness.results("tables_speed", "fit_cpu.jsonl"))
    p.add_argument("--arm", action="append", help="NAME:key=value,... (repeat; see above)")
    p.add_argument("--peers", default="", help="comma list of mst, aim (uncached fits)")
    p.add_argument("--delta", type=float, default=1e-5, help="the peers' delta (ours: default)")
    args = p.parse_args(argv)
    arms = parse_arms(args.arm)
    torch.set_num_threads(1)
    for name in args.tables.split(","):
        data = load_dataset(name, harness.data_dir(args.data_dir))
        warm = next(iter(arms.values()))
        fit_cpu(data, warm_epsilon(args.epsilons), 99, warm)  # warm-up: imports, first calls
        cells = to_cells(data.train, data.schema, PEER_BINS)
        domain = cell_domain(data.schema, PEER_BINS)
        for epsilon in args.epsilons:
            for seed in harness.seeds(args):
                row = {"table": name, "epsilon": epsilon, "seed": seed, "started": harness.now()}
                row |= {arm: fit_cpu(data, epsilon, seed, config) for arm, config in arms.items()}
                for peer in filter(None, args.peers.split(",")):
                    row[peer] = peer_fit_cpu(cells, domain, epsilon, seed, peer, args.delta)
                harness.log_row(args.out, row)


if __name__ == "__main__":
    main()
