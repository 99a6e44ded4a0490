"""Moment anchoring: the two releases (sensitivity, noise, exactness without noise), the rank
they support, their ledger entries, and the Gaussian generator built from them."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from dpforge.nets.gaussian import SubspaceGaussianGenerator
from dpforge.privacy.ledger import PrivacyLedger
from dpforge.statistics.array_anchor import plan_moments, set_gaussian
from dpforge.statistics.moments import (
    ClassMoments,
    Subspace,
    class_moments,
    gaussian_parameters,
    moment_sensitivity,
    principal_subspace,
    supported_rank,
)

C = 0.5  # count weight


def _records(n: int, rng: np.random.Generator, shape=(1, 4, 4)) -> tuple[np.ndarray, np.ndarray]:
    """Records in [-1, 1] with class-dependent means and a low-rank structure."""
    labels = rng.integers(0, 3, n)
    d = math.prod(shape)
    basis = rng.normal(size=(d, 3))
    x = np.tanh(0.3 * rng.normal(size=(n, 3)) @ basis.T + 0.5 * labels[:, None] - 0.5)
    return x.reshape(n, *shape), labels


def _upper(m: np.ndarray) -> np.ndarray:
    return m[np.triu_indices(m.shape[0])]


def test_without_noise_the_subspace_is_the_principal_one_and_the_mean_exact():
    x, _ = _records(400, np.random.default_rng(0))
    sub = principal_subspace(x, 3, 5, 0.0, C, np.random.default_rng(1))
    u = x.reshape(400, -1) / 4.0  # d = 16
    np.testing.assert_allclose(sub.mean, u.mean(axis=0), atol=1e-12)
    values, vectors = np.linalg.eigh(np.cov(u.T, bias=True))
    top = vectors[:, ::-1][:, :5]
    np.testing.assert_allclose(sub.basis @ sub.basis.T, top @ top.T, atol=1e-8)


def test_without_noise_the_gaussians_are_the_class_means_and_covariances():
    x, y = _records(600, np.random.default_rng(2))
    sub = principal_subspace(x, 3, 4, 0.0, C, np.random.default_rng(3))
    moments = class_moments(x, y, 3, sub, 0.0, C, np.random.default_rng(4))
    means, factors = gaussian_parameters(moments, floor=0.0)
    z = (x.reshape(600, -1) / 4.0) @ sub.basis
    for k in range(3):
        np.testing.assert_allclose(moments.counts[k], (y == k).sum())
        np.testing.assert_allclose(means[k], z[y == k].mean(axis=0), atol=1e-12)
        cov = np.cov(z[y == k].T, bias=True)
        np.testing.assert_allclose(factors[k] @ factors[k].T, cov, atol=1e-10)


@pytest.mark.parametrize("extreme", [True, False])
def test_one_record_moves_a_class_release_by_at_most_the_sensitivity(extreme):
    """Adding a record changes (upper triangle of sum z z^T, sum z, c * n) of its class by at
    most sqrt(2 + c^2); an all-ones record in the subspace's span reaches the bound."""
    rng = np.random.default_rng(5)
    x, y = _records(50, rng)
    sub = principal_subspace(x, 3, 4, 0.0, C, rng)
    new = np.ones((1, 1, 4, 4)) if extreme else rng.uniform(-1, 1, (1, 1, 4, 4))
    if extreme:  # a subspace that contains the all-ones direction: ||z|| = 1 exactly
        sub = Subspace(np.full((16, 1), 0.25), sub.mean)
    before = class_moments(x, y, 3, sub, 0.0, C, rng)
    after = class_moments(np.concatenate([x, new]), np.append(y, 1), 3, sub, 0.0, C, rng)
    change = np.concatenate([
        _upper(after.second[1] - before.second[1]),
        after.sums[1] - before.sums[1],
        [C * (after.counts[1] - before.counts[1])],
    ])  # fmt: skip
    bound = moment_sensitivity(C)
    assert np.linalg.norm(change) <= bound + 1e-12
    if extreme:
        assert np.linalg.norm(change) == pytest.approx(bound)
    for other in (0, 2):
        np.testing.assert_array_equal(after.second[other], before.second[other])


