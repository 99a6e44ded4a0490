"""Real tables (issue 21): missing values on the Palmer penguins and heaped numbers.

For each seed and epsilon: the missing rate of each nullable penguin column, real against
synthetic (20,000 rows sampled), and the missing rate of 'sex' per species; then a column of
ages on six points (4,000 rows, weights depending on the label) at epsilon = 1: 1-way TVD on
the six atoms (with the public resolution 0.5) and on 10 public bins (without it). The schemas
and the heaped table are the ones of tests/test_real_tables.py.

    python bench/real_tables.py --seeds 1 --out bench/results/real_tables.json
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import torch

import harness

sys.path.insert(0, str(harness.REPO / "tests"))
from dpforge.evaluation.fidelity import marginal_fidelity  # noqa: E402
from dpforge.schema.table import Column, Schema  # noqa: E402
from dpforge.statistics.anchor import AnchorConfig  # noqa: E402
from dpforge.synthesizer import Synthesizer  # noqa: E402
from test_real_tables import (  # noqa: E402
    ATOMS,
    atom_tvd,
    heaped_table,
    penguin_schema,
    penguins_text,
)

NULLABLE = ("bill_length_mm", "bill_depth_mm", "flipper_length_mm", "body_mass_g", "sex")


def penguins(epsilon: float, seed: int, anchor: AnchorConfig) -> dict:
    """Missing rates real vs synthetic, per column and (sex) per species."""
    import palmerpenguins

    real = palmerpenguins.load_penguins()
    started = time.perf_counter()
    synth = Synthesizer(penguin_schema(), epsilon=epsilon, seed=seed, progress=False, anchor=anchor)
    rows = synth.fit(penguins_text()).sample(20_000, seed=seed)
    by_species = {
        side: frame["sex"].isna().groupby(frame["species"]).mean().round(4).to_dict()
        for side, frame in (("real", real), ("synthetic", rows))
    }
    return {
        "epsilon": epsilon,
        "seed": seed,
        "seconds": round(time.perf_counter() - started, 1),
        "missing": {
            c: [round(float(real[c].isna().mean()), 4), round(float(rows[c].isna().mean()), 4)]
            for c in NULLABLE
        },
        "sex_missing_by_species": by_species,
    }


def atoms(seed: int, anchor: AnchorConfig) -> dict:
    """The six-atom column at epsilon = 1: TVD on the atoms and on 10 public bins."""
    schema = Schema(
        (
            Column("age", "continuous", 0.0, 100.0, resolution=0.5),
            Column("age_free", "continuous", 0.0, 100.0),
            Column("y", "categorical", categories=("a", "b")),
        ),
        label="y",
    )
    real = heaped_table(4000, np.random.default_rng(seed))
    synth = Synthesizer(schema, epsilon=1.0, seed=seed, progress=False, anchor=anchor).fit(real)
    rows = synth.sample(20_000, seed=seed)
    return {
        "seed": seed,
        "atoms": ATOMS.tolist(),
        "tvd_on_atoms_with_resolution": round(
            atom_tvd(real["age"].to_numpy(), rows["age"].to_numpy()), 4
        ),
        "tvd_10_bins_without_resolution": round(
            marginal_fidelity(real, rows, schema, 10).one_way["age_free"], 4
        ),
    }


def markdown(record: dict) -> list[str]:
    lines = [
        "| epsilon | seed | column | missing real | missing synthetic |",
        "|---|---|---|---|---|",
    ]
    for run in record["penguins"]:
        for column, (real, synthetic) in run["missing"].items():
            lines.append(
                f"| {run['epsilon']:g} | {run['seed']} | {column} | {real} | {synthetic} |"
            )
    lines += ["", "| seed | TVD on the six atoms (resolution 0.5) | TVD on 10 public bins |"]
    lines += ["|---|---|---|"]
    for run in record["atoms"]:
        lines.append(
            f"| {run['seed']} | {run['tvd_on_atoms_with_resolution']} | "
            f"{run['tvd_10_bins_without_resolution']} |"
        )
    return lines


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    harness.add_seeds(parser, default="1")
    harness.add_threads(parser)
    harness.add_out(parser, harness.RESULTS / "real_tables.json")
    parser.add_argument("--epsilons", type=harness.floats, default=(1.0, 3.0, float("inf")))
    parser.add_argument("--steps", type=int, default=AnchorConfig.steps, help="anchor steps")
    args = parser.parse_args(argv)
    anchor = AnchorConfig(steps=args.steps)
    torch.set_num_threads(args.threads)
    record = harness.provenance(__file__, argv)
    runs = [(e, s) for s in harness.seeds(args) for e in args.epsilons]
    record["penguins"] = [penguins(e, s, anchor) for e, s in runs]
    record["atoms"] = [atoms(s, anchor) for s in harness.seeds(args)]
    harness.write_results(Path(args.out), record, "Real tables (issue 21)", markdown(record))
    print("\n".join(markdown(record)))


if __name__ == "__main__":
    main()
