"""Round 2 as label x column x column marginals, on cells merged by a public rule (issue 22).

The pair selection (:mod:`dpforge.statistics.selection`) measures its chosen pairs (a, b) as
a x b tables. A classifier trained on the synthetic rows reads the columns given the label;
with ``AnchorConfig(label_pairs=True)`` each chosen pair is measured as the 3-way marginal
label x a x b instead, and the generator fits it given each label.

Privacy: the release is the same as the pairs' one. Adding or removing one record adds or
removes one to exactly one cell of each of the ``k`` 3-way tables (merged cells included: a
record's cell lies in one merged cell), so the vector has L2 sensitivity ``sqrt(k)`` (``r *
sqrt(k)`` for a person's ``r`` rows) and the noise ``sigma * sqrt(k)`` per cell gives the
same event the plan records for the pairs (:func:`dpforge.privacy.release_noise.table_event`).

Selection: the pairs are chosen as without the option (on a x b scores).

Cells: a 3-way table has K times the cells of the pair, so each holds K times fewer records
against the same noise. As :func:`dpforge.statistics.cells.cells_for_noise` sizes a numeric
column's cells, the rule keeps a class's table at most ``N / (K * snr * std)`` cells, from
public inputs only (the released N, the classes, the noise std each cell will get, fixed by
epsilon, delta and the plan): adjacent cells of the wider column are merged first, then of
both, never below ``MIN_MERGED`` cells a column. Nothing here reads a record.

When: ``AnchorConfig.label_pairs=None`` (the default) turns it on from ``LABEL_PAIRS_FROM``
released records when epsilon x N is at least ``LABEL_PAIRS_SIGNAL`` (:func:`label_pairs_for`):
where each class's 3-way tables keep their cells. On Adult (30,162 rows) with the balanced draw
it lifted the RF AUC from 0.883 to 0.887 at epsilon = 3 at the same 2-way TVD (0.0275 /
0.0279); at epsilon = 1 the merging rule coarsens the wide columns and the 2-way TVD rose from
0.0372 to 0.0400 for RF AUC 0.879 -> 0.882; on the public tables of 2,000-5,900 rows it was
level or lower (bench/results/tables/matching_balance.md).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

LABEL_PAIRS_FROM = 20_000.0  # released records from which label_pairs=None turns it on,
LABEL_PAIRS_SIGNAL = 50_000.0  # when epsilon x released records is at least this

__all__ = [
    "LABEL_PAIRS_FROM",
    "LABEL_PAIRS_SIGNAL",
    "label_pairs_for",
    "MIN_MERGED",
    "label_pair_marginals",
    "merge_map",
    "merged_sizes",
]

MIN_MERGED = 2  # the fewest merged cells of a column in a label x column x column marginal


def merged_sizes(
    sizes: tuple[int, int], n_public: float, n_classes: int, cell_std: float, snr: float
) -> tuple[int, int]:
    """The two columns' merged cell counts: the pair's own when ``ca * cb`` cells a class hold
    ``snr`` noise sd each (``N / (K * ca * cb) >= snr * cell_std``), else fewer (see the
    module docstring). Public inputs only."""
    ca, cb = sizes
    if cell_std <= 0 or snr <= 0:
        return ca, cb
    budget = n_public / (max(1, n_classes) * snr * cell_std)  # cells a class's table may have
    if ca * cb <= budget:
        return ca, cb
    small = min(ca, cb)
    if small * small <= budget:  # the narrower column keeps its cells
        wide = max(MIN_MERGED, math.floor(budget / small))
        return (ca, min(cb, wide)) if ca == small else (min(ca, wide), cb)
    each = max(MIN_MERGED, math.floor(math.sqrt(budget)))
    return min(ca, each), min(cb, each)


def merge_map(size: int, merged: int) -> tuple[int, ...]:
    """Each of ``size`` cells' merged cell, ``merged`` runs of adjacent cells of (nearly) equal
    length; () when nothing is merged."""
    if merged >= size:
        return ()
    return tuple(i * merged // size for i in range(size))


def label_pair_marginals(
    pairs: Sequence[tuple[str, str]],
    label: str,
    sizes: dict[str, int],
    n_public: float,
    n_classes: int,
    cell_std: float,
    snr: float,
) -> tuple[list[tuple[str, str, str]], list[tuple]]:
    """The 3-way marginals (label, a, b) of ``pairs`` and each one's merging (per column: the
    label's cells kept, then a's and b's :func:`merge_map`); ``sizes``: each column's cells."""
    marginals, groups = [], []
    for a, b in pairs:
        ga, gb = merged_sizes((sizes[a], sizes[b]), n_public, n_classes, cell_std, snr)
        marginals.append((label, a, b))
        groups.append(((), merge_map(sizes[a], ga), merge_map(sizes[b], gb)))
    return marginals, groups


def label_pairs_for(
    setting: bool | None,
    n_public: float,
    epsilon: float,
    has_label: bool,
    in_memory: bool,
    select: bool,
) -> bool:
    """Whether round 2 measures label x a x b: ``setting`` when given, else on from
    ``LABEL_PAIRS_FROM`` released records (``n_public``: public) with ``epsilon`` x N at least
    ``LABEL_PAIRS_SIGNAL`` (epsilon infinite: the non-private run), a label, the records in
    memory (an engine counts pairs only) and the pair selection on."""
    if setting is not None:
        return setting
    enough = n_public >= LABEL_PAIRS_FROM and epsilon * n_public >= LABEL_PAIRS_SIGNAL
    return select and has_label and in_memory and enough
