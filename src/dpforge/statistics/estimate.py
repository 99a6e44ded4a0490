"""One consistent, non-negative estimate of every noisy marginal (Private-PGM's estimation).

The anchoring measures overlapping marginals (each column's 1-way table, label x column,
selected pairs), each with its own Gaussian noise. Read one by
one they disagree: the 1-way table and the label x column table give two readings of one
column, and a cell that holds no record keeps whatever noise it drew. The estimate reconciles
them as Private-PGM does (McKenna, Sheldon and Miklau 2019): the graphical model over the
measured column sets (a junction tree, :mod:`dpforge.statistics.junction_tree`) whose
marginals minimise the noise-weighted squared distance to every measurement,
``sum_i ||Q_i mu_i - y_i||^2 / (2 sigma_i^2)``, found by entropic mirror descent on the
clique log-potentials with Armijo backtracking (mbi's ``mirror_descent``). Started from the
uniform model, mirror descent stays in the exponential family of the measured cliques, so
among the best fits it returns the one of maximum entropy: a dependence no measurement speaks
for is not invented. Every cell gets all the independent readings it has, the result is one
distribution (non-negative, the marginals agree where they overlap), and it answers any
marginal, measured or not.

Post-processing: it reads only the noisy counts, their public noise and the public domain.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations

import numpy as np

from dpforge.statistics.junction_tree import JunctionTree, aligned, summed_to
from dpforge.statistics.marginals import MeasuredMarginal

__all__ = [
    "Measurement",
    "Estimate",
    "estimate",
    "consistent_marginals",
    "pair_distributions",
    "unmeasured_pairs",
    "MODEL_CELLS",
    "PAIR_CELLS",
]

ITERATIONS = 300  # mirror descent steps: the loss within 1 % of its minimum (hmda, 1,000 steps)
# The most cells of the model's cliques: one inference pass a step (Adult: 4 s).
MODEL_CELLS = 150_000
# The most cells of the unmeasured pairs the generator fits (all of Adult's: 49 pairs, 78k).
PAIR_CELLS = 250_000


@dataclass(frozen=True)
class Measurement:
    """One noisy marginal: its columns, counts (flat, C order) and the noise standard
    deviation of each count (public; 0 without noise)."""

    columns: tuple[str, ...]
    counts: np.ndarray
    std: float


@dataclass(frozen=True)
class Estimate:
    """The fitted model: the junction tree, its calibrated clique tables and the public N."""

    tree: JunctionTree
    beliefs: tuple[np.ndarray, ...]
    total: float

    def counts(self, columns: Sequence[str]) -> np.ndarray:
        """The estimated count table of ``columns`` (in that order; sums to the total)."""
        return self.tree.marginal(self.beliefs, tuple(columns)) * self.total


def _weights(measurements: Sequence[Measurement]) -> np.ndarray:
    """Each measurement's weight, ``1 / sigma^2`` normalised to sum to 1 (equal weights when
    nothing is noisy: the exact counts agree anyway)."""
    std = np.array([m.std for m in measurements], dtype=np.float64)
    if np.all(std == 0):
        return np.full(len(measurements), 1.0 / len(measurements))
    if np.any(std <= 0):
        raise ValueError("every measurement needs a positive noise std, or all of them 0")
    inverse = 1.0 / std**2
    return inverse / inverse.sum()


class _Objective:
    """The weighted squared loss of clique beliefs and its gradient on each clique."""

    def __init__(self, tree: JunctionTree, measurements: Sequence[Measurement], total: float):
        self.tree = tree
        self.home = [tree.clique_of(m.columns) for m in measurements]
        self.weights = _weights(measurements)
        self.measurements = measurements
        self.targets = [
            np.asarray(m.counts, dtype=np.float64).reshape(tree.shape(m.columns)) / total
            for m in measurements
        ]

    def __call__(self, beliefs: Sequence[np.ndarray]) -> tuple[float, list[np.ndarray]]:
        cliques = self.tree.cliques
        grads = [np.zeros_like(b) for b in beliefs]
        loss = 0.0
        for m, home, weight, target in zip(
            self.measurements, self.home, self.weights, self.targets, strict=True
        ):
            table = summed_to(beliefs[home], cliques[home], m.columns)
            residual = table - target
            loss += 0.5 * weight * float((residual**2).sum())
            grads[home] = grads[home] + aligned(weight * residual, m.columns, cliques[home])
        return loss, grads


def estimate(
    measurements: Sequence[Measurement],
    domain: Mapping[str, int],
    total: float,
    iterations: int = ITERATIONS,
) -> Estimate:
    """The consistent estimate of ``measurements`` over the columns of ``domain`` (each
    column's number of cells; every measured column must be in it), scaled to the public
    ``total``: entropic mirror descent from the uniform model (see the module docstring)."""
    if not measurements:
        raise ValueError("the estimate needs at least one measurement")
    tree = JunctionTree.build([m.columns for m in measurements], domain)
    objective = _Objective(tree, measurements, total)
    theta = [np.zeros(tree.shape(c)) for c in tree.cliques]
    beliefs = tree.marginals(theta)
    loss, grads = objective(beliefs)
    step = 1.0  # 1 / (sum of weights) is a safe step in the entropy geometry; grown below
    for _ in range(iterations):
        step *= 2.0
        for _ in range(30):
            trial = [t - step * g for t, g in zip(theta, grads, strict=True)]
            trial_beliefs = tree.marginals(trial)
            trial_loss, trial_grads = objective(trial_beliefs)
            expected = sum(
                float((g * (b - tb)).sum())
                for g, b, tb in zip(grads, beliefs, trial_beliefs, strict=True)
            )
            if loss - trial_loss >= 0.5 * expected:
                break
            step *= 0.5
        theta, beliefs, loss, grads = trial, trial_beliefs, trial_loss, trial_grads
    return Estimate(tree, tuple(beliefs), float(total))


def _within_cap(measurements: Sequence[Measurement], domain: Mapping[str, int]) -> list[int]:
    """The indices of the measurements kept, in order, each kept when the junction tree with
    it stays within ``MODEL_CELLS`` (a public rule: the domain and which marginals were
    measured)."""
    kept: list[int] = []
    for i, m in enumerate(measurements):
        tree = JunctionTree.build([measurements[k].columns for k in kept] + [m.columns], domain)
        if tree.size() <= MODEL_CELLS:
            kept.append(i)
    return kept


def consistent_marginals(
    measured: Sequence[MeasuredMarginal], domain: Mapping[str, int], pairs: bool = True
) -> list[MeasuredMarginal]:
    """``measured`` with each count table replaced by the consistent estimate's (the empty
    cells still marked), and with ``pairs`` the estimate's table of
    the column pairs nobody measured (:func:`unmeasured_pairs`; label-free).
    A marginal the model's size cap leaves out keeps its noisy counts."""
    total = measured[0].total
    fitted, kept = _fitted(measured, domain)
    out = []
    for i, m in enumerate(measured):
        if i not in kept:
            out.append(m)
            continue
        table = fitted.counts(m.columns)
        out.append(MeasuredMarginal(
            m.columns, m.shape, table.ravel(), total, m.row_totals, m.empty, m.std,
        ))  # fmt: skip
    if pairs:
        for a, b in unmeasured_pairs(measured, domain):
            table = fitted.counts((a, b))
            out.append(MeasuredMarginal((a, b), table.shape, table.ravel(), total))
    return out


