"""The many-runs audit of the releases that had none before issue 43.5.

Pair selection, DP bounds and categories, code histograms, date ranges, the record and person
counts, the k-rows-per-person scaling, a federated site's answer and GS-WGAN's sanitizer: each
runs through the package's real function with and without a canary; the audit must stay below
the claim on the package as it is and catch both planted defects of ``broken_releases`` on
every release.
"""

from __future__ import annotations

import numpy as np
import pytest
from broken_parts import planted
from broken_releases import MORE_RELEASE_DEFECTS

from dpforge.audit.release_targets_more import MORE_TARGETS
from dpforge.audit.release_targets_paths import PATH_TARGETS
from dpforge.audit.releases import RELEASES, ReleaseAuditConfig, release_audit

NEW = sorted({**MORE_TARGETS, **PATH_TARGETS})
SLOW = ("categories", "dates", "rows-per-person")  # 3-7 s per 2,000 runs a side
# At σ = 1 (issue 43.4): the GS-WGAN sanitizer's Gaussian event 2.318; discrete Gaussians (PLD)
# 2.364 (one), 3.782 (two: the bounds' histograms); zCDP events (float releases, a federated
# site's answers) 2.753 (the default).
CLAIMS = {"bounds": 3.782, "dates": 3.782, "gswgan-sanitizer": 2.318}
# The record and person counts, categories and code histograms are one discrete Gaussian (PLD):
# 2.364 at σ = 1; the person count at the budget rule's noise multiplier.
CLAIMS["record-count"] = CLAIMS["codes"] = CLAIMS["categories"] = 2.364
CLAIMS["pair-scores"] = 2.347  # 2 integer scores, discrete Gaussians of σ = √2
CLAIMS["person-count"] = 1.569


def _cases(targets):
    return [(t, d) for t in targets for d in MORE_RELEASE_DEFECTS[t]]


def test_every_new_release_is_offered_and_has_its_defects():
    assert set(NEW) <= set(RELEASES)
    assert set(MORE_RELEASE_DEFECTS) == set(NEW)


@pytest.mark.parametrize("target", NEW)
def test_each_release_stays_below_its_claim(target):
    result = release_audit(ReleaseAuditConfig(target=target, runs=1000), np.random.default_rng(0))
    assert result.claimed_epsilon == pytest.approx(CLAIMS.get(target, 2.753), abs=1e-3)
    assert not result.violated, result.summary()
    assert result.details["mean_shift"] > 0.25  # the canary is seen: the audit has power


@pytest.mark.parametrize(
    ("target", "defect"),
    _cases(sorted(set(NEW) - set(SLOW))),
    ids=lambda v: getattr(v, "name", v),
)
def test_planted_defects_are_caught(target, defect):
    with planted(defect):
        result = release_audit(
            ReleaseAuditConfig(target=target, runs=2000), np.random.default_rng(0), defect.name
        )
    assert result.violated, result.summary()


@pytest.mark.slow
@pytest.mark.parametrize(("target", "defect"), _cases(SLOW), ids=lambda v: getattr(v, "name", v))
def test_planted_defects_are_caught_on_the_slower_releases(target, defect):
    with planted(defect):
        result = release_audit(
            ReleaseAuditConfig(target=target, runs=2000), np.random.default_rng(0), defect.name
        )
    assert result.violated, result.summary()
