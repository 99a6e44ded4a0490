"""How many Adam steps each anchoring phase takes (issue 22): they follow the released N.

A larger table's marginals are measured on finer cells and with less noise relative to their
counts, so the generator needs more steps to reach them; a small table needs few and should fit
in seconds. The count reads only the released (noisy) number of records: post-processing of a
DP release, so it reveals nothing more about any record.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from dpforge.statistics.anchor import AnchorConfig

__all__ = ["ROWS_PER_STEP", "STEPS_RANGE", "anchor_steps"]

# One step per ROWS_PER_STEP released records, STEPS_RANGE at the ends. Small tables (up to
# 9,000 rows) keep 300, which fits them in seconds; Adult (~30,000 rows) gets 1,000, which its
# 2-way TVD needed (bench/results/quality_trials.md, third round).
ROWS_PER_STEP = 30.0
STEPS_RANGE = (300, 1000)


def anchor_steps(config: AnchorConfig, n_public: float) -> int:
    """The steps of each anchoring phase: ``config.steps`` when set, else one step per
    ``ROWS_PER_STEP`` records of ``n_public`` (the released N) within ``STEPS_RANGE``."""
    if config.steps is not None:
        return config.steps
    low, high = STEPS_RANGE
    return int(min(high, max(low, math.ceil(max(0.0, n_public) / ROWS_PER_STEP))))