def unmeasured_pairs(
    measured: Sequence[MeasuredMarginal], domain: Mapping[str, int]
) -> list[tuple[str, str]]:
    """The column pairs no measurement holds, in ``domain``'s order, the smallest first while
    their cells add up to at most ``PAIR_CELLS`` (a public rule: each pair is one more target
    of every training step, and a wide table has hundreds)."""
    spoken = {frozenset(c) for m in measured for c in combinations(m.columns, 2)}
    candidates = [p for p in combinations(list(domain), 2) if frozenset(p) not in spoken]
    order = sorted(range(len(candidates)), key=lambda i: (_cells(candidates[i], domain), i))
    kept, cells = set(), 0
    for i in order:
        cells += _cells(candidates[i], domain)
        if cells > PAIR_CELLS:
            break
        kept.add(i)
    return [p for i, p in enumerate(candidates) if i in kept]


def _cells(pair: tuple[str, str], domain: Mapping[str, int]) -> int:
    return domain[pair[0]] * domain[pair[1]]


def pair_distributions(
    measured: Sequence[MeasuredMarginal],
    domain: Mapping[str, int],
    pairs: Sequence[tuple[str, str]],
) -> dict[tuple[str, str], np.ndarray]:
    """The consistent estimate's distribution of each of ``pairs`` (sums to 1): what the
    current model says of a pair, measured or not (the selection scores its gap)."""
    fitted, _ = _fitted(measured, domain)
    return {pair: fitted.counts(pair) / fitted.total for pair in pairs}


def _fitted(
    measured: Sequence[MeasuredMarginal], domain: Mapping[str, int]
) -> tuple[Estimate, list[int]]:
    """The estimate of ``measured`` within the size cap, and the indices it kept."""
    readings = [Measurement(m.columns, m.noisy_counts, _std(m)) for m in measured]
    kept = _within_cap(readings, domain)
    return estimate([readings[i] for i in kept], domain, measured[0].total), kept


def _std(m: MeasuredMarginal) -> float:
    if m.std is None:
        raise ValueError(
            f"the marginal {m.columns} was saved without its noise std (a model folder or "
            "checkpoint from before the consistent estimate): fit the table again"
        )
    return float(m.std)
