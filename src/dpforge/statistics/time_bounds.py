"""The DP range of a date column whose ``min``/``max`` the schema leaves null.

The same two-histogram estimator as numeric bounds (:func:`dpforge.statistics.dp_stats.dp_bounds`,
the same ledger event), on the column's time axis (days or seconds since 1970), with a public
calendar as its coarse grid: one bin per month from 1678 to 2261. On the default grid of
octaves a year of dates around 2013 (about 2^30.3 seconds since 1970) fell in one or two bins
whose widening made the range 18 years wide (4,000 flights, epsilon 1); on the calendar the
quantile months widened by one month give a range of about 14 months, which the fine histogram
narrows when the records afford it (and when no month stands out, dp_bounds merges 2 to 16
neighbouring months). The result is rounded outwards to whole resolution steps from 1970, so
that the format writes it exactly, and kept inside the calendar: post-processing, free.
"""

from __future__ import annotations

import math
from functools import cache

import numpy as np
import pandas as pd

from dpforge.schema.dates import EPOCH, FIRST_SECOND, LAST_SECOND, SECONDS
from dpforge.schema.table import Column
from dpforge.statistics.dp_stats import DpEstimate, dp_bounds

__all__ = ["calendar_grid", "time_range"]


@cache
def _month_seconds() -> np.ndarray:
    starts = pd.date_range("1678-01-01", "2262-01-01", freq="MS")
    return np.asarray((starts - EPOCH).total_seconds(), dtype=np.float64)


def calendar_grid(column: Column) -> np.ndarray:
    """The public coarse grid of a date column: month starts on its axis, open at both ends."""
    months = _month_seconds() / SECONDS[column.type]
    return np.concatenate([[-np.inf], months, [np.inf]])


def time_range(
    values, column: Column, sigma: float, rng: np.random.Generator, sensitivity: float = 1
) -> tuple[DpEstimate, float, float]:
    """The estimate (its event for the ledger) and the column's DP range on its axis."""
    estimate = dp_bounds(values, sigma, rng, grid=calendar_grid(column), sensitivity=sensitivity)
    unit, step = SECONDS[column.type], float(column.resolution)
    first, last = FIRST_SECOND / unit, LAST_SECOND / unit
    low, high = (min(max(v, first), last) for v in estimate.value)
    lower = max(math.floor(low / step) * step, math.ceil(first / step) * step)
    upper = min(math.ceil(high / step) * step, math.floor(last / step) * step)
    if upper <= lower:
        upper = lower + step
    return estimate, float(lower), float(upper)
