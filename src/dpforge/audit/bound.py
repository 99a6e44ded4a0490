"""The statistical core of the one-run audit (Steinke, Nasr & Jagielski, NeurIPS 2023).

m canaries are each included in the training run by an independent fair coin. After training,
an auditor guesses "in" or "out" for r of them (abstaining on the rest) and v guesses are
right. If the run is (ε, δ)-DP with respect to each canary, the number of correct guesses is
stochastically dominated by a Binomial(r, e^ε / (1 + e^ε)) up to a δ term (their Theorem 5.2):

    P[W >= v] <= P[Binomial(r, p_ε) >= v] + 2 m δ · max_{1<=i<=v} P[v-i <= Binomial(r, p_ε) < v] / i

This module computes that p-value and the largest ε that the observed v refutes at a given
confidence: a lower bound on the true ε that holds with that confidence whatever the
mechanism. Nothing here depends on how the guesses were produced, as long as the guess rule
(the scores, the number of guesses) was fixed before the coins were revealed; choosing among
several guess rules afterwards is paid by a Bonferroni correction (:func:`best_lower_bound`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import special, stats

from dpforge.errors import PrivacyError

__all__ = [
    "AuditGuesses",
    "best_lower_bound",
    "THRESHOLDS",
    "clopper_pearson",
    "distinguishing_bound",
    "epsilon_lower_bound",
    "guesses_from_scores",
    "p_value",
    "two_sample_lower_bound",
]

_EPSILON_CEILING = 100.0  # ε above this is reported as this (no finite audit gets close)


def p_value(m: int, r: int, v: int, epsilon: float, delta: float) -> float:
    """Probability of ``v`` or more correct guesses out of ``r`` when the run is (ε, δ)-DP."""
    if not (0 <= v <= r <= m) or epsilon < 0 or not 0 <= delta <= 1:
        raise PrivacyError(
            f"audit counts must satisfy 0 <= v <= r <= m, epsilon >= 0 and 0 <= delta <= 1; "
            f"got m={m}, r={r}, v={v}, epsilon={epsilon}, delta={delta}"
        )
    if v == 0:
        return 1.0
    p = float(special.expit(epsilon))
    beta = float(stats.binom.sf(v - 1, r, p))
    if delta == 0.0:
        return min(1.0, beta)
    # P[v - i <= B <= v - 1] for i = 1..v, divided by i; its maximum is α of the theorem.
    below = stats.binom.cdf(v - 1, r, p)
    i = np.arange(1, v + 1)
    windows = below - stats.binom.cdf(v - 1 - i, r, p)
    alpha = float(np.max(windows / i))
    return min(1.0, beta + 2.0 * m * delta * alpha)


def epsilon_lower_bound(m: int, r: int, v: int, delta: float, confidence: float = 0.95) -> float:
    """The largest ε whose p-value for (m, r, v) is below ``1 - confidence``; 0 when none.

    The p-value increases with ε, so the set of refuted ε is an interval [0, ε*); it is found
    by bisection to 1e-6.
    """
    if not 0.0 < confidence < 1.0:
        raise PrivacyError(f"confidence={confidence} must be in (0, 1), e.g. 0.95")
    level = 1.0 - confidence
    if p_value(m, r, v, 0.0, delta) >= level:
        return 0.0
    low, high = 0.0, 1.0
    while p_value(m, r, v, high, delta) < level:
        low, high = high, 2.0 * high
        if high > _EPSILON_CEILING:
            return _EPSILON_CEILING
    while high - low > 1e-6:
        mid = 0.5 * (low + high)
        if p_value(m, r, v, mid, delta) < level:
            low = mid
        else:
            high = mid
    return low


@dataclass(frozen=True)
class AuditGuesses:
    """One guess rule's outcome: ``r`` guesses (``positives`` of them "in"), ``v`` right."""

    positives: int
    negatives: int
    correct: int

    @property
    def guesses(self) -> int:
        return self.positives + self.negatives


def guesses_from_scores(
    scores: np.ndarray, included: np.ndarray, positives: int, negatives: int
) -> AuditGuesses:
    """Guess "in" for the ``positives`` highest scores, "out" for the ``negatives`` lowest."""
    scores, included = np.asarray(scores, dtype=np.float64), np.asarray(included, dtype=bool)
    if scores.shape != included.shape or scores.ndim != 1:
        raise PrivacyError("scores and inclusion coins must be 1-d arrays of the same length")
    if positives < 0 or negatives < 0 or positives + negatives > scores.size:
        raise PrivacyError(
            f"cannot make {positives} + {negatives} guesses about {scores.size} canaries"
        )
    order = np.argsort(-scores, kind="stable")
    top, bottom = order[:positives], order[scores.size - negatives :]
    correct = int(included[top].sum()) + int((~included[bottom]).sum())
    return AuditGuesses(positives, negatives, correct)


