"""The anchoring phases' batch follows the released N (issue 22, speed): planned values for a
few N, public inputs only, the ledger unchanged."""

from __future__ import annotations

from dataclasses import replace

import pandas as pd
import pytest

import dpforge
from anchor_tables import labelled_frame
from dpforge.kinds import table as table_kind
from dpforge.schema.table import Schema
from dpforge.statistics.anchor import AnchorConfig
from dpforge.statistics.phase_steps import BATCH_RANGE, BATCH_STEP, anchor_batch_size


def test_the_batch_is_the_released_count_rounded_up_within_its_range():
    default = AnchorConfig()
    assert anchor_batch_size(default, 100) == BATCH_RANGE[0] == 256
    assert anchor_batch_size(default, 502) == 512
    assert anchor_batch_size(default, 512) == 512
    assert anchor_batch_size(default, 512.3) == 512 + BATCH_STEP
    assert anchor_batch_size(default, 700) == 704
    assert anchor_batch_size(default, 1_000) == 1024
    assert anchor_batch_size(default, 30_162) == BATCH_RANGE[1] == 1024  # Adult: as before
    assert anchor_batch_size(default, -3.0) == 256  # a noisy N below 0 is still public
    assert anchor_batch_size(replace(default, batch_size=64), 30_000) == 64  # a number is kept


@pytest.fixture
def phases(monkeypatch) -> list[tuple[int, int]]:
    """(steps, batch) each anchoring phase was asked for; the phases run one step."""
    taken: list[tuple[int, int]] = []
    real = table_kind.train_anchor

    def record(generator, loss, n_classes, config, rng, **options):
        taken.append((config.steps, config.batch_size))
        return real(generator, loss, n_classes, config._replace(steps=1), rng, **options)

    monkeypatch.setattr(table_kind, "train_anchor", record)
    return taken


def _frame(n: int) -> tuple[pd.DataFrame, Schema]:
    return labelled_frame(n, 3)


def _fit(frame, schema, anchor=None):
    return dpforge.Synthesizer(
        schema, epsilon=1.0, delta=1e-5, seed=0, progress=False, anchor=anchor or AnchorConfig()
    ).fit(frame)


def test_the_phases_follow_the_released_count_not_the_records(phases):
    frame, schema = _frame(400)
    one = _fit(frame, schema)
    released = one.sample_release_.marginals[0].total  # the noisy N the rules read
    planned = anchor_batch_size(AnchorConfig(), released)
    assert [b for _, b in phases] == [planned] == [448]  # one phase, no scout
    assert [s for s, _ in phases] == [300]
    changed = frame.copy()
    changed.loc[:99, "a"] = "q"  # private values change, the number of records does not
    two = _fit(changed, schema)
    assert phases[1:] == phases[:1]  # the same steps and batch: they read no record
    assert one.ledger_.to_dict() == two.ledger_.to_dict()


def test_the_ledger_is_the_same_as_with_the_old_fixed_settings(phases):
    frame, schema = _frame(400)
    following = _fit(frame, schema)
    fixed = _fit(frame, schema, AnchorConfig(steps=300, batch_size=1024))
    assert phases == [(300, 448), (300, 1024)]
    assert following.ledger_.to_dict() == fixed.ledger_.to_dict()
