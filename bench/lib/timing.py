"""Timing of training steps side by side: the shared loop of the speed benchmarks.

Steps are timed interleaved, round by round, so that drift and the other jobs on a shared
machine slow every step alike; each call's process CPU time is kept next to its wall time (on
an oversubscribed machine the wall time mostly measures waiting for a core, CPU time the work).
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable

Step = Callable[[], None]


def time_ms(fn: Step) -> tuple[float, float]:
    """Wall-clock and process CPU milliseconds of one call."""
    wall, cpu = time.perf_counter(), time.process_time()
    fn()
    return (time.perf_counter() - wall) * 1e3, (time.process_time() - cpu) * 1e3


def interleaved(
    steps: dict[str, Step], rounds: int, warmup: int, rotate: bool = False
) -> dict[str, list[tuple[float, float]]]:
    """(wall ms, cpu ms) of every step per round, after ``warmup`` untimed rounds. The order
    alternates forwards / backwards each round, or (``rotate``) shifts by one each round."""
    names = list(steps)
    for _ in range(warmup):
        for name in names:
            steps[name]()
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in names}
    for r in range(rounds):
        if rotate:
            order = names[r % len(names) :] + names[: r % len(names)]
        else:
            order = names if r % 2 == 0 else names[::-1]
        for name in order:
            samples[name].append(time_ms(steps[name]))
    return samples


def quartiles(times: list[float]) -> dict[str, float]:
    """Median, quartiles, minimum and count of a list of milliseconds."""
    q = statistics.quantiles(times, n=4) if len(times) > 1 else [times[0]] * 3
    return {
        "median_ms": statistics.median(times),
        "p25_ms": q[0],
        "p75_ms": q[2],
        "min_ms": min(times),
        "n": len(times),
    }


def paired_ratio(a: list[float], b: list[float]) -> float:
    """Median over rounds of a's time over b's in the same round (the same load on both)."""
    return statistics.median(x / y for x, y in zip(a, b, strict=True))


def load_average() -> float | None:
    """The 1-minute load average, where the platform has one."""
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return None


def alone(step: Step, repeats: int) -> list[tuple[float, float]]:
    """(wall ms, cpu ms) of ``repeats`` calls of a slow step, after one untimed call."""
    step()
    return [time_ms(step) for _ in range(repeats)]


def summaries(
    samples: dict[str, list[tuple[float, float]]],
) -> tuple[dict[str, dict[str, float]], dict[str, dict[str, float]]]:
    """(wall, cpu): :func:`quartiles` of each step's wall and of its CPU milliseconds."""
    wall = {name: quartiles([w for w, _ in t]) for name, t in samples.items()}
    cpu = {name: quartiles([c for _, c in t]) for name, t in samples.items()}
    return wall, cpu
