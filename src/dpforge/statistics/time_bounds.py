"""The DP range of a date column whose ``min``/``max`` the schema leaves null.

The same two-histogram estimator as numeric bounds (:func:`dpforge.statistics.dp_stats.dp_bounds`,
the same ledger event), on the column's time axis (days or seconds since 1970), with a finer
public coarse grid: eight bins per octave, widened by a quarter of an octave. On the default
grid (one bin per octave, widened by one) a year of dates around 2013 spans a whole octave of
days since 1970, and the range came out about three years wide; eight bins per octave give a
range a few months wider than the data, which the fine histogram then narrows. The result is
rounded outwards to whole resolution steps from 1970 (so that the format writes it exactly) and
kept inside the calendar dpforge reads (1678 to 2261): post-processing, free.
"""

from __future__ import annotations

import math

import numpy as np

from dpforge.schema.dates import FIRST_SECOND, LAST_SECOND, SECONDS
from dpforge.schema.table import Column
from dpforge.statistics.dp_stats import DpEstimate, dp_bounds

__all__ = ["TIME_BINS_PER_OCTAVE", "time_range"]

TIME_BINS_PER_OCTAVE = 8
TIME_WIDEN_OCTAVES = 0.25


def time_range(
    values, column: Column, sigma: float, rng: np.random.Generator
) -> tuple[DpEstimate, float, float]:
    """The estimate (its event for the ledger) and the column's DP range on its axis."""
    estimate = dp_bounds(
        values, sigma, rng, bins_per_octave=TIME_BINS_PER_OCTAVE, widen_octaves=TIME_WIDEN_OCTAVES
    )
    unit, step = SECONDS[column.type], float(column.resolution)
    first, last = FIRST_SECOND / unit, LAST_SECOND / unit
    low, high = (min(max(v, first), last) for v in estimate.value)
    lower = math.floor(low / step) * step
    upper = math.ceil(high / step) * step
    lower, upper = max(lower, math.ceil(first / step) * step), min(upper, last)
    if upper <= lower:
        upper = lower + step
    return estimate, float(lower), float(upper)
