"""How many Adam steps each anchoring phase takes, the batch they take them on, and how many
column pairs the selection measures per column (issue 22): all follow the released N.

A larger table's marginals are measured on finer cells and with less noise relative to their
counts, so the generator needs more steps to reach them, and it can afford more measured pairs
(each pair's cells keep enough signal); a small table needs few steps, should fit in seconds,
and would drown more pairs in noise; a table smaller than the batch fitted its marginals on
more generated rows a step than it has records (bench/results/tables_speed/small_table_speed.md).
Every rule reads only the released (noisy) number of records: post-processing of a DP release, so it
reveals nothing more about any record.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from dpforge.statistics.anchor import AnchorConfig

__all__ = [
    "BATCH_RANGE",
    "BATCH_STEP",
    "PAIRS_RULE",
    "ROWS_PER_STEP",
    "STEPS_RANGE",
    "AnchorPhase",
    "anchor_batch_size",
    "anchor_phase",
    "anchor_pairs_per_column",
    "anchor_steps",
]

# One step per ROWS_PER_STEP released records, STEPS_RANGE at the ends. Small tables (up to
# 9,000 rows) keep 300, which fits them in seconds; Adult (~30,000 rows) gets 1,000, which its
# 2-way TVD needed (bench/results/tables/quality_trials.md, third round).
ROWS_PER_STEP = 30.0
STEPS_RANGE = (300, 1000)
# The batch of the anchor phase: the released N rounded up to a multiple of BATCH_STEP, within
# BATCH_RANGE. A table of 500 rows fits its marginals on batches of 512 generated rows, not
# 1,024; from 1,024 rows on, 1,024 as before. (The smallest power of two holding N put psid,
# 502 rows, on 1,024 whenever the noise released more than 512.) Fewer steps or a smaller
# batch for the scout phase that scored the pairs before the consistent estimate did cost
# quality (bench/results/tables_speed/small_table_speed.md).
BATCH_RANGE = (256, 1024)
BATCH_STEP = 64
# From this many released records, three pairs per column: on Adult (30,162 rows) two took the
# 2-way TVD from 0.047 to 0.045 at epsilon 1 and 0.045 to 0.037 at epsilon 3 (fourth round),
# three to 0.042 and 0.036 with RF AUC 0.879 and 0.886 against 0.878 and 0.882 (fifth round;
# 3 seeds each, bench/results/tables/quality_trials.md); on wage and fair (2,000 and 4,244 rows) two
# changed nothing (second round). Tables between were not tried.
PAIRS_RULE = (20_000.0, 3.0)
# Adam's step size in the anchor phase, decaying linearly to 0 over it.
ANCHOR_LR = 1e-2


class AnchorPhase(NamedTuple):
    """One anchoring phase as it trains (:func:`dpforge.statistics.anchor.train_anchor`)."""

    steps: int
    batch_size: int
    lr: float = ANCHOR_LR


def anchor_phase(config: AnchorConfig, n_public: float) -> AnchorPhase:
    """The anchor phase's steps and batch (:func:`anchor_steps`, :func:`anchor_batch_size`)."""
    return AnchorPhase(anchor_steps(config, n_public), anchor_batch_size(config, n_public))


def anchor_steps(config: AnchorConfig, n_public: float) -> int:
    """The steps of each anchoring phase: ``config.steps`` when set, else one step per
    ``ROWS_PER_STEP`` records of ``n_public`` (the released N) within ``STEPS_RANGE``."""
    if config.steps is not None:
        return config.steps
    low, high = STEPS_RANGE
    return int(min(high, max(low, math.ceil(max(0.0, n_public) / ROWS_PER_STEP))))


def anchor_batch_size(config: AnchorConfig, n_public: float) -> int:
    """The generated rows per step of both phases: ``config.batch_size`` when set, else
    ``n_public`` (the released N) rounded up to a multiple of ``BATCH_STEP``, within
    ``BATCH_RANGE``."""
    if config.batch_size is not None:
        return config.batch_size
    low, high = BATCH_RANGE
    rows = BATCH_STEP * math.ceil(max(0.0, n_public) / BATCH_STEP)
    return int(min(high, max(low, rows)))


def anchor_pairs_per_column(config: AnchorConfig, n_public: float) -> float:
    """Pairs the selection measures per column: ``config.pairs_per_column`` when set, else
    ``PAIRS_RULE[1]`` from ``PAIRS_RULE[0]`` released records on, else one."""
    if config.pairs_per_column is not None:
        return config.pairs_per_column
    threshold, pairs = PAIRS_RULE
    return pairs if n_public >= threshold else 1.0
