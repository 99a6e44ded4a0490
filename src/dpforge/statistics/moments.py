"""DP per-class moments of images in a DP principal subspace: the statistic of the "gaussian"
generator (in the spirit of P3GM's first phase, Takagi et al., ICDE 2021).

Two Gaussian-mechanism releases, each one event in the ledger, no clipping anywhere:

1. **The subspace.** A record ``x`` in [-1, 1]^d, scaled to ``u = x / sqrt(d)``, has norm at most
   1, so its second moment ``u u^T`` has Frobenius norm at most 1. The release is (the upper
   triangle of ``sum u u^T``, ``sum u``, ``c * n``): L2 sensitivity ``sqrt(1 + 1 + c^2)`` under
   adding or removing one record. The top ``rank`` eigenvectors of the noisy centred second
   moment span the subspace (post-processing); the noisy mean gives the offset.
2. **The per-class moments.** Coordinates ``z = V^T u`` in that subspace (norm at most 1 again,
   since V is orthonormal): per class the sums of ``z``, of ``z z^T`` (upper triangle) and
   ``c * n_k``. One record changes one class's block, by at most ``sqrt(1 + 1 + c^2)``.

Both are float sums, released by :func:`dpforge.privacy.release_noise.noisy_values` on a
power-of-two grid with discrete Gaussian noise (OS-seeded in a release run, the run's generator
in a seeded one; floating-point safe) and recorded as their zCDP, the grid's rounding included
(:func:`dpforge.statistics.array_anchor.plan_gaussian_releases`). The grid sampler draws
millions of values a second: on one shared core a release run's subspace of 28x28 images
(307,000 values) takes about 0.2 s, that of 64x64x3 images (75 million) about 8 minutes, 28 s
of it the noise and the rest the eigendecomposition; OpenDP's float Gaussian, at 6,000-14,000
values a second, took 25-58 s and about 3.3 hours.

Everything the generator is built from (:func:`gaussian_parameters`) reads only the releases.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import scipy.linalg

from dpforge.privacy.release_noise import noisy_values

__all__ = [
    "ClassMoments",
    "Subspace",
    "class_moments",
    "gaussian_parameters",
    "moment_sensitivity",
    "principal_subspace",
]


# Chosen on scikit-learn's 8x8 digits (public, shipped offline) at epsilon 10: rank 10 (the
# variance of direction 10 is 0.38 times the noise term) beat ranks 3, 5, 20 and 40 there;
# on MNIST it keeps about 30 of 40 directions at epsilon 1 (bench/results/images/moments.md).
RANK_MARGIN = 0.25


def moment_sensitivity(count_weight: float) -> float:
    """L2 sensitivity of (sum of u u^T (upper triangle), sum of u, c * n) for ||u|| <= 1."""
    return math.sqrt(2.0 + count_weight**2)


def _scaled(x: np.ndarray) -> np.ndarray:
    """Records (n, ...) in [-1, 1] as rows of norm <= 1: flattened and divided by sqrt(d)."""
    flat = np.asarray(x, dtype=np.float64).reshape(len(x), -1)
    return flat / math.sqrt(flat.shape[1])


def _noise_symmetric(matrix: np.ndarray, std: float, rng: np.random.Generator) -> None:
    """Release the symmetric ``matrix`` in place: its upper triangle (diagonal included) with
    i.i.d. noise of std ``std`` on the grid (:func:`noisy_values`), mirrored below. Row by
    row, so that at most one row of noise is alive besides it: the second moment of a 64x64x3
    image is 12,288 square."""
    for row in range(len(matrix)):
        matrix[row, row:] = noisy_values(matrix[row, row:], std, rng)
        matrix[row + 1 :, row] = matrix[row, row + 1 :]


@dataclass(frozen=True)
class Subspace:
    """The released subspace: orthonormal ``basis`` (d, rank) and the noisy mean (d,) of u."""

    basis: np.ndarray
    mean: np.ndarray

    @property
    def rank(self) -> int:
        return self.basis.shape[1]

    def to_dict(self) -> dict:
        return {"basis": self.basis.tolist(), "mean": self.mean.tolist()}

    @classmethod
    def from_dict(cls, d: dict) -> Subspace:
        return cls(
            np.asarray(d["basis"], dtype=np.float64), np.asarray(d["mean"], dtype=np.float64)
        )


def principal_subspace(
    x: np.ndarray,
    n_classes: int,
    rank: int,
    noise_multiplier: float,
    count_weight: float,
    rng: np.random.Generator,
) -> Subspace:
    """Release 1: the mean of the scaled records and their top principal directions, as many
    as the noise of release 2 leaves worth having (:func:`supported_rank`), at most ``rank``.

    Memory: the records in blocks of :func:`chunk_rows`, and about three d x d matrices
    (:mod:`dpforge.statistics.image_sizes` plans them from the shape)."""
    n = len(x)
    dim = int(np.prod(np.shape(x)[1:]))
    if not 1 <= rank <= dim:
        raise ValueError(f"subspace rank must be in [1, {dim}], got {rank}")
    second, total = np.zeros((dim, dim)), np.zeros(dim)
    step = chunk_rows(dim)
    for start in range(0, n, step):
        u = _scaled(x[start : start + step])
        second += u.T @ u
        total += u.sum(axis=0)
    std = noise_multiplier * moment_sensitivity(count_weight)
    count = count_weight * n
    if std:
        _noise_symmetric(second, std, rng)
        total = noisy_values(total, std, rng)
        count = float(noisy_values(count, std, rng))
    count = max(count / count_weight, 1.0)
    mean = total / count
    second /= count
    second -= np.outer(mean, mean)  # the centred second moment (symmetric)
    values, vectors = _top_eigenpairs(second, rank)
    kept = supported_rank(values, rank, std, count / max(1, n_classes))
    return Subspace(vectors[:, :kept].copy(), mean)


CHUNK_BYTES = 32 * 2**20  # records scaled in float64 at a time


def chunk_rows(dim: int) -> int:
    """How many records of ``dim`` values are scaled at a time (``CHUNK_BYTES`` of float64)."""
    return max(1, CHUNK_BYTES // (8 * dim))


def _top_eigenpairs(matrix: np.ndarray, rank: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``rank`` largest eigenvalues (descending) and their eigenvectors of the symmetric
    ``matrix`` (read from its lower triangle; overwritten). Only those are computed, which
    halves the time of a 4,096-square matrix."""
    dim = len(matrix)
    values, vectors = scipy.linalg.eigh(
        matrix, subset_by_index=(dim - rank, dim - 1), overwrite_a=True, check_finite=False
    )
    return values[::-1], vectors[:, ::-1]


