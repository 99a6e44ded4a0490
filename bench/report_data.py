"""Write the four data sets of the end-to-end reports (issue 12) as a user's files: CSV or .npz
plus the public schema JSON, into a folder OUTSIDE the repository (the data are never committed).

* adult/: train.csv, test.csv (UCI Adult without its rows holding a missing value, natural class
  balance: ``load_adult(balanced=False)``; its schema's label prior is "dp"), schema.json;
* thyroid/: train.csv, test.csv (UCI thyroid "ann" files as they are), schema.json;
* mnist/: train.npz (the first ``--mnist-train`` training images, 10,000 by default, to fit the
  CPU), test.npz (the 10,000 test images), schema.json;
* italy/: train.npz, test.npz (ItalyPowerDemand pooled and split 70/30, seed 0), schema.json.

The schemas are dpforge's public schemas of these data sets (:mod:`dpforge.datasets`). Usage::

    python bench/report_data.py /tmp/dpforge-reports
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

import harness
from dpforge.data.arrays import ArrayData
from dpforge.datasets.adult import load_adult
from dpforge.datasets.images import load_idx_dataset
from dpforge.datasets.series import load_italy_power_demand
from dpforge.datasets.thyroid import load_thyroid


def write_table(folder: Path, train, test, schema) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    train.to_csv(folder / "train.csv", index=False)
    test.to_csv(folder / "test.csv", index=False)
    (folder / "schema.json").write_text(schema.to_json())


def write_arrays(folder: Path, train: ArrayData, test: ArrayData, schema) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in (("train", train), ("test", test)):
        np.savez(folder / f"{name}.npz", x=data.values, y=np.asarray(data.labels).astype(str))
    (folder / "schema.json").write_text(schema.to_json())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--mnist-train", type=int, default=10_000)
    harness.add_data_dir(parser)
    args = parser.parse_args()
    data_dir = harness.data_dir(args.data_dir)
    write_table(args.out / "adult", *load_adult(data_dir, balanced=False))
    write_table(args.out / "thyroid", *load_thyroid(data_dir))
    write_arrays(args.out / "mnist", *load_idx_dataset("mnist", data_dir, args.mnist_train))
    write_arrays(args.out / "italy", *load_italy_power_demand())
    print(f"wrote adult/, thyroid/, mnist/, italy/ under {args.out}")


if __name__ == "__main__":
    main()
