"""The noise of every statistical release (counts, histograms, scores, sums, embeddings).

Numpy's floating-point Gaussian can leak the value it was added to through the low-order bits
of its output (Mironov 2012). No release here adds it:

* Integer counts get the discrete Gaussian on the integers (:func:`noisy_counts`): OpenDP's
  exact sampler in a release run (no seed: the generator comes from :func:`noise_generator`
  with ``seed=None``), :func:`discrete_gaussian` on the run's generator in a seeded one.
* Float releases made here (sums, a search's score, embeddings, image moments:
  :func:`noisy_values`) are released on a fixed binary grid: each value x becomes
  γ (round(x / γ) + Z), Z an integer discrete Gaussian of parameter σ / γ drawn by the
  vectorised :func:`discrete_gaussian` (from a generator seeded by :mod:`secrets` in a
  release run, the run's own in a seeded one). The step γ (:func:`grid_step`) is a power of
  two set by σ alone, σ / γ in [2^40, 2^41): dividing by it is exact, and every output is an
  integer multiple of γ computed by one correctly rounded addition and an exact scaling, so no
  low-order bit carries the noise. It draws tens of millions of values a second, where
  OpenDP's float Gaussian draws about 14,000 (the 75 million of a 64x64x3 subspace took hours).
* Noise shares added at federated sites (:func:`noisy_shares`) stay OpenDP's floating-point
  safe Gaussian: their sum is accounted as a sum of continuous Gaussian shares, which a sum of
  discrete ones is not exactly.

Accounting. Integer counts drawn with the discrete Gaussian of parameter s, each moved by at
most Δ (a whole number) by one record or person, are recorded as what they are,
``DiscreteGaussianDpEvent(s, Δ)`` (:mod:`dpforge.privacy.discrete_gaussian`), one per count
that can move (:func:`count_event`, :func:`table_event`): the PLD accountant analyses it
tightly, so ledgers of such releases are reported and calibrated by PLD. Its (ε, δ) curve is
not bounded by the continuous Gaussian's (Canonne, Kamath and Steinke 2020), so a
``GaussianDpEvent`` would not be a valid record. A float release of L2 sensitivity Δ and noise
std σ (noise multiplier m = σ / Δ) on the grid releases integers round(x / γ) whose L2
distance between neighbours is at most Δ / γ + sqrt(N) (each rounding moves a value by at
most 1/2), for the N values of the release, with the multivariate discrete Gaussian of
parameter σ / γ: exactly (Δ + γ sqrt(N))² / (2 σ²)-zCDP (Canonne, Kamath and Steinke 2020,
Theorem 14). One release holds fewer than 2^40 values (8 TiB of float64), so
γ sqrt(N) / σ < 2^-40 · 2^20 = ``GRID_SLACK`` (2^-20) and the release is
(1/m + 2^-20)² / 2-zCDP: :func:`grid_event` records that ``ZCDpEvent``, ρ larger by a factor
(1 + 2^-20 m)² than the continuous Gaussian's (2e-6 at m = 1). Count tables whose person's
rows may fall in several cells, and noise added at federated sites (a sum of continuous
Gaussian shares), are exactly ``ZCDpEvent(1 / (2 m²))`` (:func:`release_event`). The RDP
accountant analyses zCDP, and a ledger holding one is reported by RDP. DP-SGD's per-step
noise stays ``torch.normal`` (:mod:`dpforge.privacy.noise`), as Opacus draws it outside its
secure mode.
"""

from __future__ import annotations

import functools
import math
import secrets

import dp_accounting
import numpy as np

from dpforge.privacy.discrete_gaussian import DiscreteGaussianDpEvent

_RHO_ROUNDING = 1.0 + 1e-12  # ρ rounded up: OpenDP's map rounds its ρ up in float arithmetic
_SIGMA_ROUNDING = 1.0 - 1e-12  # the recorded σ rounded down from the σ the noise is drawn at
GRID_BITS = 40  # σ / γ lies in [2^GRID_BITS, 2^(GRID_BITS + 1)) for the grid step γ
RELEASE_VALUES_BITS = 40  # one float release holds fewer than 2^40 values
GRID_SLACK = 2.0 ** (RELEASE_VALUES_BITS / 2 - GRID_BITS)  # γ sqrt(N) / σ: the rounding's Δ
_SMALLEST_STD = 2.0**-900  # keeps the grid step a normal float


class ReleaseGenerator(np.random.Generator):
    """The numpy generator of a release run (seeded from the operating system). Release noise
    drawn with it comes from OpenDP or from a fresh OS-seeded generator (float releases on
    the grid); its own draws serve only what is not noise (shuffles, cell placement)."""


