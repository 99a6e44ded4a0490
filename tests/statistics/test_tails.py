"""Class tails trimmed to the cells that stand out from the noise (free post-processing)."""

from __future__ import annotations

import numpy as np

from dpforge.statistics.marginals import MeasuredMarginal
from dpforge.statistics.tails import trimmed_tails


def _marginal(columns, rows) -> MeasuredMarginal:
    counts = np.asarray(rows, dtype=np.float64)
    return MeasuredMarginal(columns, counts.shape, counts.ravel(), float(counts.sum()))


def test_each_class_keeps_the_cells_between_its_first_and_last_standing_out():
    rows = [[3.0, 25.0, 9.0, 30.0, 12.0, 8.0], [40.0, 50.0, 60.0, 45.0, 35.0, 30.0]]
    income, visits = _marginal(("y", "income"), rows), _marginal(("y", "visits"), rows)
    trimmed = trimmed_tails([income, visits], "y", ["income"], std=10.0, z=2.0)
    out = trimmed[0].noisy_counts.reshape(2, 6)
    assert out[0].tolist() == [0.0, 25.0, 9.0, 30.0, 0.0, 0.0]  # tails under 20 cut, inside kept
    assert out[1].tolist() == rows[1]  # every cell stands out: nothing cut
    assert trimmed[1] is visits  # not a numeric column of the list: untouched
    assert trimmed_tails([income], "y", ["income"], std=10.0, z=0.0)[0] is income  # rule off


def test_a_class_where_nothing_stands_out_is_left_as_released():
    m = _marginal(("y", "income"), [[5.0, -3.0, 7.0], [1.0, 2.0, 3.0]])
    out = trimmed_tails([m], "y", ["income"], std=10.0, z=2.0)[0]
    assert np.array_equal(out.noisy_counts, m.noisy_counts)
