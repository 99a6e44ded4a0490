"""The fine histogram's pooling per benchmark table (issue 22): the block the noise asks for,
the capped block (at most ``cells.MAX_BLOCK``) and the block of the rule
(``cells.block_size``: uncapped where ``cells.noise_outweighs_a_cell``), per numeric column.

Each fit runs the default's plan and measure stage up to the cells' placement (the fine
histogram's release included) and stops there: the inputs of the rule are public (the noise std
of a fine cell as the plan fixed it, the released N, the column's public grid), so this shows
which tables the rule changes without scoring them. One JSON line per (table, epsilon, seed)::

    python bench/block_rule.py psid,nmes,fair,wage,healthins,thyroid,adult --seeds 0,1,2 \
        --out results/block_rule.jsonl
"""

from __future__ import annotations

import argparse
import math

import torch

import dpforge.kinds.table as table_kind
import harness
from dpforge.statistics import cells
from tables_runs import each_fit, timed_fit


class _Placed(Exception):
    """Raised once the cells are about to be placed: the rest of the fit is not needed."""


def capped(std: float, total: float, n_fine: int) -> int:
    """The block before the rule: the wanted power of two, at most MAX_BLOCK."""
    if std <= 0 or total <= 0:
        return 1
    wanted = (n_fine * std / total) ** 2
    return int(min(cells.MAX_BLOCK, 2 ** max(0, math.ceil(math.log2(max(wanted, 1.0))))))


def blocks_of(data, epsilon: float, seed: int) -> dict:
    """The pooling inputs and blocks of one default fit, stopped before the cells' placement."""
    calls = []

    def spy(std, total, n_fine):
        calls.append((std, total, n_fine))
        return cells.block_size(std, total, n_fine)

    def stop(*_args):
        raise _Placed

    saved = table_kind.block_size, table_kind.MarginalAnchoring._place_cells
    table_kind.block_size, table_kind.MarginalAnchoring._place_cells = spy, stop
    try:
        timed_fit(data, epsilon, seed)
    except _Placed:
        pass
    finally:
        table_kind.block_size, table_kind.MarginalAnchoring._place_cells = saved
    if not calls:
        return {"columns": 0}
    std, total = calls[0][0], calls[0][1]
    return {
        "columns": len(calls),
        "fine_std": std,
        "released_n": total,
        "noise_block_over_cell": std * math.sqrt(cells.MAX_BLOCK) * cells.MIN_CELLS / total,
        "lifted": cells.noise_outweighs_a_cell(std, total),
        "wanted": sorted({round((n * std / total) ** 2, 1) for _, _, n in calls}),
        "capped": sorted({capped(*c) for c in calls}),
        "rule": sorted({cells.block_size(*c) for c in calls}),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("tables")
    harness.add_seeds(parser, "1")
    harness.add_data_dir(parser)
    harness.add_out(parser, harness.RESULTS / "block_rule.jsonl")
    args = parser.parse_args()
    torch.set_num_threads(1)
    for name, data, epsilon, seed in each_fit(args.tables, args):
        row = {"table": name, "epsilon": epsilon, "seed": seed}
        row |= blocks_of(data, epsilon, seed)
        row["changed"] = row.get("capped") != row.get("rule")
        harness.log_row(args.out, row)


if __name__ == "__main__":
    main()
