"""The many-runs audit of the releases a default fit makes (anchoring, metadata estimates).

Issue 20.7: the audits exercised a copy of DP-CGAN's step and none of the anchoring releases.
Here each release runs through the package's real measurement function with and without a
canary record; the audit must stay below the claim on the package as it is, and catch the two
planted defects (noise divided by 4, a sensitivity off by 2x) on every release.
"""

from __future__ import annotations

import numpy as np
import pytest
from broken_parts import NOISE_BY_4, RELEASE_DEFECTS, Defect, planted

from dpforge.audit.release_targets import TARGETS
from dpforge.audit.releases import ReleaseAuditConfig, release_audit
from dpforge.errors import PrivacyError

# sigma = 1 at delta = 1e-2: the label prior claims epsilon = 2.364 (one discrete Gaussian of
# σ = 1, PLD), the float releases 2.753 (one grid_event(1), the grid release of floats), the
# marginals and cells 2.321 (4 discrete Gaussians of σ = 2, PLD).
CLAIMS = {"label-prior": 2.364, "marginals": 2.321, "cells": 2.321}
FAST = ("marginals", "moments", "embedding")
RUNS = {"subspace": 60_000}  # its output hides the second moments: a weaker statistic (at
# 20,000 runs the sensitivity defect was caught on 1 seed of 3, by numpy or grid noise alike)
# Noise ÷ 4 moves the statistic 4 of its noise's standard deviations: at 500 runs a side the
# lower bound exceeded the claims (<= 2.753) on all 400 seeds of a Gaussian statistic of that
# shift (lowest 3.13), and at seed 0 by 0.7 to 2.0 (cells 3.96 / 2.32). The subspace's weaker
# statistic cleared its claim (2.753) by 0.18 at 500 runs and 0.11 at 2,000, but by 1.48 at
# 10,000 (4.23; seeds 1, 2: 4.53, 3.97; 60,000 took 85 CPU s). Sensitivity × 2 moves the
# statistic 2 sds: those keep RUNS.
NOISE_RUNS = {"subspace": 10_000}


def _runs(target: str, defect: Defect) -> int:
    """The runs a side that catch ``defect`` on ``target`` (see NOISE_RUNS)."""
    if defect.name == NOISE_BY_4:
        return NOISE_RUNS.get(target, 500)
    return RUNS.get(target, 2000)


def _cases(targets):
    return [(t, d) for t in targets for d in RELEASE_DEFECTS[t]]


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_each_release_stays_below_its_claim(target):
    config = ReleaseAuditConfig(target=target, runs=1000)
    result = release_audit(config, np.random.default_rng(0))
    assert result.claimed_epsilon == pytest.approx(CLAIMS.get(target, 2.753), abs=1e-3)
    assert not result.violated, result.summary()
    assert result.details["mean_shift"] > 0.4  # the canary is seen: the audit has power


@pytest.mark.parametrize(("target", "defect"), _cases(FAST), ids=lambda v: getattr(v, "name", v))
def test_planted_defects_are_caught(target, defect):
    config = ReleaseAuditConfig(target=target, runs=_runs(target, defect))
    with planted(defect):
        result = release_audit(config, np.random.default_rng(0), defect.name)
    assert result.violated, result.summary()


@pytest.mark.slow
@pytest.mark.parametrize(
    ("target", "defect"),
    _cases(sorted(set(TARGETS) - set(FAST))),
    ids=lambda v: getattr(v, "name", v),
)
def test_planted_defects_are_caught_on_the_slower_releases(target, defect):
    config = ReleaseAuditConfig(target=target, runs=_runs(target, defect))
    with planted(defect):
        result = release_audit(config, np.random.default_rng(0), defect.name)
    assert result.violated, result.summary()


def test_settings_are_checked():
    with pytest.raises(PrivacyError, match="target='sideways'"):
        release_audit(ReleaseAuditConfig(target="sideways"), np.random.default_rng(0))
