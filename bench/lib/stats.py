"""Mean ± std over seeds, and how the reports print it (one definition for every script)."""

from __future__ import annotations

import math
import statistics


def mean_std(values: list[float | None]) -> dict[str, float] | None:
    """{"mean", "std", "n"} of ``values`` (sample std; 0 for one value). None when a value is
    missing (e.g. an event the RDP accountant cannot analyse); mean inf when one is infinite
    (a non-private baseline's epsilon)."""
    if any(v is None for v in values):
        return None
    if not all(math.isfinite(v) for v in values):
        return {"mean": math.inf, "std": 0.0, "n": len(values)}
    std = statistics.stdev(values) if len(values) > 1 else 0.0
    return {"mean": statistics.fmean(values), "std": std, "n": len(values)}


def fmt(
    stat: dict[str, float] | None, digits: int = 3, scale: float = 1.0, inf: str = "inf"
) -> str:
    """ "mean ± std" with ``digits`` decimals (times ``scale``); "-" when there is none."""
    if not stat:
        return "-"
    if not math.isfinite(stat["mean"]):
        return inf
    return f"{stat['mean'] * scale:.{digits}f} ± {stat['std'] * scale:.{digits}f}"
