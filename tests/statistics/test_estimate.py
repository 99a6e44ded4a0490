"""The consistent estimate (statistics/estimate.py): Private-PGM's estimation checked against a
brute-force oracle on the full joint of a small domain, its consistency and non-negativity,
its maximum-entropy answer where nothing was measured, and its public choices."""

from __future__ import annotations

import numpy as np
import pytest

from dpforge.statistics.estimate import (
    Measurement,
    _within_cap,
    consistent_marginals,
    estimate,
)
from dpforge.statistics.junction_tree import JunctionTree, aligned, summed_to
from dpforge.statistics.marginals import MeasuredMarginal

DOMAIN = {"A": 3, "B": 2, "C": 4, "D": 3}
NAMES = tuple(DOMAIN)
N = 1000.0


def _measured(rng: np.random.Generator, sets, std=5.0):
    """Noisy measurements of ``sets`` drawn from a random joint over ``DOMAIN``."""
    joint = rng.dirichlet(np.full(72, 0.5)).reshape(3, 2, 4, 3)
    out = []
    for columns in sets:
        table = summed_to(joint, NAMES, columns) * N
        noisy = table + rng.normal(0.0, std * len(columns), table.shape)
        out.append(Measurement(columns, noisy.ravel(), std * len(columns)))
    return out


def _brute_force(measurements, steps: int = 3000) -> np.ndarray:
    """The oracle: entropic mirror descent on the full joint (72 cells), from uniform."""
    weights = np.array([1 / m.std**2 for m in measurements])
    weights /= weights.sum()
    theta = np.zeros(tuple(DOMAIN.values()))
    joint = np.full(theta.shape, 1 / theta.size)
    for _ in range(steps):
        grad = np.zeros_like(joint)
        for m, w in zip(measurements, weights, strict=True):
            table = summed_to(joint, NAMES, m.columns)
            residual = table - m.counts.reshape(table.shape) / N
            grad += aligned(w * residual, m.columns, NAMES)
        theta -= grad
        joint = np.exp(theta - theta.max())
        joint /= joint.sum()
    return joint


def test_agrees_with_the_full_joint_oracle_on_a_cycle():
    """A cycle of pairs (triangulated) and a 1-way table: every marginal, measured or not,
    matches the full joint's max-entropy best fit."""
    sets = [("A", "B"), ("B", "C"), ("C", "D"), ("A", "D"), ("A",)]
    measurements = _measured(np.random.default_rng(0), sets)
    fitted = estimate(measurements, DOMAIN, N)
    oracle = _brute_force(measurements)
    for columns in [("A", "B"), ("B", "D"), ("A", "C"), ("C",), ("D", "A")]:
        expected = summed_to(oracle, NAMES, columns) * N
        np.testing.assert_allclose(fitted.counts(columns), expected, atol=0.05)


def test_estimate_is_consistent_and_non_negative():
    """Overlapping noisy tables disagree; the estimate's agree on every shared column, sum to
    N and hold no negative count, even where the noise drew one."""
    sets = [("A", "B"), ("A",), ("B", "C"), ("A", "C"), ("D",)]
    measurements = _measured(np.random.default_rng(1), sets, std=40.0)
    assert min(m.counts.min() for m in measurements) < 0  # the noise made negative counts
    fitted = estimate(measurements, DOMAIN, N)
    tables = {c: fitted.counts(c) for c in sets}
    for table in tables.values():
        assert table.min() >= 0
        assert table.sum() == pytest.approx(N)
    np.testing.assert_allclose(tables[("A", "B")].sum(axis=1), tables[("A",)], rtol=1e-9)
    np.testing.assert_allclose(tables[("A", "C")].sum(axis=1), tables[("A",)], rtol=1e-9)
    np.testing.assert_allclose(tables[("B", "C")].sum(axis=0), tables[("A", "C")].sum(axis=0))


def test_exact_counts_come_back_exactly():
    """Without noise the estimate returns the measured tables (they are consistent)."""
    measurements = [
        Measurement(m.columns, m.counts, 0.0)
        for m in _measured(np.random.default_rng(2), [("A", "B"), ("B", "C")], std=0.0)
    ]
    fitted = estimate(measurements, DOMAIN, N, iterations=1000)
    for m in measurements:
        np.testing.assert_allclose(fitted.counts(m.columns).ravel(), m.counts, atol=1e-3)


