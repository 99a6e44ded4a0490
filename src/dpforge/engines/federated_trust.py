"""The two trust models of a federation, and the noise each site adds under them.

``local`` (the sites trust nobody): each site adds the full noise of a release to its own
answer and keeps its own ledger, which then holds exactly the central run's events (one record
is in one site, and the other sites' answers do not depend on it). The server sums the noisy
answers: the sum carries ``n_sites`` times the central noise variance.

``secagg`` (Flower's SecAgg+ secure aggregation): each site adds a share of variance
``sigma^2 / (n_sites - t)``; the server learns only the sum, whose noise has variance
``n_sites / (n_sites - t) * sigma^2 >= sigma^2``. Up to ``t`` sites may drop out or collude with
the server (they know, or withhold, their own shares) and the honest shares still sum to at
least the central sigma^2: the run's ledger holds. With ``k > t`` such sites the honest noise
has variance ``(n_sites - k) / (n_sites - t) * sigma^2``: every release's noise multiplier shrinks
by ``sqrt((n_sites - k) / (n_sites - t))`` (:meth:`Trust.degraded_factor`), down to one site's
own share, ``1 / sqrt(n_sites - t)``, when all others collude; each site's own ledger records that
worst case. SecAgg+ sums integers modulo 2^32: a share is put on a public fixed-point grid
(``grid``, a power of 2, :func:`secagg_grid`) before it leaves the site. The grid is sized so
that rounding changes neither the sensitivity nor the noise:

* ``grid <= 1``: an exact count is a multiple of the grid, so one record moves a rounded count
  by exactly 1, as the ledger says, and the rounded answer ``grid * rint((exact + noise) /
  grid)`` is a function of the Gaussian answer ``exact + noise`` (post-processing, of OpenDP's
  release in a release run: :func:`on_grid`); a pair score is rounded to the grid and its
  sensitivity grows by one grid step, which the site prices;
* ``grid <= share_std / NOISE_STEPS``: each site's noise share spans at least
  ``NOISE_STEPS`` grid steps, so rounding cannot erase it (the summed rounded shares carry the
  central variance; the distributed discrete Gaussian of Kairouz et al. 2021 is within a
  factor ``exp(-2 pi^2 NOISE_STEPS^2 / 2)`` of one Gaussian at that width).

The grid is ``2 clip / Q``: ``clip`` (a power of 2 above ``2 M + 12 share_std + 4``, M the
public ``--max-site-records``) holds every share, and Q, the quantization range, is at most
``2^31 / n`` so that the n quantized shares and Flower's weight factors sum within the
modulus. More sites mean a smaller Q and a coarser grid: beyond :func:`max_secagg_sites`
(256 sites at the default M = 2^20 when the share std is at least 8; fewer when it is smaller)
a secure sum is REFUSED, naming the limit; lower ``--max-site-records`` or use
``--trust local``. A site checks the grid it is sent against the same rule
(:meth:`Trust.check_grid`) and refuses a coarser one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np
from dp_accounting import GaussianDpEvent, NonPrivateDpEvent

from dpforge.errors import DataError, PrivacyError
from dpforge.privacy.ledger import PrivacyLedger
from dpforge.privacy.release_noise import noisy_shares, release_event

TRUST_MODELS = ("local", "secagg")
SCORE_SENSITIVITY = 2.0  # a site's pair score against the model scaled to its own size
NOISE_STEPS = 8.0  # a noise share spans at least this many grid steps
MODULUS_BITS = 31  # n quantized shares (and Flower's weight factors) stay below 2^31
MAX_QUANTIZATION_BITS = 30


@dataclass(frozen=True)
class Trust:
    """Who trusts whom: ``mode`` (local or secagg), the number of sites, and ``tolerate``
    (t: sites that may drop out or collude under secagg without weakening the guarantee)."""

    mode: str
    n_sites: int
    tolerate: int = 0

    def __post_init__(self) -> None:
        if self.mode not in TRUST_MODELS:
            raise PrivacyError(f"trust must be one of {TRUST_MODELS}, got {self.mode!r}")
        if self.n_sites < 2:
            raise PrivacyError(f"a federation needs at least 2 sites, got {self.n_sites}")
        if self.mode == "secagg" and self.n_sites < 3:
            raise PrivacyError("Flower's SecAgg+ needs at least 3 sites: use --trust local")
        if self.mode == "secagg" and not 0 <= self.tolerate <= self.n_sites - 2:
            raise PrivacyError(
                f"--tolerate must be between 0 and {self.n_sites - 2} for {self.n_sites} sites "
                f"(SecAgg+ needs at least 2 honest sites), got {self.tolerate}"
            )

    @property
    def share_fraction(self) -> float:
        """A site's noise std, as a fraction of the central std of the release."""
        return 1.0 if self.mode == "local" else 1.0 / math.sqrt(self.n_sites - self.tolerate)

    @property
    def noise_factor(self) -> float:
        """The std of the summed noise, as a multiple of the central std."""
        return math.sqrt(self.n_sites) * self.share_fraction

    def degraded_factor(self, colluding: int) -> float:
        """The central noise multiplier's factor left when ``colluding`` sites (dropped out or
        colluding with the server) take their shares out: 1 up to ``tolerate`` (local: always
        1, each site's noise is full)."""
        if self.mode == "local" or colluding <= self.tolerate:
            return 1.0
        honest = self.n_sites - min(colluding, self.n_sites - 1)
        return math.sqrt(honest / (self.n_sites - self.tolerate))

    def key(self) -> list:
        """What a query carries so that a site can refuse a server whose model differs."""
        return [self.mode, self.n_sites, self.tolerate]

    def check_grid(self, grid: float, std: float) -> None:
        """Refuse a SecAgg grid that would change the sensitivity or round the noise away:
        ``grid`` must be a power of 2, at most 1 (counts stay exact) and at most this site's
        noise share std / ``NOISE_STEPS`` (``std``: the release's central std). A function of
        public inputs only."""
        if not (math.isfinite(grid) and grid > 0 and math.log2(grid).is_integer()):
            raise PrivacyError(f"the SecAgg grid must be a power of 2, got {grid}; refused")
        share = std * self.share_fraction
        if grid > 1.0 or (share > 0 and grid * NOISE_STEPS > share):
            raise PrivacyError(
                f"the SecAgg grid {grid:g} is coarser than this site allows (at most 1 and "
                f"1/{NOISE_STEPS:g} of its noise share std {share:.3g}): rounding would change "
                "the sensitivity or erase the noise; refused"
            )

    def score_sensitivity(self, grid: float | None) -> float:
        """A site's pair score moves by at most 2 per record, one grid step more once rounded."""
        return SCORE_SENSITIVITY + (grid or 0.0)

    def statement(self) -> str:
        """The trust model, as the ledger and docs/federated.md state it."""
        if self.mode == "local":
            return (
                f"federated, {self.n_sites} sites, trust local: each site adds the full noise "
                "and keeps its own ledger (the same events); the server sees only noisy answers"
            )
        return (
            f"federated, {self.n_sites} sites, trust secagg (Flower SecAgg+): each site adds "
            f"a noise share of variance sigma^2/{self.n_sites - self.tolerate}; the server sees "
            f"only the sum; this ledger holds while at most t = {self.tolerate} sites drop out "
            "or collude with the server; beyond, each noise multiplier shrinks by "
            f"sqrt((n - k)/(n - t)), to 1/sqrt({self.n_sites - self.tolerate}) at worst"
        )

    # ------------------------------------------------------------------ at a site
    def noisy(self, exact, std, l2, grid, ledger: PrivacyLedger, what: str, rng):
        """``exact`` plus this site's share of a release whose central std is ``std`` (L2
        sensitivity ``l2``), drawn by :func:`noisy_shares` (OpenDP's Gaussian when ``rng`` is
        a release run's); its zCDP event is recorded in the site's ledger first."""
        if self.mode == "secagg":  # before anything is recorded: a public refusal
            self.check_grid(float(grid), std)
        share = std * self.share_fraction
        ledger.record(f"site: {what}", release_event(share / l2))
        if self.mode == "local":
            return noisy_shares(exact, share, rng)
        return on_grid(exact, share, float(grid), rng)

    def record_threshold(self, ledger: PrivacyLedger, what: str, std: float, threshold: float):
        """The thresholded histogram's event (always full noise, at the site)."""
        if std <= 0:
            ledger.record(f"site: {what}", NonPrivateDpEvent())
            return
        extra = 1.0 - NormalDist().cdf((threshold - 1.0) / std)
        ledger.record(f"site: {what}", release_event(std), extra)


