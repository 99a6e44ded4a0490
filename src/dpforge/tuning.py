"""Hyperparameter search on private data, accounted: run random configurations, release the best.

Trying configurations on private data and keeping the best spends privacy in every trial; the
best of K runs is not (ε, δ)-DP at the ε of one run. Papernot & Steinke ("Hyperparameter
tuning with Renyi differential privacy", ICLR 2022) show that if the NUMBER of trials K is
itself random (Poisson, or truncated negative binomial) and only the best trial's output is
released, the cost is a small multiple of one run's, which dp-accounting computes for
``RepeatAndSelectDpEvent(one_trial_event, mean, shape)``. This module implements exactly that
algorithm:

1. draw K from the distribution (:class:`Repetitions`) with the caller's generator;
2. for each of the K trials, pick a candidate uniformly at random (same generator), fit a fresh
   copy of it on the data with its own seed drawn from the generator, and score it;
3. release only the best-scoring trial (its model, its candidate index and its score); no other
   trial's score or model leaves, and neither does K: the bound is for the best trial with K
   hidden (revealed, the best of a large K would cost up to K trials' ε).

Console output is an output too (design.md section 2, rule 8): a trial's progress lines (the
generator's loss) and warnings are computed from the records, and the search's guarantee covers
the released trial only. Every trial's output is therefore held back while it runs
(:class:`_Transcript`) and only the released trial's is printed, once the search has ended.

Every trial must spend the SAME dp-accounting event (same method, ε, δ, batch size, epochs or
noise multiplier, metadata and anchoring settings: the hyperparameters tuned are then learning
rates, networks, steps ratios, ...). The first trial's planned events fix it; the tuning event is
written into the data set's budget file (if any) before the first trial trains; every later
trial's plan is compared with it before it trains and a difference stops the search.

The score is part of each trial's mechanism, so it must be private or public; say which:

* :class:`PublicScore` computes the score from the fitted synthesizer and PUBLIC data only
  (e.g. a public proxy data set): post-processing, it costs nothing.
* :class:`PrivateScore` computes a per-record score in [0, 1] on PRIVATE validation records (the
  fit's data, or a private hold-out) and releases their sum with Gaussian noise: adding or
  removing one record changes the sum by at most 1, so it is one ``grid_event(σ)`` (zCDP)
  composed into every trial's event.

dp-accounting analyses ``RepeatAndSelectDpEvent`` with RDP only, so the tuned model's ε is the
RDP ε (PLD does not support this event). δ paid outside events (thresholded category lists) has
no RDP form and is refused: declare such metadata in the schema when tuning.
"""

from __future__ import annotations

import contextlib
import copy
import io
import math
import numbers
import sys
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import dp_accounting
import numpy as np
import pandas as pd
from dp_accounting import dp_event
from dp_accounting.rdp import rdp_privacy_accountant

from dpforge.data.arrays import ArrayData
from dpforge.errors import PrivacyError
from dpforge.fitting import FitRun
from dpforge.pipeline.measure import COUNT_ENTRY, release_count
from dpforge.pipeline.plan import release_bound, size_noise
from dpforge.privacy.accounting import epsilon as event_epsilon
from dpforge.privacy.accounting import format_epsilon
from dpforge.privacy.budget import DataBudget, charge_before_release, settle_charge
from dpforge.privacy.ledger import PrivacyLedger, event_to_dict
from dpforge.privacy.release_noise import count_event, grid_event, noisy_values

__all__ = ["PrivateScore", "PublicScore", "Repetitions", "TuningResult", "describe", "tune"]

MAX_TRIALS = 10_000
_SEED_BITS = 40


# --------------------------------------------------------------------------- repetitions


