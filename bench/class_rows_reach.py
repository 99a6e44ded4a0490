"""Which class rows ``AnchorConfig.class_rows`` can pool, per benchmark table (issue 22).

Each fit runs the plan and round 1 with ``class_rows`` set and stops right after the per-class
pooling (``class_rows.pooled_class_rows``), before training. Per label x numeric marginal and
class: the class's released total ``n_k``, the row's cells ``C`` (a nullable column's missing
cell left out), the line ``z * sd * C`` under which a row is pooled, and whether its counts
changed. All its inputs are released counts or public (the planned noise sd). One JSON line per
(table, epsilon, seed)::

    python bench/class_rows_reach.py adult,thyroid --seeds 0 --out results/class_rows_reach.jsonl
"""

from __future__ import annotations

import argparse
from dataclasses import replace

import numpy as np
import torch

import dpforge.kinds.table as table_kind
import harness
from dpforge.statistics.anchor import AnchorConfig
from dpforge.statistics.row_totals import class_totals
from tables_runs import each_fit, timed_fit


class _Pooled(Exception):
    """Raised once the class rows are pooled: the rest of the fit is not needed."""


def reach(data, epsilon: float, seed: int, z: float) -> dict:
    """The class rows of one fit with ``class_rows=z``: their totals, lines and changes."""
    seen = {}
    pool = table_kind.pooled_class_rows

    def spy(measured, label_name, numeric, std, zz):
        out = pool(measured, label_name, numeric, std, zz)
        totals = class_totals(measured, label_name)
        rows = []
        for before, after in zip(measured, out, strict=True):
            if not before.is_label_by(label_name, numeric):
                continue
            present = before.shape[1] - int(numeric[before.columns[1]])
            old = np.asarray(before.noisy_counts).reshape(before.shape)
            new = np.asarray(after.noisy_counts).reshape(after.shape)
            for k in range(before.shape[0]):
                rows.append({
                    "column": before.columns[1], "class": k, "cells": present,
                    "n_k": round(float(totals[k]), 1), "line": round(zz * std * present, 1),
                    "changed": bool(not np.allclose(old[k], new[k])),
                })  # fmt: skip
        seen.update(std=std, totals=[round(float(t), 1) for t in totals], rows=rows)
        raise _Pooled

    table_kind.pooled_class_rows = spy
    try:
        timed_fit(data, epsilon, seed, replace(AnchorConfig(), class_rows=z))
    except _Pooled:
        pass
    finally:
        table_kind.pooled_class_rows = pool
    rows = seen.get("rows", [])
    closest = min(rows, key=lambda r: r["n_k"] / r["line"], default=None)
    return {
        "sd": seen.get("std"),
        "class_totals": seen.get("totals"),
        "rows": len(rows),
        "rows_under_line": sum(r["n_k"] < r["line"] for r in rows),
        "rows_changed": sum(r["changed"] for r in rows),
        "closest": closest,  # the row whose total is nearest its line (n_k / line lowest)
        "changed": [r for r in rows if r["changed"]],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("tables")
    parser.add_argument("--z", type=float, default=2.0, help="class_rows (default 2)")
    harness.add_seeds(parser, "0")
    harness.add_data_dir(parser)
    harness.add_out(parser, harness.RESULTS / "class_rows_reach.jsonl")
    args = parser.parse_args()
    torch.set_num_threads(1)
    for name, data, epsilon, seed in each_fit(args.tables, args):
        row = {"table": name, "epsilon": epsilon, "seed": seed, "z": args.z}
        row |= reach(data, epsilon, seed, args.z)
        harness.log_row(args.out, row)


if __name__ == "__main__":
    main()