def supported_rank(values: np.ndarray, rank: int, std: float, class_count: float) -> int:
    """The largest ``r <= rank`` whose r-th variance (``values``, descending, from release 1)
    is at least ``RANK_MARGIN * sqrt(r) * std / n_k``, a multiple of the noise a class
    covariance of size r carries in release 2 for a class of ``n_k`` records (whose spectral
    norm is about ``2 sqrt(r) std / n_k``). Post-processing of release 1 and public settings.
    At least 1; ``rank`` itself without noise."""
    if std == 0:
        return rank
    r = 1
    for candidate in range(1, rank + 1):
        floor = RANK_MARGIN * math.sqrt(candidate) * std / max(class_count, 1.0)
        if values[candidate - 1] >= floor:
            r = candidate
    return r


@dataclass(frozen=True)
class ClassMoments:
    """Release 2: per-class noisy sums of z (K, r), of z z^T (K, r, r) and the counts (K,)."""

    sums: np.ndarray
    second: np.ndarray
    counts: np.ndarray  # already divided by count_weight: estimates of the class counts

    def to_dict(self) -> dict:
        return {
            "sums": self.sums.tolist(),
            "second": self.second.tolist(),
            "counts": self.counts.tolist(),
        }

    @classmethod
    def from_dict(cls, d: dict) -> ClassMoments:
        return cls(*(np.asarray(d[k], dtype=np.float64) for k in ("sums", "second", "counts")))


def class_moments(
    x: np.ndarray,
    labels: np.ndarray | None,
    n_classes: int,
    subspace: Subspace,
    noise_multiplier: float,
    count_weight: float,
    rng: np.random.Generator,
) -> ClassMoments:
    """Release 2 on records ``x`` in [-1, 1] with integer ``labels`` (None: one class)."""
    k, r = max(1, n_classes), subspace.rank
    y = np.zeros(len(x), dtype=np.int64) if labels is None else np.asarray(labels)
    step = chunk_rows(subspace.basis.shape[0])
    z = np.concatenate(
        [_scaled(x[i : i + step]) @ subspace.basis for i in range(0, len(x), step)]
    ).reshape(len(x), r)
    sums = np.zeros((k, r))
    np.add.at(sums, y, z)
    second = np.stack([z[y == c].T @ z[y == c] for c in range(k)])
    counts = count_weight * np.bincount(y, minlength=k).astype(np.float64)
    std = noise_multiplier * moment_sensitivity(count_weight)
    if std:
        sums = noisy_values(sums, std, rng)
        for block in second:
            _noise_symmetric(block, std, rng)
        counts = noisy_values(counts, std, rng)
    return ClassMoments(sums, second, counts / count_weight)


def gaussian_parameters(
    moments: ClassMoments, floor: float = 1e-6, min_count: float = 10.0
) -> tuple[np.ndarray, np.ndarray]:
    """Per-class means (K, r) and lower Cholesky factors (K, r, r) of the covariances.

    Post-processing: covariance = E[z z^T] - m m^T from the noisy moments, made positive
    definite by raising its eigenvalues to ``floor`` (noise can make them negative).
    """
    counts = np.maximum(moments.counts, min_count)
    means = moments.sums / counts[:, None]
    factors = []
    for mean, second, n in zip(means, moments.second, counts, strict=True):
        cov = second / n - np.outer(mean, mean)
        values, vectors = np.linalg.eigh((cov + cov.T) / 2)
        values = np.maximum(values, floor)
        factors.append(np.linalg.cholesky((vectors * values) @ vectors.T))
    return means, np.stack(factors)