@dataclass(frozen=True)
class Repetitions:
    """The distribution of the number of trials K (Papernot & Steinke 2022, section 2).

    ``shape = inf``: Poisson with mean ``mean`` (K = 0 is possible: then nothing is released);
    ``shape = 1``: geometric on {1, 2, ...}; ``shape = 0``: logarithmic; ``0 < shape < inf``:
    truncated negative binomial. Its parameter γ is dp-accounting's own inversion of the mean,
    so the trials drawn are the distribution the accountant analyses.
    """

    mean: float
    shape: float = math.inf

    def __post_init__(self) -> None:
        for name in ("mean", "shape"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, numbers.Real) or value != value:
                raise PrivacyError(f"repetitions {name}={value!r} must be a number")
        if not 1.0 <= self.mean <= MAX_TRIALS / 10:
            raise PrivacyError(
                f"repetitions mean={self.mean} must be in [1, {MAX_TRIALS // 10}] (the expected "
                "number of trials)"
            )
        if self.shape < 0:
            raise PrivacyError(f"repetitions shape={self.shape} must be >= 0 (inf: Poisson)")

    def gamma(self) -> float:
        """γ of the truncated negative binomial, nudged up so the mean drawn is <= ``mean``.

        dp-accounting returns the smaller end of its bisection (a mean slightly ABOVE the
        declared one); raising γ by the bisection's tolerance lowers the mean below it, and a
        larger γ only lowers the true privacy cost, so the accountant's value stays an upper
        bound.
        """
        if self.shape == 1:
            return 1.0 / self.mean
        gamma = rdp_privacy_accountant._gamma_truncated_negative_binomial(self.shape, self.mean)
        return min(1.0, gamma * (1.0 + 2e-9))

    def draw(self, rng: np.random.Generator) -> int:
        """One draw of K."""
        if math.isinf(self.shape):
            return int(rng.poisson(self.mean))
        gamma = self.gamma()
        if gamma >= 1.0:
            return 1
        if self.shape == 0:
            return int(rng.logseries(1.0 - gamma))
        for _ in range(100_000):  # rejection of K = 0; accepts with probability 1 - γ^shape
            k = int(rng.negative_binomial(self.shape, gamma))
            if k > 0:
                return k
        raise PrivacyError(f"could not draw a number of trials for {self}; use a larger shape")

    def event(self, trial_event: dp_accounting.DpEvent) -> dp_accounting.DpEvent:
        """The DP event of releasing the best of K trials that each spend ``trial_event``."""
        return dp_event.RepeatAndSelectDpEvent(trial_event, float(self.mean), self.shape)

    def describe(self) -> str:
        kind = {math.inf: "Poisson", 1.0: "geometric", 0.0: "logarithmic"}.get(
            self.shape, f"truncated negative binomial (shape {self.shape:g})"
        )
        return f"{kind}, mean {self.mean:g}"


# --------------------------------------------------------------------------- scores


@dataclass(frozen=True)
class PublicScore:
    """A score computed from the fitted synthesizer and public data only (free).

    ``score(synthesizer) -> float``, higher is better. It must not read the private data: the
    caller vouches for that, and the tuning report says the score was public.
    """

    score: Callable[[FitRun], float]
    description: str = "a public score"

    @property
    def event(self) -> dp_accounting.DpEvent:
        return dp_accounting.NoOpDpEvent()

    def __call__(self, synthesizer: FitRun, rng: np.random.Generator) -> float:
        return float(self.score(synthesizer))


@dataclass(frozen=True)
class PrivateScore:
    """A noisy mean of per-record scores on private records (one Gaussian release per trial).

    ``per_record(synthesizer, records)`` returns one score in [0, 1] per record (values outside
    are clipped), e.g. whether a classifier trained on the synthesizer's samples labels the
    record right. Their sum, plus N(0, σ²) noise, divided by the (public) number of records is
    the score: add/remove sensitivity 1, so the release is ``grid_event(σ)``
    (:mod:`dpforge.privacy.release_noise` draws the noise).
    """

    per_record: Callable[[FitRun, Any], np.ndarray]
    records: Any
    noise_multiplier: float
    description: str = "a private score"

    def __post_init__(self) -> None:
        sigma = self.noise_multiplier
        if isinstance(sigma, bool) or not isinstance(sigma, numbers.Real) or not sigma > 0:
            raise PrivacyError(f"score noise_multiplier={sigma!r} must be a number > 0")
        if not math.isfinite(sigma):
            raise PrivacyError("score noise_multiplier must be finite")

    @property
    def event(self) -> dp_accounting.DpEvent:
        return grid_event(float(self.noise_multiplier))

    def __call__(self, synthesizer: FitRun, rng: np.random.Generator) -> float:
        values = np.asarray(self.per_record(synthesizer, self.records), dtype=np.float64)
        n = len(self.records)
        if values.shape != (n,):
            raise PrivacyError(
                f"per_record must return one score per record ({n}), got shape {values.shape}"
            )
        total = float(np.clip(np.nan_to_num(values, nan=0.0), 0.0, 1.0).sum())
        return float(noisy_values(total, self.noise_multiplier, rng)) / n


Score = PublicScore | PrivateScore


# --------------------------------------------------------------------------- the search


@dataclass
class TuningResult:
    """What the search releases: the best trial only.

    ``synthesizer`` is None when K = 0 trials were drawn (Poisson); its ledger then holds the
    tuning event alone, so its saved privacy report covers the whole search. The number of
    trials K is not part of it: Papernot & Steinke's bound holds for the best trial with K
    hidden.
    """

    synthesizer: FitRun | None
    candidate: int | None
    score: float | None
    repetitions: Repetitions
    event: dp_accounting.DpEvent | None
    score_kind: str

    def epsilon(self, delta: float) -> float:
        """ε of the whole search (RDP) at ``delta``; 0 when no trial ran."""
        if self.event is None:
            return 0.0
        return event_epsilon(self.event, delta, "rdp")


