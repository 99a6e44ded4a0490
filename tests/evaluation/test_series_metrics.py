"""Tests of dynamic time warping and train-on-synthetic, test-on-real utility for time series.

DTW is checked against the textbook recursion written in plain Python; the TSTR metrics on
noisy sine, square and sawtooth waves of random phase and frequency (three classes).
"""

from __future__ import annotations

import functools
import itertools

import numpy as np
import pytest
from PIL import Image

from dpforge.data.arrays import ArrayData
from dpforge.errors import DataError, OutputExistsError
from dpforge.evaluation import series
from dpforge.evaluation.series import (
    autocorrelation,
    dtw_distance,
    nearest_by_dtw,
    plot_nearest,
    tstr_accuracy,
)

CLASSES = ("sine", "square", "saw")
LENGTH = 48


def oracle_dtw(a: np.ndarray, b: np.ndarray, window: int | None = None) -> float:
    """The obvious recursion: cost(i, j) + min of the three predecessors (0-based here)."""
    a, b = a.tolist(), b.tolist()
    len_a, len_b = len(a[0]), len(b[0])
    band = None if window is None else max(window, abs(len_a - len_b))

    def cost(i: int, j: int) -> float:
        return sum((a[c][i] - b[c][j]) ** 2 for c in range(len(a)))

    @functools.cache
    def dtw(i: int, j: int) -> float:
        if band is not None and abs(i - j) > band:
            return float("inf")
        if i == 0 and j == 0:
            return cost(0, 0)
        options = []
        if i > 0:
            options.append(dtw(i - 1, j))
        if j > 0:
            options.append(dtw(i, j - 1))
        if i > 0 and j > 0:
            options.append(dtw(i - 1, j - 1))
        return cost(i, j) + min(options)

    return dtw(len_a - 1, len_b - 1)


def waves(n: int, seed: int, channels: int = 1) -> ArrayData:
    """``n`` noisy waves of a random class, phase and frequency, shape (n, channels, LENGTH)."""
    rng = np.random.default_rng(seed)
    kind = rng.integers(0, 3, n)
    t = np.arange(LENGTH) / LENGTH
    phase = rng.uniform(0, 1, (n, channels, 1))
    cycles = rng.uniform(2.0, 3.0, (n, 1, 1)) * t + phase
    sine = np.sin(2 * np.pi * cycles)
    shapes = np.stack([sine, np.sign(sine), 2 * (cycles % 1.0) - 1])  # (3, n, channels, L)
    values = shapes[kind, np.arange(n)] + 0.2 * rng.normal(size=(n, channels, LENGTH))
    return ArrayData(values, np.array(CLASSES, dtype=object)[kind])


# -- DTW -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", range(6))
def test_dtw_matches_the_recursion_on_small_random_series(seed):
    rng = np.random.default_rng(seed)
    for channels, len_a, len_b in itertools.product((1, 3), (1, 4, 7), (1, 5, 7)):
        a = rng.normal(size=(channels, len_a))
        b = rng.normal(size=(channels, len_b))
        for window in (None, 0, 1, 2, 10):
            expected = oracle_dtw(a, b, window)
            assert dtw_distance(a, b, window) == pytest.approx(expected, rel=1e-12, abs=1e-12)


def test_known_distances():
    assert dtw_distance(np.array([[0.0, 0.0, 1.0]]), np.array([[0.0, 1.0, 1.0]])) == 0.0
    assert dtw_distance(np.array([[0.0]]), np.array([[1.0, 2.0]])) == 5.0  # 1^2 + 2^2
    assert dtw_distance(np.array([[0.0, 1.0, 2.0]]), np.array([[0.0, 1.0, 1.0, 2.0]])) == 0.0
    two_channels = np.array([[0.0, 1.0], [0.0, 1.0]])
    assert dtw_distance(two_channels, np.zeros((2, 2))) == 2.0  # one step, both channels


