"""DP selection of the column pairs worth measuring, after a first anchoring round (AIM-like).

The first round measures every 1-way marginal and label x column. Their consistent estimate
(:mod:`dpforge.statistics.estimate`, AIM's "current model") answers every other pair with what
round 1 implies (independence given the label); where it is far from the data is where a
measurement helps most. For every candidate pair (a, b) the score is the L1 distance, in
counts, between the data's (a, b) table and the estimate's (scaled to the public N). Adding or
removing a record changes one cell of the data's table by one, so each score has sensitivity 1
and the vector of C scores L2 sensitivity sqrt(C). The scores are rounded down to whole counts
first: rounding down a score that one record moves by at most 1 moves it by at most 1, so each
is an integer query of sensitivity 1, released with the discrete Gaussian of parameter
``sigma * sqrt(C)`` (``release_noise.count_event`` of C queries, which the PLD accountant
analyses tightly; noised at federated sites, the zCDP ``release_event(sigma)``). The top
``k`` pairs by noisy score, less the error their measurement would itself add (AIM's penalty:
larger tables get more noise), are then measured like the first round. The choice of ``k`` is
a public rule.

With a privacy unit (a person's at most ``r`` rows, :mod:`dpforge.privacy.person`) a person
moves each table by at most ``r`` in L1, so each (rounded) score by at most ``r`` and the
vector by ``r * sqrt(C)``: the noise std is ``sigma * r * sqrt(C)``, each score a discrete
Gaussian of sensitivity ``r``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from itertools import combinations

import numpy as np

from dpforge.data.encoder import SOFTMAX, Span
from dpforge.engines.aggregates import NoisyCells, noise_factor
from dpforge.privacy.release_noise import noisy_counts
from dpforge.statistics.marginals import count_tables

__all__ = ["candidate_pairs", "select_pairs", "pairs_to_measure"]


def candidate_pairs(spans: Sequence[Span]) -> list[tuple[str, str]]:
    """Every pair of softmax columns (pairs with the label are measured in the first round)."""
    columns = [s.column for s in spans if s.activation == SOFTMAX]
    return list(combinations(columns, 2))


def pairs_to_measure(n_candidates: int, n_columns: int, per_column: float = 1.0) -> int:
    """The public rule for k: ``per_column`` pairs per column (by default as many pairs as
    there are columns), at least one, at most all candidates."""
    return min(n_candidates, max(1, round(per_column * n_columns)))


def pair_scores(
    blocks: Mapping[str, np.ndarray],
    model: Mapping[tuple[str, ...], np.ndarray],
    total: float,
) -> np.ndarray:
    """Each pair's L1 distance between the data's count table and the model's, scaled to the
    public ``total`` (the record count released under DP). With ``total`` fixed, adding or
    removing one record moves one cell of each table by 1: every score by at most 1."""
    tables = count_tables(blocks, list(model))  # an engine computes them in one pass
    scaled = (total * model[p] for p in model)
    return np.array([np.abs(t - m).sum() for t, m in zip(tables, scaled, strict=True)])


def select_pairs(
    blocks: Mapping[str, np.ndarray],
    model: Mapping[tuple[str, str], np.ndarray],
    k: int,
    score_noise: float,
    measure_noise: float,
    rng: np.random.Generator,
    total: float,
    rows: int = 1,
) -> list[tuple[str, ...]]:
    """The ``k`` pairs with the largest noisy, penalised scores (see the module docstring).

    ``score_noise`` is the noise multiplier of the score release, ``measure_noise`` the noise
    std per cell that the selected pairs' measurement will have (for the penalty), ``total``
    the public number of records the model's distributions are scaled to, ``rows`` a
    person's most rows (1 per record).
    """
    pairs = list(model)
    std = score_noise * rows * math.sqrt(len(pairs))
    if isinstance(blocks, NoisyCells):  # each site scores its own part (see NoisyCells)
        scores = blocks.noisy_scores(model, std)
    else:
        scores = np.floor(pair_scores(blocks, model, total))  # whole numbers, sensitivity rows
        scores = noisy_counts(scores, std, rng) if score_noise > 0 else scores
    cell_noise = measure_noise * noise_factor(blocks)  # the noise the sum will carry
    penalty = np.array([math.sqrt(2 / math.pi) * cell_noise * model[p].size for p in pairs])
    order = np.argsort(-(scores - penalty), kind="stable")
    return [pairs[i] for i in order[:k]]