class _TrialGuard:
    """Passed to each trial's ``fit`` as its budget: sees each trial's plan before training.

    The search is charged to the data set's budget before its first release
    (:meth:`charge_search`: the record count and what the first trial may release before its
    plan, bounded). The first trial's plan fixes the trial event; the charge is then settled
    with the search's event (count + ``RepeatAndSelectDpEvent``), the total checked again.
    Later plans must spend exactly the same event.
    """

    def __init__(self, score: Score, repetitions: Repetitions, budget: DataBudget | None):
        self.score, self.repetitions, self.budget = score, repetitions, budget
        self.trial_event: dp_accounting.DpEvent | None = None
        self.search_ledger = PrivacyLedger()  # the releases made once for the whole search
        self.trial_index = 0
        self.charge: Any = None

    def charge_search(self, candidate: FitRun, count_sigma: float | None) -> None:
        """Charge the search before its first release (design rule 11), through the one path:
        the record count's release (unless the candidates declare it) and a bound of what the
        first trial releases before its plan is known."""
        eps, delta = candidate.epsilon, candidate.delta
        bound = PrivacyLedger()
        if count_sigma is not None:
            bound.record(COUNT_ENTRY, count_event(count_sigma))  # as release_count records it
        for entry in release_bound(eps, delta, candidate.metadata_share).entries:
            bound.record(entry.name, entry.event, entry.extra_delta)
        self.charge = charge_before_release(
            self.budget,
            epsilon=math.inf if not math.isfinite(eps) else bound.report(delta).epsilon,
            delta=delta,
            description=f"hyperparameter search ({self.repetitions.describe()}), target "
            f"epsilon {eps:g} per trial, delta {delta:g}",
            bound=bound,
        )

    def reserve(
        self,
        *,
        epsilon: float,
        delta: float,
        description: str,
        bound: PrivacyLedger | None = None,
        checkpoint: Any = None,
        resume_of: str | None = None,
    ) -> None:
        """Keep the trial's δ: the search was charged before its first release
        (:meth:`charge_search`), and is settled once the first trial's plan is known."""
        self.delta = delta

    def settle(self, run: Any, ledger: PrivacyLedger, *, check_total: bool = False) -> None:
        """Check the trial's planned ``ledger`` (and settle the search, at the first trial)."""
        if ledger.extra_delta() > 0:
            raise PrivacyError(
                "a tuning trial pays delta outside its events (categories released by a DP "
                "threshold); RDP cannot carry it through the search: declare the categories "
                "and bounds in the schema when tuning"
            )
        event = dp_accounting.ComposedDpEvent([ledger.event(), self.score.event])
        if self.trial_event is None:
            self.trial_event = event
            settle_charge(self.budget, self.charge, self.search_event(), check_total=True)
        elif event_to_dict(event) != event_to_dict(self.trial_event):
            raise PrivacyError(
                f"tuning trial {self.trial_index + 1} plans other DP events than the first trial; "
                "every candidate must have the same privacy settings (method, epsilon, delta, "
                "batch size, epochs or noise multiplier, metadata, anchoring): the search stops "
                "here and nothing is released"
            )

    def search_event(self) -> PrivacyLedger:
        """The whole search: the count released once, and the best of K trials."""
        ledger = PrivacyLedger(self.search_ledger.entries)
        ledger.record(self.entry_name(), self.repetitions.event(self.trial_event))
        return ledger

    def entry_name(self) -> str:
        return (
            f"hyperparameter search: best of a random number of trials "
            f"({self.repetitions.describe()}), scored by {self.score.description}"
        )