def test_the_noise_is_gaussian_with_the_calibrated_std_and_symmetric():
    x, y = _records(30, np.random.default_rng(6))
    sub = principal_subspace(x, 3, 3, 0.0, C, np.random.default_rng(7))
    exact = class_moments(x, y, 3, sub, 0.0, C, np.random.default_rng(8))
    sigma, draws = 1.7, 400
    rng = np.random.default_rng(9)
    noisy = [class_moments(x, y, 3, sub, sigma, C, rng) for _ in range(draws)]
    second = np.stack([m.second - exact.second for m in noisy])
    np.testing.assert_array_equal(second, np.swapaxes(second, 2, 3))
    upper = np.stack([_upper(s[k]) for s in second for k in range(3)]).ravel()
    sums = np.stack([m.sums - exact.sums for m in noisy]).ravel()
    counts = np.stack([C * (m.counts - exact.counts) for m in noisy]).ravel()
    std = sigma * moment_sensitivity(C)
    for sample in (upper, sums, counts):
        assert abs(sample.mean()) < 4 * std / math.sqrt(len(sample))
        # the sample std of n normals is within ~4/sqrt(2n) of the truth, relatively
        assert sample.std() == pytest.approx(std, rel=4 / math.sqrt(2 * len(sample)))


def test_a_release_run_draws_both_releases_on_the_grid_not_with_opendp(monkeypatch):
    from dpforge.privacy import release_noise

    calls = []
    real = release_noise.discrete_gaussian

    def spy(sigma: float, shape, rng):
        calls.append(sigma)
        return real(sigma, shape, rng)

    def refused(*args, **kwargs):
        raise AssertionError("a float release drawn by OpenDP or numpy's float Gaussian")

    monkeypatch.setattr(release_noise, "discrete_gaussian", spy)
    monkeypatch.setattr(release_noise, "_opendp_gaussian", refused)
    monkeypatch.setattr(release_noise.ReleaseGenerator, "normal", refused)
    monkeypatch.setattr(release_noise.ReleaseGenerator, "standard_normal", refused)
    x, y = _records(30, np.random.default_rng(6))
    rng = release_noise.noise_generator(None)
    sub = principal_subspace(x, 3, 3, 1.7, C, rng)
    class_moments(x, y, 3, sub, 1.7, C, rng)
    std = 1.7 * moment_sensitivity(C)
    assert calls and set(calls) == {std / release_noise.grid_step(std)}
    # every row of the two upper triangles, the sums and the counts: nothing drawn elsewhere
    assert len(calls) == 16 + 2 + 3 * sub.rank + 2


def test_the_rank_shrinks_with_the_noise_and_is_kept_without_it():
    values = 1.0 / np.arange(1, 41) ** 2
    assert supported_rank(values, 40, 0.0, 100.0) == 40
    ranks = [supported_rank(values, 40, std, 100.0) for std in (0.01, 0.1, 1.0, 100.0)]
    assert ranks == sorted(ranks, reverse=True) and ranks[0] > ranks[-1] == 1


def test_both_releases_are_in_the_ledger_before_they_run_and_reach_the_target():
    ledger = PrivacyLedger()
    sigma = plan_moments(10, (3.0, 1e-5), ledger)
    assert [e.name.split(":")[0] for e in ledger.entries] == ["anchor", "anchor"]
    assert ledger.report(1e-5).epsilon == pytest.approx(3.0, rel=1e-3)
    assert ledger.report(1e-5).epsilon <= 3.0 * (1 + 1e-9)
    assert sigma > 0
    free = PrivacyLedger()
    assert plan_moments(10, None, free) == 0.0
    assert math.isinf(free.report(1e-5).epsilon)


def test_releases_survive_a_json_round_trip():
    x, y = _records(40, np.random.default_rng(10))
    sub = principal_subspace(x, 3, 2, 1.0, C, np.random.default_rng(11))
    moments = class_moments(x, y, 3, sub, 1.0, C, np.random.default_rng(12))
    sub2, moments2 = Subspace.from_dict(sub.to_dict()), ClassMoments.from_dict(moments.to_dict())
    np.testing.assert_array_equal(sub2.basis, sub.basis)
    np.testing.assert_array_equal(moments2.second, moments.second)


def test_the_generator_samples_the_released_gaussians_and_pads_a_smaller_rank():
    x, y = _records(3000, np.random.default_rng(13))
    sub = principal_subspace(x, 3, 2, 0.0, C, np.random.default_rng(14))
    moments = class_moments(x, y, 3, sub, 0.0, C, np.random.default_rng(15))
    generator = SubspaceGaussianGenerator(5, 3, (1, 4, 4))  # latent 5 > rank 2
    set_gaussian(generator, sub, moments)
    labels = torch.full((20000,), 2)
    z = generator.sample_latent(20000, torch.Generator().manual_seed(0))
    out = generator(z, labels).detach().double().numpy().reshape(20000, -1)
    assert out.min() >= -1.0 and out.max() <= 1.0
    coords = (out / 4.0) @ sub.basis  # inside [-1, 1] the clamp is rarely active here
    means, _ = gaussian_parameters(moments)
    np.testing.assert_allclose(coords.mean(axis=0), means[2], atol=0.01)
    with pytest.raises(ValueError, match="exceeds the latent size"):
        set_gaussian(SubspaceGaussianGenerator(1, 3, (1, 4, 4)), sub, moments)