def test_identical_series_are_at_distance_zero():
    x = np.random.default_rng(0).normal(size=(2, 30))
    assert dtw_distance(x, x) == 0.0
    assert dtw_distance(x, x, window=0) == 0.0


def test_window_zero_is_the_squared_euclidean_distance():
    rng = np.random.default_rng(1)
    a, b = rng.normal(size=(3, 20)), rng.normal(size=(3, 20))
    assert dtw_distance(a, b, window=0) == pytest.approx(np.sum((a - b) ** 2), rel=1e-12)


def test_shifted_sine_is_closer_by_dtw_than_euclidean():
    t = np.linspace(0, 4 * np.pi, 80)
    a, b = np.sin(t)[None], np.sin(t - 0.6)[None]
    euclidean = float(np.sum((a - b) ** 2))
    assert dtw_distance(a, b) < 0.2 * euclidean
    assert dtw_distance(a, b) <= dtw_distance(a, b, window=3) <= dtw_distance(a, b, window=0)


def test_dtw_is_symmetric_and_widens_a_too_narrow_window():
    rng = np.random.default_rng(2)
    a, b = rng.normal(size=(1, 5)), rng.normal(size=(1, 9))
    assert dtw_distance(a, b) == pytest.approx(dtw_distance(b, a), rel=1e-12)
    assert dtw_distance(a, b, window=0) == pytest.approx(oracle_dtw(a, b, 4), rel=1e-12)


def test_dtw_rejects_bad_inputs():
    x = np.zeros((1, 4))
    with pytest.raises(DataError, match="channels"):
        dtw_distance(x, np.zeros((2, 4)))
    with pytest.raises(DataError, match="shape"):
        dtw_distance(np.zeros(4), x)
    with pytest.raises(DataError, match="missing or infinite"):
        dtw_distance(np.array([[0.0, np.nan]]), x)
    with pytest.raises(ValueError, match="window"):
        dtw_distance(x, x, window=-1)
    with pytest.raises(ValueError, match="window"):
        dtw_distance(x, x, window=1.5)


# -- nearest neighbours --------------------------------------------------------------------------
def test_nearest_matches_brute_force():
    rng = np.random.default_rng(3)
    queries, reference = rng.normal(size=(5, 2, 9)), rng.normal(size=(7, 2, 11))
    indices, distances = nearest_by_dtw(queries, reference, window=3)
    for q in range(5):
        brute = [dtw_distance(queries[q], r, window=3) for r in reference]
        assert indices[q] == int(np.argmin(brute))
        assert distances[q] == pytest.approx(min(brute), rel=1e-12)


def test_nearest_finds_exact_copies_and_breaks_ties_by_lowest_index():
    data = waves(6, seed=4)
    reference = np.concatenate([data.values, data.values])  # every series twice
    indices, distances = nearest_by_dtw(data, reference)
    np.testing.assert_array_equal(indices, np.arange(6))
    np.testing.assert_array_equal(distances, 0.0)


def test_nearest_in_small_blocks_gives_the_same_answer(monkeypatch):
    data, reference = waves(9, seed=5), waves(13, seed=6)
    whole = nearest_by_dtw(data, reference)
    monkeypatch.setattr(series, "_CELL_BUDGET", 3 * (LENGTH + 1))  # 3 pairs at a time
    blocked = nearest_by_dtw(data, reference)
    np.testing.assert_array_equal(whole[0], blocked[0])
    np.testing.assert_array_equal(whole[1], blocked[1])


# -- TSTR ----------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def split() -> tuple[ArrayData, ArrayData]:
    return waves(150, seed=10), waves(90, seed=11)


def test_real_training_series_classify_well(split):
    train, test = split
    results = tstr_accuracy(train, test, CLASSES, seed=0)
    assert set(results) == {"random_forest", "knn_dtw"}
    for model, result in results.items():
        assert result.name == f"tstr_accuracy_{model}"
        assert result.value == result.details["accuracy"] > 0.85
        assert result.details["balanced_accuracy"] > 0.85
        assert result.details["classes_missing_from_train"] == []