def tune(
    candidates: Sequence[FitRun],
    data: pd.DataFrame | ArrayData,
    score: Score,
    repetitions: Repetitions,
    rng: np.random.Generator,
    *,
    budget: DataBudget | None = None,
) -> TuningResult:
    """Release the best of K random trials of ``candidates`` on ``data``, accounted.

    Args:
        candidates: unfitted synthesizers (``dpforge.Synthesizer``, or any
            :class:`dpforge.fitting.FitRun`) with the same privacy settings; each trial fits a
            copy of one picked uniformly at random (the candidates are not modified), and the
            score is handed that copy.
        data: the private records.
        score: :class:`PublicScore` or :class:`PrivateScore` (its cost is in every trial).
        repetitions: the distribution of the number of trials K.
        rng: all randomness of the search (K, picks, trial seeds, score noise). For a
            release, create it without a seed (``noise_generator(None)`` of
            :mod:`dpforge.privacy.release_noise`: OS entropy draws the noise).
        budget: the data set's budget file; the search is charged to it before its first
            release (the record count), and settled with the search's event once the first
            trial's plan is known, before anything trains.

    Returns:
        The best trial (highest score) with the tuning event in its ledger: its
        ``privacy_spent()`` and saved model report the search's ε, not one trial's.
    """
    _check_search(candidates, score, rng)
    guard = _TrialGuard(score, repetitions, budget)
    trials = repetitions.draw(rng)
    if trials > MAX_TRIALS:  # depends on the draw only, never on the data
        raise PrivacyError(
            f"drew {trials} trials, more than {MAX_TRIALS}; use a smaller mean (the search "
            "must run every trial drawn, so it stops here before any trial)"
        )
    if trials == 0:  # nothing reads the records: nothing to charge
        return TuningResult(None, None, None, repetitions, None, _kind(score))
    first = candidates[0]
    count_sigma = None if first.record_count is not None else size_noise(first.epsilon, first.delta)
    guard.charge_search(first, count_sigma)
    record_count = _released_count(first, data, guard.search_ledger, rng, count_sigma)
    best: tuple[float, int, FitRun, _Transcript] | None = None
    for index in range(trials):
        guard.trial_index = index
        choice = int(rng.integers(len(candidates)))
        trial = copy.deepcopy(candidates[choice])
        trial.seed = int(rng.integers(2**_SEED_BITS))
        trial.record_count = record_count  # every trial sized by the same public count
        with _held_output() as transcript:
            trial.fit(data, budget=guard)
            value = score(trial, rng)
        if best is None or value > best[0]:
            best = (value, choice, trial, transcript)
    value, choice, synthesizer, transcript = best
    transcript.replay()  # the released trial's output only
    synthesizer.ledger_ = guard.search_event()
    event = synthesizer.ledger_.event()  # the whole search: the count and the trials
    return TuningResult(synthesizer, choice, value, repetitions, event, _kind(score))


def _check_search(candidates: Sequence[FitRun], score: Score, rng: Any) -> None:
    """Refuse a search whose candidates, score or generator cannot be accounted."""
    if not candidates or not all(isinstance(c, FitRun) for c in candidates):
        raise PrivacyError("candidates must be a non-empty list of unfitted Synthesizer objects")
    if not isinstance(score, PublicScore | PrivateScore):
        raise PrivacyError("score must be a PublicScore or a PrivateScore (say which it is)")
    if not isinstance(rng, np.random.Generator):
        raise PrivacyError("rng must be a numpy Generator (np.random.default_rng())")
    if any(c.checkpoint_dir is not None for c in candidates):
        raise PrivacyError(
            "tuning candidates must not have a checkpoint_dir: trials would resume each "
            "other's checkpoints instead of running independently"
        )
    if any(c.privacy_unit is not None for c in candidates):
        raise PrivacyError(
            "the hyperparameter search releases its record count and scores per row, not per "
            "person: fit one Synthesizer with the privacy unit, or search without privacy_unit"
        )


@dataclass
class _Transcript:
    """What one trial printed (stdout, stderr) and warned, held until the search ends."""

    out: io.StringIO = field(default_factory=io.StringIO)
    err: io.StringIO = field(default_factory=io.StringIO)
    caught: list[warnings.WarningMessage] = field(default_factory=list)

    def replay(self) -> None:
        """Print and warn what the trial did, in the order of each stream."""
        sys.stdout.write(self.out.getvalue())
        sys.stderr.write(self.err.getvalue())
        for w in self.caught:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)


@contextlib.contextmanager
def _held_output() -> Iterator[_Transcript]:
    """Hold a trial's console output and warnings back (computed from the records: only the
    released trial's may be shown; see the module notes)."""
    transcript = _Transcript()
    with (
        contextlib.redirect_stdout(transcript.out),
        contextlib.redirect_stderr(transcript.err),
        warnings.catch_warnings(record=True) as caught,
    ):
        warnings.simplefilter("always")
        try:
            yield transcript
        finally:
            transcript.caught = list(caught)


def _released_count(
    candidate: FitRun,
    data: Any,
    ledger: PrivacyLedger,
    rng: np.random.Generator,
    sigma: float | None,
) -> int | None:
    """The record count every trial is sized by: the candidates' public one (``sigma`` None),
    else released once for the whole search (trials that each released their own would plan
    different events, and RepeatAndSelect needs one trial event)."""
    if sigma is None:
        return candidate.record_count
    return int(release_count(len(data), sigma, ledger, rng))


def _kind(score: Score) -> str:
    if isinstance(score, PrivateScore):
        return f"private (Gaussian noise σ = {score.noise_multiplier:g} on a sum of [0, 1] scores)"
    return "public (computed without the private data)"


def describe(result: TuningResult, delta: float) -> str:
    """One line: the search, how the score was computed, and its ε."""
    eps = format_epsilon(result.epsilon(delta))
    return (
        f"the best of a random number of trials ({result.repetitions.describe()}); score "
        f"{result.score_kind}; ε = {eps} (RDP) at δ = {delta:g} for the whole search"
    )