def secagg_grid(trust: Trust, std: float, max_site_records: int) -> tuple[float, float, int]:
    """(grid, clipping range, quantization range) of a secure sum whose central noise std is
    ``std``: every share lies within the clipping range (a site's count is at most
    ``max_site_records``, a score at most twice that, the share's noise within 12 std), the n
    shares' sum within the modulus, and the grid ``2 clip / quantization`` (a power of 2)
    obeys :meth:`Trust.check_grid`. Refused, naming the limit, where no such grid exists."""
    share = std * trust.share_fraction
    bound = 2.0 * max_site_records + 12.0 * share + 4.0
    clip = 2.0 ** math.ceil(math.log2(bound))
    quantization = 2 ** _quantization_bits(trust.n_sites)
    grid = 2.0 * clip / quantization
    try:
        trust.check_grid(grid, std)
    except PrivacyError:
        most = max_secagg_sites(max_site_records, share)
        raise PrivacyError(
            f"secure aggregation over {trust.n_sites} sites cannot keep the sensitivity and the "
            f"noise exact: with --max-site-records {max_site_records} and a noise share std "
            f"{share:.3g}, SecAgg+ serves at most {most} sites (grid {grid:g}); lower "
            "--max-site-records, use fewer sites, or --trust local"
        ) from None
    return grid, clip, quantization