def test_nothing_invented_where_no_measurement_speaks():
    """A column measured only on its own, and two columns each measured only with the label:
    the unmeasured pairs get the maximum-entropy answer (independence, resp. independence given
    the label), as :func:`consistent_marginals` hands them to the generator."""
    label = np.array([600.0, 400.0])
    la = np.array([[500.0, 100.0], [50.0, 350.0]])  # label x a: strongly tied
    lb = np.array([[300.0, 300.0], [100.0, 300.0]])
    g = np.array([480.0, 520.0])
    measured = [
        MeasuredMarginal(("y",), (2,), label, N, std=1.0),
        MeasuredMarginal(("y", "a"), (2, 2), la.ravel(), N, std=1.0),
        MeasuredMarginal(("y", "b"), (2, 2), lb.ravel(), N, std=1.0),
        MeasuredMarginal(("g",), (2,), g, N, std=1.0),
    ]
    out = consistent_marginals(measured, {"y": 2, "a": 2, "b": 2, "g": 2})
    pairs = {m.columns: m.noisy_counts.reshape(m.shape) for m in out[len(measured) :]}
    assert set(pairs) == {("y", "g"), ("a", "b"), ("a", "g"), ("b", "g")}
    np.testing.assert_allclose(pairs["a", "g"], np.outer(la.sum(0), g) / N, atol=1e-2)
    given = (la[:, :, None] * lb[:, None, :] / label[:, None, None]).sum(axis=0)
    np.testing.assert_allclose(pairs["a", "b"], given, atol=1e-2)


def test_size_cap_follows_only_public_inputs(monkeypatch):
    """Which measurements the model keeps depends on their columns and the domain, never on
    the counts: other noisy counts, same choice."""
    import dpforge.statistics.estimate as module

    monkeypatch.setattr(module, "MODEL_CELLS", 40)
    sets = [("A", "B"), ("B", "C"), ("C", "D"), ("A", "D")]
    first = _measured(np.random.default_rng(3), sets)
    second = _measured(np.random.default_rng(4), sets, std=30.0)
    kept = _within_cap(first, DOMAIN)
    assert kept == _within_cap(second, DOMAIN) == [0, 1, 2]  # the cycle's last pair would pass 40
    assert JunctionTree.build([sets[i] for i in kept], DOMAIN).size() <= 40


def test_marginal_keeps_its_noise_std_through_a_round_trip():
    m = MeasuredMarginal(("a",), (2,), np.array([1.0, 2.0]), 3.0, std=1.5)
    assert MeasuredMarginal.from_dict(m.to_dict()).std == 1.5
    legacy = {k: v for k, v in m.to_dict().items() if k != "std"}
    with pytest.raises(ValueError, match="fit the table again"):
        consistent_marginals([MeasuredMarginal.from_dict(legacy)], {"a": 2})


def test_a_marginal_on_merged_cells_is_refused_on_load():
    """Model folders fitted with the removed ``label_pairs`` option stored merged cells."""
    m = MeasuredMarginal(("a", "b"), (2, 2), np.ones(4), 4.0, std=1.0).to_dict()
    with pytest.raises(ValueError, match="label_pairs option.*fit the table again"):
        MeasuredMarginal.from_dict({**m, "groups": [[0, 0, 1], []]})


def test_unmeasured_pairs_are_capped_smallest_first(monkeypatch):
    """The pairs the generator is fitted to without a measurement: those no measurement holds,
    the smallest first within ``PAIR_CELLS`` (a public rule of the domain)."""
    import dpforge.statistics.estimate as module

    measured = [MeasuredMarginal(("A", "B"), (3, 2), np.ones(6), 6.0, std=1.0)]
    assert module.unmeasured_pairs(measured, DOMAIN) == [
        ("A", "C"), ("A", "D"), ("B", "C"), ("B", "D"), ("C", "D"),
    ]  # fmt: skip
    monkeypatch.setattr(module, "PAIR_CELLS", 20)  # 6 (B, D) + 8 (B, C) + 9 (A, D) passes 20
    assert module.unmeasured_pairs(measured, DOMAIN) == [("B", "C"), ("B", "D")]


def test_a_model_beyond_64_bit_cells_is_measured_exactly_and_left_out_by_the_cap():
    """psid's round-1 tree once overflowed numpy's int64 product and passed the cap as a small
    number, then failed to allocate: sizes are Python integers."""
    domain = {name: 10_000 for name in "abcde"}
    tree = JunctionTree.build([tuple("abcde")], domain)
    assert tree.size() == 10**20
    readings = [Measurement(tuple("abcde"), np.zeros(1), 1.0)]
    assert _within_cap(readings, domain) == []