def noise_generator(seed: int | None) -> np.random.Generator:
    """The numpy generator of one random stream of a run: ``np.random.default_rng(seed)`` for
    a seeded (reproducible) run, a :class:`ReleaseGenerator` seeded from the OS for a release
    run (``seed`` None), whose release noise OpenDP or OS entropy draws."""
    if seed is None:
        return ReleaseGenerator(np.random.PCG64(secrets.randbits(128)))
    return np.random.default_rng(seed)


def release_event(noise_multiplier: float) -> dp_accounting.DpEvent:
    """The ledger event of one release with noise multiplier σ (noise std / L2 sensitivity)
    drawn by OpenDP's float Gaussian (:func:`noisy_shares`) or as integer counts with a privacy
    unit: ``ZCDpEvent(1 / (2 σ²))`` (see the module docstring; float releases on the grid are
    :func:`grid_event`, counts :func:`count_event`); σ = 0 is non-private."""
    sigma = _checked_multiplier(noise_multiplier)
    if sigma == 0:
        return dp_accounting.NonPrivateDpEvent()
    return dp_accounting.ZCDpEvent(_RHO_ROUNDING / (2.0 * sigma * sigma))


def grid_event(noise_multiplier: float) -> dp_accounting.DpEvent:
    """The ledger event of one float release drawn by :func:`noisy_values` with noise
    multiplier σ: ``ZCDpEvent((1/σ + GRID_SLACK)² / 2)``, the zCDP of the discrete Gaussian on
    the grid with the rounding's extra sensitivity (module docstring); σ = 0 is non-private."""
    sigma = _checked_multiplier(noise_multiplier)
    if sigma == 0:
        return dp_accounting.NonPrivateDpEvent()
    return dp_accounting.ZCDpEvent(_RHO_ROUNDING * (1.0 / sigma + GRID_SLACK) ** 2 / 2.0)


def count_event(noise_multiplier: float, queries: int = 1, rows: int = 1) -> dp_accounting.DpEvent:
    """The ledger event of ``queries`` integer queries released together by
    :func:`noisy_counts`, each with discrete Gaussian noise of parameter
    ``noise_multiplier * rows * sqrt(queries)``, each moved by at most ``rows`` (a whole
    number) by one record or person: that many ``DiscreteGaussianDpEvent``; σ = 0 is
    non-private."""
    sigma = _checked_multiplier(noise_multiplier)
    if sigma == 0:
        return dp_accounting.NonPrivateDpEvent()
    if isinstance(queries, bool) or not isinstance(queries, int) or queries < 1:
        raise ValueError(f"queries must be a whole number >= 1, got {queries!r}")
    noise = sigma * rows * math.sqrt(queries) * _SIGMA_ROUNDING
    single = DiscreteGaussianDpEvent(noise, rows)
    return single if queries == 1 else dp_accounting.SelfComposedDpEvent(single, queries)


def table_event(
    noise_multiplier: float, tables: int, rows: int = 1, at_source: bool = False
) -> dp_accounting.DpEvent:
    """The ledger event of ``tables`` count tables released together, noise std
    ``noise_multiplier * rows * sqrt(tables)`` on each cell, where a record moves one cell of
    each table by one. One record (``rows`` 1) with the noise drawn here: one moved count a
    table, the :func:`count_event` of ``tables`` queries (the other cells do not move). A
    person's rows may fall in several cells, and noise added at the sites (``at_source``) is
    a sum of continuous Gaussian shares: both are the zCDP :func:`release_event`."""
    if rows == 1 and not at_source:
        return count_event(noise_multiplier, tables)
    return release_event(noise_multiplier)


def _checked_multiplier(noise_multiplier: float) -> float:
    sigma = float(noise_multiplier)
    if not (math.isfinite(sigma) and sigma >= 0):
        raise ValueError(f"noise multiplier must be a finite number >= 0, got {noise_multiplier}")
    return sigma


def noisy_counts(counts: np.ndarray, std: float, rng: np.random.Generator) -> np.ndarray:
    """``counts`` (whole numbers) plus discrete Gaussian noise of scale ``std`` on each entry,
    as float64 of the same shape; ``std`` 0 returns them unchanged. OpenDP draws it for a
    release run, :func:`discrete_gaussian` for a seeded one."""
    values = np.asarray(counts, dtype=np.float64)
    if std == 0:
        return values
    whole = np.rint(values)
    if not np.array_equal(whole, values):
        raise ValueError("noisy_counts adds integer noise to whole-number counts only")
    if isinstance(rng, ReleaseGenerator):
        noisy = _opendp_gaussian(float(std), int)(whole.astype(np.int64).ravel().tolist())
        return np.asarray(noisy, dtype=np.float64).reshape(values.shape)
    return whole + discrete_gaussian(float(std), values.shape, rng)


