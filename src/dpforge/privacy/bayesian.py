"""Bayesian differential privacy (Triastcyn & Faltings, ICML 2020): a data-dependent bound.

What it is
----------
(ε_μ, δ_μ)-Bayesian DP bounds the privacy loss of a record drawn from the data distribution μ,
not of the worst possible record: Pr[L(w, D, D') ≥ ε_μ] ≤ δ_μ, the probability taken over the
mechanism's output w AND the differing record x' ~ μ (paper, Definition 1). It is estimated from
the gradients the training actually produced, holds only with a confidence 1 - γ over that
estimate, and is reported NEXT TO the worst-case DP ε, never instead of it.

The mechanism is DP-SGD's subsampled Gaussian: per-example gradients clipped to C, summed over a
Poisson batch (rate q), plus N(0, σ²C²). The accountant is fed, at each step, the distances
d = ‖g_i - g_j‖ between clipped per-example gradients of pairs of records drawn from the
training distribution (:func:`pair_distances` builds them from disjoint pairs).

Equations (paper numbering as far as it could be checked: the paper text was not at hand when
this was written; every formula below was checked against the authors' released code,
``bayesian_privacy_accountant.py`` and ``scaled_renyi.py``)
---------------------------------------------------------------------------------------------
* Privacy cost of step t at moment λ (Eqs. 6-7): c_t(λ) = max{c_t^L(λ), c_t^R(λ)} with
  c_t^L(λ) = log E_x[exp(λ D_{λ+1}(p_t(w|D) ‖ p_t(w|D')))] and c_t^R the reverse divergence.
* Subsampled Gaussian (Theorem 3): c_t^L(λ) = log E_x E_{k~Bin(λ+1, q)}[exp((k² - k) d² /
  (2σ²C²))] — per pair, this is the Rényi moment A_{λ+1} of the pair ((1-q)N(0) + qN(d), N(0)).
* Composition and conversion (Theorems 1-2): log Pr[L ≥ ε_μ] ≤ Σ_t c_t(λ) - λ ε_μ, so
  ε_μ = min_λ (Σ_t c_t(λ) - log δ_μ) / λ.
* Estimation (section 4.2): E_x[·] is the mean of m Monte Carlo samples (one per pair) raised
  to a one-sided Student-t upper confidence bound: mean + t_{1-γ', m-1} · s / √m.

Choices and deviations from the paper and the authors' code
------------------------------------------------------------
* c_t^R: for every distance d the reverse divergence of the two-point pair is at most the
  forward one (Mironov, Talwar, Zhang 2019: B_α ≤ A_α for the sampled Gaussian), so c_t = c_t^L,
  as in the authors' released code (which evaluates the same expression for both directions).
* Hölder correction (authors' code, ``holder_correction``): the same record x' takes part in all
  T steps, so E_x[Π_t Y_t] is bounded by Π_t E_x[Y_t^T]^{1/T}; each step's cost is
  c_t(λ) = (1/T) log UCB(E_x[exp(T · ℓ(λ))]) with ℓ the per-pair log moment. T is
  ``total_steps``, declared up front (an upper bound is fine); observing more steps raises.
* Confidence: the authors' code multiplies per-step confidences (default 1 - 1e-16 per step)
  and folds the failure probability into δ. Here ``confidence`` = 1 - γ is for the whole run:
  each step's bound is taken at level 1 - γ/T (union bound, no independence assumption), and
  γ is reported next to δ_μ, not inside it. Ask for 1 - 1e-9 or so for the authors' rigour.
* Moments: Rényi orders α = λ + 1 are integers (the binomial expectation needs integer λ + 1).

Caveats
-------
* The Student-t bound is asymptotic; exp(T·ℓ) samples are skewed, so coverage can be below
  1 - γ with few pairs. Use tens to hundreds of disjoint pairs per step.
* The estimate grows when all distances are scaled up or the largest one grows, but it is not
  monotone in each distance: raising small distances towards the others lowers the sample
  spread and hence the confidence term.
* Pairwise distances are the paper's model of neighbours (two records from μ). For a
  Poisson-sampled SUM, replacing x by x' gives the three-point pair ((1-q)N(0) + qN(g_x),
  (1-q)N(0) + qN(g_x')), whose Rényi moment also depends on where g_x, g_x' sit relative to 0
  and can exceed the two-point A_{λ+1}(‖g_x - g_x'‖) by a few percent at low orders (e.g.
  q = 0.05, ‖g_x‖ = ‖g_x'‖ = d = 0.5σC, order 2: 1.000736 vs 1.000710). For add/remove
  neighbours the exact input is the norm ‖g_x'‖ (distance to the zero vector), which
  ``observe_step`` accepts as well; with C below the typical gradient norm every norm is C and
  the bound equals the worst-case RDP bound.
* With d = C for every pair the cost is exactly λ times dp-accounting's RDP of the Poisson
  subsampled Gaussian at order λ + 1; with d = 2C (the largest distance of two clipped
  gradients) it is that of noise multiplier σ/2, i.e. larger than the worst-case add/remove
  bound. Only distances that are smaller than C give a smaller ε_μ.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from scipy import stats

from dpforge.errors import PrivacyError
from dpforge.privacy.accounting import dpsgd_event, epsilon, format_epsilon, validate_delta

__all__ = [
    "DEFAULT_ORDERS",
    "BayesianAccountant",
    "BayesianPrivacyResult",
    "pair_distances",
    "pair_log_moments",
]

DEFAULT_ORDERS: tuple[int, ...] = tuple(range(2, 34)) + (40, 48, 64, 96, 128, 192, 256)
"""Rényi orders α = λ + 1 (integers ≥ 2) at which the cost is tracked."""

MIN_PAIRS = 3  # the Student-t bound needs a sample standard deviation with >= 2 d.o.f.
_DISTANCE_SLACK = 1e-6  # relative float slack above 2C tolerated in given distances


# --------------------------------------------------------------------------- result


@dataclass(frozen=True)
class BayesianPrivacyResult:
    """A data-dependent (ε_μ, δ_μ)-Bayesian DP bound and what it rests on.

    ``confidence`` is 1 - γ: the probability (over the Monte Carlo pairs) that every per-step
    estimate is an upper bound. ``extra_seconds`` is the measured cost of the extra gradient
    computations. ``worst_case_epsilon`` is the worst-case DP ε at the same δ shown next to it.
    """

    epsilon: float
    delta: float
    confidence: float
    steps: int
    pairs_per_step: int
    extra_seconds: float
    worst_case_epsilon: float
    order: int | None = None  # the Rényi order α = λ + 1 that gives ε_μ

    def statement(self) -> str:
        """One sentence that cannot be mistaken for a worst-case guarantee."""
        return (
            f"(ε_μ = {format_epsilon(self.epsilon)}, δ_μ = {self.delta:.3g})-Bayesian DP: holds "
            "for data drawn from the same distribution as the training data, with confidence "
            f"1-γ = {self.confidence:g}; NOT a worst-case guarantee (that is "
            f"ε = {format_epsilon(self.worst_case_epsilon)} above)"
        )


# --------------------------------------------------------------------------- validation


def _real(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise PrivacyError(f"{name}={value!r} is not a number; give a real number")
    return float(value)


def _positive(value: Any, name: str) -> float:
    number = _real(value, name)
    if not (number > 0.0 and math.isfinite(number)):
        raise PrivacyError(f"{name}={value!r} must be finite and > 0")
    return number


def _check_orders(orders: Sequence[int]) -> np.ndarray:
    values = list(orders)
    bad = [a for a in values if isinstance(a, bool) or not isinstance(a, numbers.Integral)]
    if not values or bad or min(values) < 2:
        raise PrivacyError(f"orders={orders!r} must be whole numbers >= 2 (Rényi orders λ + 1)")
    return np.array(sorted(set(int(a) for a in values)), dtype=np.int64)


def _as_distances(distances: Any, clip_norm: float) -> np.ndarray:
    """Distances as a 1-D float64 array; PrivacyError for anything a clipped pair cannot give."""
    if isinstance(distances, torch.Tensor):
        distances = distances.detach().to("cpu", torch.float64).numpy()
    values = np.asarray(distances, dtype=np.float64)
    if values.ndim != 1 or values.size < MIN_PAIRS:
        raise PrivacyError(
            f"give a 1-D array of at least {MIN_PAIRS} pair distances (got shape {values.shape})"
        )
    if not np.all(np.isfinite(values)) or np.any(values < 0.0):
        raise PrivacyError("pair distances must be finite and >= 0")
    if np.max(values) > 2.0 * clip_norm * (1.0 + _DISTANCE_SLACK):
        raise PrivacyError(
            f"a pair distance {np.max(values):.4g} exceeds 2C = {2.0 * clip_norm:.4g}; "
            "pass distances between CLIPPED per-example gradients"
        )
    return values


# --------------------------------------------------------------------------- the math


def pair_distances(gradients: Any, clip_norm: float) -> torch.Tensor:
    """‖g_0 - g_1‖, ‖g_2 - g_3‖, ... of rows clipped to ``clip_norm`` (disjoint pairs).

    ``gradients`` is (2m, ...) per-example gradients of 2m records drawn independently from
    the training data; disjoint pairs give m independent samples, as the t-bound assumes.
    """
    clip = _positive(clip_norm, "clip_norm")
    grads = torch.as_tensor(gradients).detach().flatten(start_dim=1).to(torch.float64)
    if grads.shape[0] < 2 * MIN_PAIRS:
        raise PrivacyError(f"give gradients of at least {2 * MIN_PAIRS} records (pairs of two)")
    norms = grads.norm(dim=1, keepdim=True)
    clipped = grads * torch.clamp(clip / (norms + 1e-12), max=1.0)
    even = clipped[: clipped.shape[0] // 2 * 2]
    return (even[0::2] - even[1::2]).norm(dim=1)


def pair_log_moments(
    distances: np.ndarray, noise_std: float, sample_rate: float, orders: np.ndarray
) -> np.ndarray:
    """ℓ[i, j] = log E_{k~Bin(α_j, q)} exp((k² - k) d_i² / (2 s²)): per-pair log A_α (Thm. 3).

    ``noise_std`` is s = σC. This is λ·D_{λ+1} of ((1-q)N(0, s²) + qN(d, s²)) against N(0, s²).
    """
    return _log_moments(distances, noise_std, _binomial_terms(sample_rate, orders))


def _binomial_terms(sample_rate: float, orders: np.ndarray) -> list[tuple[np.ndarray, ...]]:
    """Per order α: (log Bin(k; α, q), k² - k) for k = 0..α (computed once per accountant)."""
    terms = []
    for alpha in orders:
        k = np.arange(alpha + 1, dtype=np.float64)
        terms.append((stats.binom.logpmf(k, alpha, sample_rate), k * k - k))
    return terms


def _log_moments(
    distances: np.ndarray, noise_std: float, terms: list[tuple[np.ndarray, ...]]
) -> np.ndarray:
    scaled = (np.asarray(distances, dtype=np.float64) / noise_std) ** 2 / 2.0
    out = np.empty((scaled.size, len(terms)))
    for j, (log_pmf, k2k) in enumerate(terms):
        exponents = log_pmf[None, :] + np.outer(scaled, k2k)
        top = np.max(exponents, axis=1)
        out[:, j] = top + np.log(np.sum(np.exp(exponents - top[:, None]), axis=1))
    return np.maximum(out, 0.0)  # A_α ≥ 1; clears -1e-16 rounding


def _log_upper_bounds(samples: np.ndarray, quantile: float) -> np.ndarray:
    """Per column: log of the Student-t upper bound mean + t·s/√m on E[exp(X)] (stable)."""
    top = np.max(samples, axis=0)
    weights = np.exp(samples - top)
    mean = np.mean(weights, axis=0)
    spread = np.std(weights, axis=0, ddof=1)
    return top + np.log(mean + quantile * spread / math.sqrt(samples.shape[0]))


# --------------------------------------------------------------------------- accountant


class BayesianAccountant:
    """Accumulates the Bayesian privacy cost of DP-SGD steps from observed gradient pairs.

    ``noise_multiplier`` σ and ``clip_norm`` C give the noise std σC; ``sample_rate`` q is the
    Poisson rate; ``total_steps`` T (an upper bound) enters Hölder's inequality and the union
    bound over steps; ``confidence`` is 1 - γ for the whole run.
    """

    def __init__(
        self,
        noise_multiplier: float,
        sample_rate: float,
        clip_norm: float,
        total_steps: int,
        orders: Sequence[int] = DEFAULT_ORDERS,
        confidence: float = 0.95,
    ) -> None:
        self.noise_multiplier = _positive(noise_multiplier, "noise_multiplier")
        self.sample_rate = _positive(sample_rate, "sample_rate")
        if self.sample_rate > 1.0:
            raise PrivacyError(f"sample_rate={sample_rate} is outside (0, 1]")
        self.clip_norm = _positive(clip_norm, "clip_norm")
        bad_steps = isinstance(total_steps, bool) or not isinstance(total_steps, numbers.Integral)
        if bad_steps or total_steps < 1:
            raise PrivacyError(f"total_steps={total_steps!r} must be a whole number >= 1")
        self.total_steps = int(total_steps)
        self.orders = _check_orders(orders)
        self.confidence = _real(confidence, "confidence")
        if not 0.0 < self.confidence < 1.0:
            raise PrivacyError(f"confidence={confidence} must be in (0, 1), e.g. 0.95")
        self._terms = _binomial_terms(self.sample_rate, self.orders)
        self._cost = np.zeros(self.orders.size)  # Σ_t c_t(λ), per order
        self._steps = 0
        self._min_pairs = 0
        self._seconds = 0.0

    @property
    def steps(self) -> int:
        """Steps observed so far."""
        return self._steps

    @property
    def cost(self) -> np.ndarray:
        """Σ_t c_t(λ) per order (a copy), the composed log moment bound."""
        return self._cost.copy()

    def step_cost(self, distances: Any, clip_norm: float | None = None) -> np.ndarray:
        """c_t(λ) per order for one step's pair distances, without recording it."""
        clip = self._clip(clip_norm)
        return self._step_cost(_as_distances(distances, clip), clip)

    def observe_step(
        self, distances: Any, extra_seconds: float = 0.0, clip_norm: float | None = None
    ) -> None:
        """Record one DP-SGD step from the distances ‖g_i - g_j‖ of clipped gradient pairs.

        ``clip_norm`` overrides C for this step (clipping decay: the noise std σC follows C).
        ``extra_seconds`` is the caller's measured time for the extra gradients.
        """
        if self._steps >= self.total_steps:
            raise PrivacyError(
                f"more steps than total_steps={self.total_steps} were observed; "
                "declare an upper bound on the steps when creating the accountant"
            )
        seconds = _real(extra_seconds, "extra_seconds")
        if not (seconds >= 0.0 and math.isfinite(seconds)):
            raise PrivacyError(f"extra_seconds={extra_seconds} must be finite and >= 0")
        clip = self._clip(clip_norm)
        values = _as_distances(distances, clip)
        self._cost += self._step_cost(values, clip)
        self._min_pairs = values.size if self._steps == 0 else min(self._min_pairs, values.size)
        self._steps += 1
        self._seconds += seconds

    def add_seconds(self, seconds: float) -> None:
        """Count time spent on the Bayesian bound outside :meth:`observe_step`."""
        self._seconds += float(seconds)

    def state_dict(self) -> dict[str, Any]:
        """What a checkpoint must keep to resume the accumulation."""
        return {
            "cost": torch.as_tensor(self._cost),
            "steps": self._steps,
            "min_pairs": self._min_pairs,
            "seconds": self._seconds,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self._cost = state["cost"].numpy().astype(np.float64)
        self._steps = int(state["steps"])
        self._min_pairs = int(state["min_pairs"])
        self._seconds = float(state["seconds"])

    def _clip(self, clip_norm: float | None) -> float:
        return self.clip_norm if clip_norm is None else _positive(clip_norm, "clip_norm")

    def _step_cost(self, values: np.ndarray, clip: float) -> np.ndarray:
        """(1/T) log UCB_{1-γ/T}(mean_i exp(T ℓ_i(λ))) per order (Hölder + union bound)."""
        moments = _log_moments(values, self.noise_multiplier * clip, self._terms)
        level = 1.0 - (1.0 - self.confidence) / self.total_steps
        quantile = float(stats.t.ppf(level, df=values.size - 1))
        scale = float(self.total_steps)
        return _log_upper_bounds(scale * moments, quantile) / scale

    def epsilon(self, delta: float) -> tuple[float, int | None]:
        """(ε_μ, order) at δ_μ = ``delta``: min over λ of (Σ_t c_t(λ) - log δ) / λ."""
        d = _real(delta, "delta")
        if not 0.0 < d < 1.0:
            raise PrivacyError(f"delta={delta} must be in (0, 1)")
        if self._steps == 0:
            return 0.0, None
        values = (self._cost - math.log(d)) / (self.orders - 1)
        best = int(np.argmin(values))
        return float(values[best]), int(self.orders[best])

    def result(
        self, delta: float, worst_case_epsilon: float | None = None
    ) -> BayesianPrivacyResult:
        """The bound at δ_μ = ``delta``, with the worst-case ε to print next to it.

        Without ``worst_case_epsilon`` it is the PLD ε of the observed DP-SGD steps alone; pass
        the run ledger's ε when the run spent privacy elsewhere too.
        """
        d = validate_delta(delta)
        eps, order = self.epsilon(d)
        if worst_case_epsilon is None:
            worst = epsilon(dpsgd_event(self.sample_rate, self.noise_multiplier, self._steps), d)
        else:
            worst = _real(worst_case_epsilon, "worst_case_epsilon")
        return BayesianPrivacyResult(
            epsilon=eps,
            delta=d,
            confidence=self.confidence,
            steps=self._steps,
            pairs_per_step=self._min_pairs,
            extra_seconds=self._seconds,
            worst_case_epsilon=worst,
            order=order,
        )
