"""The many-runs audit on the package's DP-SGD parts and on deliberately broken ones."""

from __future__ import annotations

import numpy as np
import pytest
from broken_parts import BATCH_MEAN, NO_NOISE, shuffled_parts

from dpforge.audit.many_runs import ManyRunsConfig, many_runs_audit
from dpforge.errors import PrivacyError

# One full-batch step (q = 1) of 100 records, sigma = 1: the accountant claims ε = 2.32 at
# δ = 0.01. 1,000 runs per side keep each audit to a few seconds.
CONFIG = ManyRunsConfig(runs=1000, delta=1e-2)


def test_our_dp_sgd_step_stays_below_the_claim():
    result = many_runs_audit(CONFIG, np.random.default_rng(0))
    assert result.claimed_epsilon == pytest.approx(2.318, abs=1e-3)
    assert 0.5 < result.lower_bound <= result.claimed_epsilon  # the audit has some power
    assert not result.violated and result.parts == "dpforge"


@pytest.mark.parametrize("parts", [NO_NOISE, BATCH_MEAN, shuffled_parts(100)], ids=lambda p: p.name)
def test_broken_steps_are_caught(parts):
    result = many_runs_audit(CONFIG, np.random.default_rng(0), parts)
    assert result.violated, result.summary()
    assert "VIOLATED" in result.summary()


def test_settings_are_checked():
    with pytest.raises(PrivacyError, match="runs=10"):
        many_runs_audit(ManyRunsConfig(runs=10), np.random.default_rng(0))
