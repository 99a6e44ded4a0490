"""One neighbouring relation (add/remove one record) and no exact size in a release.

The record count N is released once under DP (``measure.release_size``); q, the numeric cells,
the marginals' totals and the pair scores are sized by that release. These tests check the
convention where it matters: the pair scores' sensitivity measured by changing one record, and
two neighbouring tables giving model folders that differ only where a DP release differs.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from dpforge.statistics.anchor import AnchorConfig
from dpforge.statistics.marginals import CellColumn
from dpforge.statistics.selection import pair_scores
from dpforge.synthesizer import Synthesizer

DELTA = 1e-5


def _blocks(index: np.ndarray) -> dict[str, CellColumn]:
    return {
        "a": CellColumn(index[:, 0].astype(np.int32), 4),
        "b": CellColumn(index[:, 1].astype(np.int32), 3),
        "c": CellColumn(index[:, 2].astype(np.int32), 5),
    }


def test_one_record_moves_every_pair_score_by_at_most_one():
    rng = np.random.default_rng(0)
    shapes = {("a", "b"): (4, 3), ("a", "c"): (4, 5), ("b", "c"): (3, 5)}
    model = {p: rng.dirichlet(np.ones(int(np.prod(s)))).reshape(s) for p, s in shapes.items()}
    worst = 0.0
    for trial in range(300):
        index = np.column_stack([rng.integers(0, k, 60) for k in (4, 3, 5)])
        total = 60.0 + rng.normal(0, 5)  # the released count: the same for both neighbours
        removed = np.delete(index, trial % 60, axis=0)
        change = pair_scores(_blocks(index), model, total) - pair_scores(
            _blocks(removed), model, total
        )
        worst = max(worst, float(np.abs(change).max()))
    assert worst <= 1.0 + 1e-9
    assert worst > 0.9  # the bound is reached, not vacuous


def _folder(frame, schema, tmp_path, name):
    anchor = AnchorConfig(steps=20, batch_size=256)
    synth = Synthesizer(schema, epsilon=3.0, delta=DELTA, seed=0, progress=False, anchor=anchor)
    path = synth.fit(frame).save(tmp_path / name)
    return json.loads((path / "model.json").read_text())


def _differences(a, b, where=""):
    if isinstance(a, dict) and isinstance(b, dict):
        out = set()
        for key in set(a) | set(b):
            out |= _differences(a.get(key), b.get(key), f"{where}.{key}")
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        out = set()
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            out |= _differences(x, y, f"{where}[{i}]")
        return out
    return set() if a == b else {where}


@pytest.mark.slow
def test_neighbouring_tables_give_folders_that_differ_only_in_dp_releases(cancer, tmp_path):
    frame, schema = cancer
    one = _folder(frame, schema, tmp_path, "one")
    other = _folder(frame.iloc[1:].reset_index(drop=True), schema, tmp_path, "other")
    differing = {d for d in _differences(one, other) if not d.startswith(".versions")}
    # the cells are placed, and the mass inside each cell spread, by a DP release (the noisy
    # fine histograms)
    released = (".encoding.edges", ".encoding.cell_mass")
    # the stored marginals are the consistent estimate at the released count (their "total");
    # which pairs round 2 measured is the noisy selection's outcome (a DP release too)
    marginal = (".total", ".columns[0]", ".columns[1]", ".columns[2]", ".empty")
    totals = {d for d in differing if d.startswith(".release.marginals[") and d.endswith(marginal)}
    allowed = {d for d in differing if d.startswith(released)} | totals
    assert differing <= allowed, differing - allowed
    # a plan with no discriminator step records no sampling rate (nothing reads the count there)
    assert one["plan"]["sample_rate"] == other["plan"]["sample_rate"] == 0.0
    released_counts = []
    for folder in (one, other):
        stored = {m["total"] for m in folder["release"]["marginals"]}
        assert len(stored) == 1
        released_counts.append(stored.pop())
    # the same seed draws the same noise: the released counts differ by the one record
    assert released_counts[0] - released_counts[1] == pytest.approx(1.0)
    assert one["privacy"]["ledger"]["entries"][0]["name"].startswith("record count")