def test_label_shuffled_synthetic_series_score_near_chance(split):
    train, test = split
    permuted = ArrayData(train.values, np.random.default_rng(0).permutation(train.labels))
    for result in tstr_accuracy(permuted, test, CLASSES, seed=0).values():
        assert result.value < 0.55  # chance is 1/3


def test_missing_class_is_reported_and_results_are_seeded(split):
    train, test = split
    keep = train.labels != "saw"
    partial = ArrayData(train.values[keep], train.labels[keep])
    first = tstr_accuracy(partial, test, CLASSES, seed=2)
    again = tstr_accuracy(partial, test, CLASSES, seed=2)
    for model in first:
        assert first[model].details["classes_missing_from_train"] == ["saw"]
        assert first[model].value < 0.75  # the saw-tooth third of the test set is lost
        assert first[model].value == again[model].value


def test_knn_with_a_window_and_multichannel_series():
    train, test = waves(45, seed=12, channels=2), waves(45, seed=13, channels=2)
    result = tstr_accuracy(train, test, CLASSES, models=("knn_dtw",), window=6)["knn_dtw"]
    assert result.value > 0.85
    assert result.details["window"] == 6


def test_tstr_rejects_bad_inputs(split):
    train, test = split
    with pytest.raises(ValueError, match="models"):
        tstr_accuracy(train, test, CLASSES, models=("svm",))
    with pytest.raises(DataError, match="no labels"):
        tstr_accuracy(ArrayData(train.values), test, CLASSES)
    with pytest.raises(DataError, match="shape"):
        tstr_accuracy(ArrayData(train.values[:, :, :20], train.labels), test, CLASSES)


# -- plot ----------------------------------------------------------------------------------------
def test_plot_nearest_writes_a_png_atomically(tmp_path, split):
    train, test = split
    path = plot_nearest(train, test, tmp_path / "nearest.png", n=4, window=5)
    assert path == tmp_path / "nearest.png"
    with Image.open(path) as image:
        assert image.format == "PNG" and image.size[0] > 300
    assert [p.name for p in tmp_path.iterdir()] == ["nearest.png"]  # no temporary file left


def test_plot_nearest_refuses_to_overwrite_unless_asked(tmp_path, split):
    train, test = split
    path = tmp_path / "nearest.png"
    path.write_bytes(b"keep me")
    with pytest.raises(OutputExistsError):
        plot_nearest(train, test, path)
    assert path.read_bytes() == b"keep me"
    plot_nearest(train.values[:2], test.values, path, n=6, overwrite=True)  # fewer than n
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(ValueError, match="n must"):
        plot_nearest(train, test, tmp_path / "other.png", n=0)


def test_autocorrelation_of_known_series():
    t = np.arange(64)
    alternating = np.where(t % 2 == 0, 1.0, -1.0)[None, None, :]
    acf = autocorrelation(alternating, 3)
    # biased estimator: lag k sums 64 - k products of +-1 over a sum of squares of 64
    np.testing.assert_allclose(acf, [1.0, -63 / 64, 62 / 64, -61 / 64])
    rng = np.random.default_rng(0)
    noise = rng.normal(size=(200, 2, 100))
    acf = autocorrelation(ArrayData(noise), 5)
    assert acf[0] == pytest.approx(1.0) and np.abs(acf[1:]).max() < 0.03  # white noise
    walk = np.cumsum(noise, axis=2)
    assert autocorrelation(walk, 1)[1] > 0.8  # a random walk remembers its last step
    assert len(autocorrelation(walk, 500)) == 100  # capped at the length - 1


def test_autocorrelation_refuses_constant_series_and_bad_lags():
    with pytest.raises(DataError, match="constant"):
        autocorrelation(np.ones((3, 1, 10)), 2)
    with pytest.raises(ValueError, match="max_lag"):
        autocorrelation(np.zeros((3, 1, 10)) + np.arange(10), -1)
