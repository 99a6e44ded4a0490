"""Matching chunk after chunk (:mod:`dpforge.statistics.match_stream`): cell log-weights fitted
on one pool bring a fresh pool of the same generator to the targets, the streaming balance makes
the chunks' counts together follow the weighted pools, a stream's first chunk is the one-chunk
match, its later chunks meet the marginals as well, and 10^6 matched rows stay within 1 GB."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from dpforge.schema.table import Column, Schema
from dpforge.statistics.anchor import AnchorConfig
from dpforge.statistics.balance import balance_cells, balance_marginals, balanced_counts
from dpforge.statistics.marginals import CellColumn, MeasuredMarginal
from dpforge.statistics.match_stream import MatchStream, cell_log_weights, fit_cell_weights
from dpforge.statistics.reweight import MarginalTargets, ReweightSettings, matched_index
from dpforge.synthesizer import Synthesizer

JOINT = np.array([[0.30, 0.05, 0.0, 0.05], [0.0, 0.2, 0.05, 0.0], [0.05, 0.0, 0.1, 0.2]])


def _targets() -> MarginalTargets:
    """a x b (dependent) and y x a, a's 1-way the same in both."""
    label = np.stack([JOINT.sum(1) * 0.4, JOINT.sum(1) * 0.6])
    marginals = [
        MeasuredMarginal(("a", "b"), (3, 4), JOINT.ravel() * 1000, 1000.0),
        MeasuredMarginal(("y", "a"), (2, 3), label.ravel() * 1000, 1000.0),
    ]
    return MarginalTargets(marginals, "y")


def _pool(n: int, rng: np.random.Generator) -> dict[str, CellColumn]:
    """Independent uniform columns of 3 and 4 cells and a 2-class label."""
    return {
        "a": CellColumn(rng.integers(0, 3, n), 3),
        "b": CellColumn(rng.integers(0, 4, n), 4),
        "y": CellColumn(rng.integers(0, 2, n), 2),
    }


def _distance(targets: MarginalTargets, index: np.ndarray, weights: np.ndarray) -> float:
    w = np.tile(weights / weights.sum(), len(targets))
    hist = np.bincount(index.reshape(-1), w, minlength=targets.flat.size)
    return 0.5 * float(np.abs(hist - targets.flat).sum())


def test_cell_log_weights_bring_a_fresh_pool_to_the_targets():
    rng = np.random.default_rng(0)
    targets = _targets()
    log_weights = fit_cell_weights(targets, targets.cell_index(_pool(4000, rng)))
    assert log_weights.shape == targets.flat.shape
    fresh = targets.cell_index(_pool(4000, rng))  # rows the weights were not fitted on
    theta = cell_log_weights(log_weights, fresh)
    weighted = _distance(targets, fresh, np.exp(theta - theta.max()))
    assert weighted < 0.35 * _distance(targets, fresh, np.ones(4000))


def test_the_streaming_balance_carries_the_excess_to_the_next_chunk():
    """Two chunks balanced with the first one's excess carried: their counts together are
    closer to the two weighted pools together than when each is balanced alone."""
    totals = {}
    for carry in (False, True):
        rng, carried, left = np.random.default_rng(1), None, np.zeros(0)
        for chunk in range(2):
            cells = _pool(600, np.random.default_rng(10 + chunk))
            index, size = balance_cells(cells, balance_marginals(list(cells), [], 600))
            expected = np.random.default_rng(20 + chunk).dirichlet(np.ones(600)) * 37.0
            counts = np.bincount(rng.choice(600, 37, p=expected / 37.0), minlength=600)
            counts, excess = balanced_counts(index, size, expected, counts, 1, carried)
            assert counts.sum() == 37
            # carried: the excess is already that of both chunks together
            carried, left = (excess, excess) if carry else (None, excess + (left if chunk else 0))
        totals[carry] = np.abs(left).sum()
    assert totals[True] < totals[False]


