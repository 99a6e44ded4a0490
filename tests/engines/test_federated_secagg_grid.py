"""SecAgg+'s fixed-point grid at scale (issue 43.3): pure arithmetic, no Flower run.

At every site count a secure sum either keeps both the sensitivity and the noise exact (one
record moves a site's rounded count by exactly 1, as the ledger says; the noise shares are
not rounded away: the summed rounded shares carry the central std) or is refused, naming the
limit. Today's defect: 257 sites gave a grid of 2, 513 and 1,000 sites a grid of 4, and at
1,000 sites the summed noise std was 0.49 against a central 14.15.
"""

from __future__ import annotations

import numpy as np
import pytest

from dpforge.engines.federated_trust import (
    NOISE_STEPS,
    Trust,
    max_secagg_sites,
    on_grid,
    secagg_grid,
)
from dpforge.errors import PrivacyError

CENTRAL_STD = 14.15  # the central std of a count


def _served_exactly(trust: Trust, std: float, most: int) -> None:
    grid, clip, quantization = secagg_grid(trust, std, most)
    share = std * trust.share_fraction
    assert grid <= 1.0 and grid * NOISE_STEPS <= share
    assert trust.n_sites * quantization <= 2**31 and 2 * clip / quantization == grid
    counts = np.random.default_rng(0).integers(0, most, size=(trust.n_sites, 400)).astype(float)
    rounded = on_grid(counts, share, grid, np.random.default_rng(1))
    moved = on_grid(counts + 1.0, share, grid, np.random.default_rng(1)) - rounded  # same draws
    np.testing.assert_array_equal(moved, 1.0)  # one record: exactly 1, as the ledger says
    summed_noise = rounded.sum(axis=0) - counts.sum(axis=0)
    central = std * trust.noise_factor  # n / (n - t) times the central variance
    assert abs(summed_noise.std() / central - 1) < 0.1  # 400 draws: sd of the ratio ~0.035


@pytest.mark.parametrize("sites", [257, 513, 1000])
def test_the_default_bound_is_refused_beyond_the_sites_it_serves(sites):
    trust = Trust("secagg", sites, 1)
    with pytest.raises(PrivacyError, match=r"serves at most \d+ sites"):
        secagg_grid(trust, CENTRAL_STD, 2**20)  # the default --max-site-records


@pytest.mark.parametrize("sites", [257, 513, 1000])
def test_a_lower_bound_serves_these_sites_with_exact_sensitivity_and_noise(sites):
    trust = Trust("secagg", sites, 1)
    share = CENTRAL_STD * trust.share_fraction
    most = 2**20
    while max_secagg_sites(most, share) < sites:  # the largest bound that serves them
        most //= 2
    assert most >= 2**10  # still a useful bound
    _served_exactly(trust, CENTRAL_STD, most)
    with pytest.raises(PrivacyError, match="serves at most"):
        secagg_grid(trust, CENTRAL_STD, 4 * most)


def test_the_limit_is_the_one_documented():
    assert max_secagg_sites(2**20, NOISE_STEPS) == 256  # the module notes' figure
    _served_exactly(Trust("secagg", 256, 1), 8.0 * 16, 2**20)


def test_a_site_refuses_a_grid_that_would_change_sensitivity_or_noise():
    trust = Trust("secagg", 10, 1)
    trust.check_grid(2.0**-4, 3.0 * 3)  # share std 3: 1/16 is fine
    for coarse in (2.0, 1.0):  # counts no longer exact / noise share 3 < 8 steps of 1
        with pytest.raises(PrivacyError, match="coarser than this site allows"):
            trust.check_grid(coarse, 3.0 * 3)
    with pytest.raises(PrivacyError, match="power of 2"):
        trust.check_grid(0.3, 3.0 * 3)