def best_lower_bound(
    scores: np.ndarray,
    included: np.ndarray,
    rules: Sequence[tuple[int, int]],
    delta: float,
    confidence: float = 0.95,
) -> tuple[float, AuditGuesses]:
    """The best lower bound over the guess ``rules`` ((positives, negatives) pairs).

    Each rule is tested at level ``(1 - confidence) / len(rules)`` (Bonferroni), so the
    maximum over rules is itself a lower bound at ``confidence``.
    """
    if not rules:
        raise PrivacyError("give at least one guess rule")
    level = 1.0 - (1.0 - confidence) / len(rules)
    results = []
    for positives, negatives in rules:
        outcome = guesses_from_scores(scores, included, positives, negatives)
        eps = epsilon_lower_bound(scores.size, outcome.guesses, outcome.correct, delta, level)
        results.append((eps, outcome))
    return max(results, key=lambda item: item[0])


# --------------------------------------------------------------------------- many runs


def clopper_pearson(successes: int, trials: int, alpha: float) -> tuple[float, float]:
    """Exact two-sided (1 - alpha) confidence interval for a binomial proportion."""
    if not 0 <= successes <= trials or trials < 1:
        raise PrivacyError(f"need 0 <= successes <= trials, trials >= 1; got {successes}/{trials}")
    low = (
        0.0
        if successes == 0
        else float(stats.beta.ppf(alpha / 2, successes, trials - successes + 1))
    )
    high = (
        1.0
        if successes == trials
        else float(stats.beta.ppf(1 - alpha / 2, successes + 1, trials - successes))
    )
    return low, high


def two_sample_lower_bound(
    hits_a: int, runs_a: int, hits_b: int, runs_b: int, delta: float, alpha: float
) -> float:
    """ε refuted by an event seen ``hits_a``/``runs_a`` times on one side, ``hits_b``/``runs_b``
    on the other: (ε, δ)-DP needs P_a <= e^ε P_b + δ, so with both probabilities inside their
    one-sided Clopper-Pearson bounds (each at level alpha / 2, so both hold with probability
    1 - alpha), ε >= log((P_a_low - δ) / P_b_high).
    """
    a_low, _ = clopper_pearson(hits_a, runs_a, alpha)
    _, b_high = clopper_pearson(hits_b, runs_b, alpha)
    if a_low - delta <= 0.0 or a_low - delta <= b_high:
        return 0.0
    if b_high == 0.0:
        return _EPSILON_CEILING
    return min(_EPSILON_CEILING, math.log((a_low - delta) / b_high))


THRESHOLDS = (0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0)  # in noise standard deviations


def distinguishing_bound(
    inside: dict[str, np.ndarray],
    outside: dict[str, np.ndarray],
    delta: float,
    confidence: float,
    thresholds: Sequence[float] = THRESHOLDS,
) -> tuple[float, str | None, int]:
    """The best ε refuted by a fixed grid of events, Bonferroni over the grid.

    ``inside[name]`` / ``outside[name]``: one statistic per run with / without the canary, in
    units of the claimed noise's standard deviation (so a threshold grid fixed in advance fits
    every audit). Events: statistic above ``t`` (canary side likelier) and below ``-t`` (the
    other direction of the privacy inequality). Returns (bound, its event, number of events).
    """
    events = [(n, t, d) for n in inside for t in thresholds for d in ("above", "below")]
    alpha = (1.0 - confidence) / len(events)
    best, best_event = 0.0, None
    for name, threshold, direction in events:
        a, b = inside[name], outside[name]
        if direction == "above":
            hits_a, hits_b = int((a > threshold).sum()), int((b > threshold).sum())
            bound = two_sample_lower_bound(hits_a, a.size, hits_b, b.size, delta, alpha)
        else:
            hits_a, hits_b = int((a < -threshold).sum()), int((b < -threshold).sum())
            bound = two_sample_lower_bound(hits_b, b.size, hits_a, a.size, delta, alpha)
        if bound > best:
            best, best_event = bound, f"{name} {direction} {threshold:g} σ"
    return best, best_event, len(events)