def test_a_stream_matches_its_first_chunk_as_one_call_does():
    targets, settings = _targets(), ReweightSettings(pool=4, chunk=300)
    cells = _pool(1200, np.random.default_rng(3))
    stream = MatchStream(targets, settings)
    assert stream.pool_rows(300) == 1200
    first = stream.chunk_index(cells, 300, np.random.default_rng(4))
    alone = matched_index(targets, cells, 300, settings, np.random.default_rng(4))
    assert np.array_equal(first, alone)
    assert stream.pool_rows(300) == 600  # later chunks: a pool of STREAM_POOL x n


def _drawn_histogram(targets: MarginalTargets, cells, chosen: np.ndarray) -> np.ndarray:
    """The drawn rows' counts on every target's cells (concatenated)."""
    index = targets.cell_index(cells)[:, chosen]
    return np.bincount(index.reshape(-1), minlength=targets.flat.size).astype(float)


@pytest.mark.parametrize("seed", [5, 6])
def test_chunks_together_meet_the_targets_as_one_chunk_does(seed):
    rng = np.random.default_rng(seed)
    targets = _targets()
    stream = MatchStream(targets, ReweightSettings(chunk=500))
    drawn = []
    for _ in range(4):
        cells = _pool(stream.pool_rows(500), rng)
        drawn.append(_drawn_histogram(targets, cells, stream.chunk_index(cells, 500, rng)))

    def gap(counts: np.ndarray) -> float:
        return 0.5 * float(np.abs(counts * len(targets) / counts.sum() - targets.flat).sum())

    plain = _drawn_histogram(targets, cells, np.arange(500))
    # seeds 5-11: one chunk 0.008-0.020, the four together 0.013-0.022, plain rows 0.50-0.63
    assert gap(sum(drawn)) < gap(drawn[0]) + 0.01 and gap(sum(drawn)) < 0.05 * gap(plain)


SAMPLE = """
import json, sys
from dpforge.cli import main
sys.argv = ["dpforge", "sample", sys.argv[1], "-n", sys.argv[2], "-o", sys.argv[3], "--seed", "0"]
try:
    main()
except SystemExit as exc:
    if exc.code:
        raise
# VmHWM, not ru_maxrss: Linux carries the spawning process's peak into the child's ru_maxrss
# across exec (see tests/kinds/test_images_large.py).
hwm = next(line for line in open("/proc/self/status") if line.startswith("VmHWM:"))
print(json.dumps({"peak": int(hwm.split()[1]) * 1024}))
"""
MEMORY_BOUND = 1 << 30  # issue 44: 10^6 matched rows within 1 GB


@pytest.mark.slow
def test_a_million_matched_rows_stay_within_the_memory_bound(tmp_path):
    """The command line streams 10^6 matched rows of a small model in its own process, under
    1 GB at its peak (the demo's model: bench/results/memory/matched_sampling.md)."""
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(
        {
            "colour": rng.choice(["red", "green", "blue"], 400),
            "size": rng.choice(["s", "m", "l", "xl"], 400),
            "y": rng.choice(["no", "yes"], 400),
        }
    )
    schema = Schema(
        columns=(
            Column("colour", "categorical", categories=("red", "green", "blue")),
            Column("size", "categorical", categories=("s", "m", "l", "xl")),
            Column("y", "categorical", categories=("no", "yes")),
        ),
        label="y",
    )
    anchor = AnchorConfig(steps=30, batch_size=256, generator_hidden=(32,))
    synth = Synthesizer(schema, epsilon=3.0, seed=0, progress=False, anchor=anchor)
    synth.fit(frame).save(tmp_path / "model")
    out = tmp_path / "rows.csv"
    args = [sys.executable, "-c", SAMPLE, str(tmp_path / "model"), "1000000", str(out)]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    done = subprocess.run(args, capture_output=True, text=True, env=env, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    peak = json.loads(done.stdout.strip().splitlines()[-1])["peak"]
    assert peak < MEMORY_BOUND
    with open(out, "rb") as handle:
        assert (
            sum(chunk.count(b"\n") for chunk in iter(lambda: handle.read(1 << 20), b""))
            == 10**6 + 1
        )