def noisy_values(values: np.ndarray | float, std: float, rng: np.random.Generator) -> np.ndarray:
    """``values`` (floats: sums, scores, embeddings, moments) released on the grid of
    :func:`grid_step` with discrete Gaussian noise of std ``std`` (module docstring), as
    float64 of the same shape; ``std`` 0 returns them unchanged. Z is drawn from a generator
    seeded by the OS in a release run, from ``rng`` in a seeded one."""
    array = np.asarray(values, dtype=np.float64)
    if std == 0:
        return array
    if not (math.isfinite(std) and std >= _SMALLEST_STD):
        raise ValueError(f"float release noise std must be finite and >= 2^-900, got {std}")
    step = grid_step(float(std))
    source = _os_generator() if isinstance(rng, ReleaseGenerator) else rng
    noise = discrete_gaussian(float(std) / step, array.shape, source)
    return (np.rint(array / step) + noise) * step  # exact: step is a power of two


def grid_step(std: float) -> float:
    """The grid γ of a float release with noise std ``std``: the power of two with
    σ / γ in [2^GRID_BITS, 2^(GRID_BITS + 1)), a function of the public σ only."""
    return math.ldexp(1.0, math.frexp(std)[1] - 1 - GRID_BITS)


def _os_generator() -> np.random.Generator:
    """A generator seeded from the operating system, for one release's noise."""
    return np.random.Generator(np.random.PCG64(secrets.randbits(128)))


def noisy_shares(values: np.ndarray | float, std: float, rng: np.random.Generator) -> np.ndarray:
    """``values`` plus a federated site's Gaussian noise share of std ``std``, as float64 of
    the same shape; ``std`` 0 returns them unchanged. OpenDP's floating-point-safe Gaussian
    draws it for a release run (the shares' sum is accounted as a continuous Gaussian's), the
    generator's normal distribution for a seeded one."""
    array = np.asarray(values, dtype=np.float64)
    if std == 0:
        return array
    if isinstance(rng, ReleaseGenerator):
        noisy = _opendp_gaussian(float(std), float)(array.ravel().tolist())
        return np.asarray(noisy, dtype=np.float64).reshape(array.shape)
    return array + rng.normal(0.0, std, array.shape)


@functools.lru_cache(maxsize=64)
def _opendp_gaussian(std: float, atom: type):
    """OpenDP's Gaussian measurement of scale ``std`` on vectors of ``atom`` (int: the
    discrete Gaussian; float: OpenDP's floating-point-safe Gaussian)."""
    import opendp.prelude as dp

    dp.enable_features("contrib")
    domain = dp.atom_domain(T=atom) if atom is int else dp.atom_domain(T=atom, nan=False)
    return dp.m.make_gaussian(dp.vector_domain(domain), dp.l2_distance(T=atom), scale=std)


def discrete_gaussian(sigma: float, shape: int | tuple, rng: np.random.Generator) -> np.ndarray:
    """Draws of the discrete Gaussian N_Z(0, σ²) (P[x] ∝ exp(-x² / 2σ²) on the integers) from
    a numpy generator: counts in seeded runs, and the grid noise of float releases
    (:func:`noisy_values`). Its acceptance test uses floating-point exp, which OpenDP's exact
    sampler does not: that perturbs the pmf by about 1e-16 relatively, and the draw is an
    integer, so no low-order float bit carries it. Canonne, Kamath and Steinke
    (2020), Algorithm 3, vectorised: discrete Laplace proposals of scale t = ⌊σ⌋ + 1, each
    accepted with probability exp(-(|y| - σ²/t)² / 2σ²)."""
    if not (math.isfinite(sigma) and sigma > 0):
        raise ValueError(f"sigma must be a finite number > 0, got {sigma}")
    size = int(np.prod(shape))
    t = math.floor(sigma) + 1
    p = -math.expm1(-1.0 / t)  # geometric success probability of the discrete Laplace
    out = np.empty(0, dtype=np.int64)
    while out.size < size:
        n = 2 * (size - out.size) + 16
        y = rng.geometric(p, n) - rng.geometric(p, n)  # discrete Laplace: P ∝ exp(-|y| / t)
        accept = rng.random(n) < np.exp(-((np.abs(y) - sigma * sigma / t) ** 2) / (2 * sigma**2))
        out = np.concatenate([out, y[accept]])
    return out[:size].reshape(shape).astype(np.float64)