def _quantization_bits(n_sites: int) -> int:
    return min(MAX_QUANTIZATION_BITS, MODULUS_BITS - math.ceil(math.log2(n_sites)))


def max_secagg_sites(max_site_records: int, share_std: float) -> int:
    """The most sites a secure sum serves exactly (:func:`secagg_grid`'s rule) when one site
    holds at most ``max_site_records`` records and adds a noise share of std ``share_std``
    (taken as fixed; 0 when even 3 sites cannot be served)."""
    bound = 2.0 * max_site_records + 12.0 * share_std + 4.0
    clip = 2.0 ** math.ceil(math.log2(bound))
    finest = min(1.0, share_std / NOISE_STEPS) if share_std > 0 else 1.0
    # grid = 2 clip / 2^bits <= finest  <=>  bits >= log2(2 clip / finest)
    bits = math.ceil(math.log2(2.0 * clip / finest))
    if bits > MAX_QUANTIZATION_BITS:
        return 0
    most = 2 ** (MODULUS_BITS - bits)  # ceil(log2 n) <= 31 - bits
    return most if most >= 3 else 0


def on_grid(exact, share: float, grid: float, rng: np.random.Generator) -> np.ndarray:
    """The exact value rounded to the grid (counts are on it already), released with Gaussian
    noise of std ``share`` (:func:`noisy_shares`) and rounded to the grid again: a multiple of
    ``grid`` that SecAgg+ sums exactly, and a function of that release (post-processing)."""
    if not (grid > 0 and math.log2(grid).is_integer()):
        raise PrivacyError(f"the SecAgg grid must be a power of 2, got {grid}")
    on = np.rint(np.asarray(exact, dtype=np.float64) / grid) * grid
    return np.rint(noisy_shares(on, share, rng) / grid) * grid


def check_range(values: np.ndarray, clip: float, what: str) -> None:
    """Refuse a share outside SecAgg+'s range (it would be clipped): the site's data are
    larger than the declared public bound."""
    if np.any(np.abs(values) >= clip):
        raise DataError(
            f"{what}: a secure-aggregation share is outside the range set by --max-site-records;"
            " raise it (a public bound on the records of any one site)"
        )


def degraded_epsilons(ledger: PrivacyLedger, trust: Trust, delta: float) -> dict[int, float]:
    """The run's epsilon when ``k`` sites (t < k < n) drop out or collude under secagg: every
    Gaussian release's noise multiplier times :meth:`Trust.degraded_factor` (the accountant's
    epsilon of the scaled ledger). Empty under local trust (nothing degrades)."""
    if trust.mode == "local":
        return {}
    out = {}
    for k in range(trust.tolerate + 1, trust.n_sites):
        factor = trust.degraded_factor(k)
        scaled = PrivacyLedger()
        for entry in ledger.entries:  # categories: thresholded at each site at full noise
            full = entry.name.startswith("metadata: categories")
            event = entry.event if full else _scaled(entry.event, factor)
            scaled.record(entry.name, event, entry.extra_delta)
        out[k] = scaled.epsilon(delta)
    return out


def _scaled(event, factor: float):
    """``event`` with every Gaussian noise multiplier times ``factor`` (a zCDP release's ρ
    divided by its square)."""
    from dp_accounting import ComposedDpEvent, SelfComposedDpEvent, ZCDpEvent

    if isinstance(event, GaussianDpEvent):
        return GaussianDpEvent(event.noise_multiplier * factor)
    if isinstance(event, ZCDpEvent):
        return ZCDpEvent(event.rho / factor**2, event.xi)
    if isinstance(event, ComposedDpEvent):
        return ComposedDpEvent([_scaled(e, factor) for e in event.events])
    if isinstance(event, SelfComposedDpEvent):
        return SelfComposedDpEvent(_scaled(event.event, factor), event.count)
    return event
