"""The many-runs audit of the discriminator step as training calls it (issue 20.7).

The method's own ``train_step`` runs, through the real ghost-norm clipping (DP-WGAN: the
gradient-penalty path), on a canary record and a few plain ones; the audit must stay below the
claim on the package as it is and catch each planted defect: the noise divided by 4, the clip
norm doubled under the same noise (sensitivity x 2), and for microbatches TF-Privacy's noise
sigma C where one record moves a clipped microbatch mean by 2C.
"""

from __future__ import annotations

import pytest
import torch
from broken_parts import STEP_DEFECTS, planted

from dpforge.audit.training_step import STEP_PATHS, StepAuditConfig, step_audit
from dpforge.errors import PrivacyError

# Every step path at q = 1, sigma = 1, delta = 1e-2: the claim is epsilon = 2.318.


@pytest.fixture(autouse=True)
def one_thread():
    """Small steps: threads only contend (2 shared cores)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.mark.parametrize("name", sorted(STEP_PATHS))
def test_the_real_step_stays_below_its_claim(name):
    config = StepAuditConfig(runs=1000, **STEP_PATHS[name])
    result = step_audit(config, torch.Generator().manual_seed(0))
    assert result.claimed_epsilon == pytest.approx(2.318, abs=1e-3)
    assert not result.violated, result.summary()
    assert result.details["mean_shift"] > 0.6  # the canary is seen: the audit has power


@pytest.mark.parametrize(
    ("name", "defect"),
    [(n, d) for n, defects in STEP_DEFECTS.items() for d in defects],
    ids=lambda v: getattr(v, "name", v),
)
def test_planted_defects_on_the_real_step_are_caught(name, defect):
    config = StepAuditConfig(runs=1500, **STEP_PATHS[name])
    with planted(defect):
        result = step_audit(config, torch.Generator().manual_seed(0), defect.name)
    assert result.violated, result.summary()


def test_settings_are_checked():
    with pytest.raises(PrivacyError, match="microbatches=2"):
        step_audit(StepAuditConfig(microbatches=2), torch.Generator())
    with pytest.raises(PrivacyError, match="microbatches=1"):
        step_audit(StepAuditConfig(method="dpwgan", microbatches=1), torch.Generator())
