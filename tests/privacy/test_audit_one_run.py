"""The one-run audit (gradient canaries in DP-CGAN's discriminator) on real records."""

from __future__ import annotations

import pytest
import torch
from broken_parts import BATCH_MEAN, NO_NOISE

from dpforge.audit.one_run import OneRunConfig, one_run_audit
from dpforge.errors import PrivacyError

# 569 breast-cancer records, q = 57/569, sigma = 1.5, 50 steps: the accountant claims ε = 2.535.
CONFIG = OneRunConfig(steps=50)


def test_our_discriminator_dp_sgd_stays_below_the_claim(cancer):
    frame, schema = cancer
    result = one_run_audit(frame, schema, CONFIG, torch.Generator().manual_seed(0))
    assert result.claimed_epsilon == pytest.approx(2.5349, abs=1e-3)
    assert result.details["records"] == 569 and result.details["rules"] == 10
    assert 0.0 < result.lower_bound <= result.claimed_epsilon  # some power, no violation
    assert result.details["correct"] > result.details["guesses_in"] // 2  # better than chance


@pytest.mark.parametrize("parts", [NO_NOISE, BATCH_MEAN], ids=lambda p: p.name)
def test_missing_noise_and_batch_mean_clipping_are_caught(cancer, parts):
    frame, schema = cancer
    result = one_run_audit(frame, schema, CONFIG, torch.Generator().manual_seed(0), parts)
    assert result.violated, result.summary()
    assert result.lower_bound > 4.0  # nearly every guess right


def test_settings_and_schema_are_checked(cancer):
    frame, schema = cancer
    with pytest.raises(PrivacyError, match="canaries=5"):
        one_run_audit(frame, schema, OneRunConfig(canaries=5), torch.Generator())
