"""Public groups of a long code list: codes that share a prefix, balanced in number of codes.

A rule of the declared list alone (never of the data), so using it costs nothing: postal codes
group by their leading digits, diagnosis codes by chapter and block, aircraft registrations by
their leading characters (:mod:`dpforge.statistics.codes` pools the codes that do not stand
out in these groups).
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence

import numpy as np

__all__ = ["prefix_groups"]


def prefix_groups(categories: Sequence[str], members: np.ndarray, n_groups: int) -> np.ndarray:
    """The group (0 .. g-1, g <= n_groups) of each code of ``members`` (indices into
    ``categories``): a public split of the list, by shared prefix, balanced in codes.

    Starting from one group, the largest group is split by its next character while the
    number of groups stays within ``n_groups``; when all its children do not fit, adjacent
    children are joined into runs of about equal size. Groups are numbered in text order.
    """
    members = np.asarray(members, dtype=np.int64)
    if members.size == 0:
        return np.zeros(0, dtype=np.int64)
    texts = [categories[i] for i in members]
    order = sorted(range(len(texts)), key=texts.__getitem__)
    heap = [(-len(order), 0, 0, order)]  # (-size, tie, depth, positions in text order)
    final, tie = [], 1
    while heap and len(heap) + len(final) < n_groups:
        size, _, depth, group = heapq.heappop(heap)
        children = _split(texts, group, depth)
        if children is None:  # a single code: cannot split
            final.append(group)
            continue
        room = n_groups - len(heap) - len(final)
        if len(children) > room:
            final.extend(_runs(children, room))
            continue
        for child in children:
            heapq.heappush(heap, (-len(child), tie, depth + 1, child))
            tie += 1
    final.extend(g for _, _, _, g in heap)
    final.sort(key=lambda g: texts[g[0]])
    out = np.empty(members.size, dtype=np.int64)
    for number, group in enumerate(final):
        out[group] = number
    return out


def _split(texts: list[str], group: list[int], depth: int) -> list[list[int]] | None:
    """``group`` (in text order) split by the character at ``depth`` and deeper, until it
    parts; None for a single code."""
    if len(group) < 2:
        return None
    while True:
        children: dict[str, list[int]] = {}
        for position in group:
            children.setdefault(texts[position][depth : depth + 1], []).append(position)
        if len(children) > 1:
            return [children[k] for k in sorted(children)]
        depth += 1


def _runs(children: list[list[int]], count: int) -> list[list[int]]:
    """Adjacent ``children`` joined into ``count`` runs of about equal size."""
    sizes = np.cumsum([len(c) for c in children])
    cuts = np.searchsorted(sizes, sizes[-1] * np.arange(1, count) / count, side="left")
    runs, start = [], 0
    for cut in [*sorted(set(int(c) + 1 for c in cuts)), len(children)]:
        if cut > start:
            runs.append([p for child in children[start:cut] for p in child])
            start = cut
    return runs
