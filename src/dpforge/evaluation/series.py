"""Utility of synthetic time series: dynamic time warping and train on synthetic, test on real.

Series are ``ArrayData`` of shape ``(n, channels, length)``.

* :func:`dtw_distance` — multivariate dynamic time warping (DTW): the smallest sum, over a
  monotone warping path, of squared Euclidean distances between time points (all channels
  together, "dependent" DTW). With ``window=0`` it is the squared Euclidean distance; an optional
  Sakoe-Chiba band limits how far the path may stray from the diagonal. Written in NumPy and
  vectorised over anti-diagonals and over many pairs at once, so each cell is computed with the
  same operations as the textbook recursion.
* :func:`nearest_by_dtw` — for each query series, its nearest reference series by DTW.
* :func:`tstr_accuracy` — accuracy on real test series of a random forest (raw values) and of
  1-nearest-neighbour by DTW, both trained on the synthetic series. Called with the REAL
  training series instead, the same function gives the real-data reference.
* :func:`autocorrelation` — the mean sample autocorrelation of a set of series at each lag, to
  compare the temporal structure of synthetic and real series.
* :func:`plot_nearest` — a PNG showing generated series overlaid on their nearest real series,
  the usual eyeball check (and a hint of memorisation when a distance is near 0).

Evaluating on real data is not differentially private: these results are for the data
steward's own assessment, not for release alongside the synthetic data without thought.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np

from dpforge.data.arrays import ArrayData
from dpforge.errors import DataError
from dpforge.evaluation.images import (
    check_models,
    check_same_shape,
    checked_classes,
    checked_values,
    encode_array_labels,
    prediction_details,
)
from dpforge.evaluation.utility import MetricResult, Predictions, fit_proba
from dpforge.storage import atomic_write

SERIES_MODELS = ("random_forest", "knn_dtw")
_LAYOUT = "(n, channels, length)"
# Cells of one anti-diagonal buffer (float64) for all pairs computed at once: ~4 buffers of
# at most 16 MB each.
_CELL_BUDGET = 1 << 21


# -- DTW -----------------------------------------------------------------------------------------
def _check_window(window: int | None) -> int | None:
    if window is None:
        return None
    if isinstance(window, bool) or not isinstance(window, int | np.integer) or window < 0:
        raise ValueError(f"window must be None or a non-negative integer, got {window!r}")
    return int(window)


def _band(window: int | None, len_a: int, len_b: int) -> int | None:
    """The Sakoe-Chiba radius, widened to ``|len_a - len_b|`` so that a warping path exists."""
    return None if window is None else max(window, abs(len_a - len_b))


def _diagonal_range(d: int, len_a: int, len_b: int, band: int | None) -> tuple[int, int]:
    """Rows ``lo..hi`` (1-based, inclusive) of the cells (i, d - i) inside the table and band."""
    lo, hi = max(1, d - len_b), min(len_a, d - 1)
    if band is not None:  # |i - (d - i)| <= band
        lo, hi = max(lo, -((band - d) // 2)), min(hi, (d + band) // 2)
    return lo, hi


def _diagonal_costs(
    a_t: np.ndarray, b_rev: np.ndarray, d: int, lo: int, hi: int, len_b: int
) -> np.ndarray:
    """Squared Euclidean distance of time points (i - 1, d - i - 1), i = lo..hi: (hi-lo+1, p, r).

    ``a_t``: (C, La, p); ``b_rev``: (C, Lb, r) reversed in time, so that both are plain slices.
    Summed channel by channel, exactly like the textbook formula (no |x|^2 + |y|^2 - 2xy).
    """
    rows = slice(lo - 1, hi)
    cols = slice(len_b - d + lo, len_b - d + hi + 1)
    cost = (a_t[0, rows, :, None] - b_rev[0, cols, None, :]) ** 2
    for c in range(1, a_t.shape[0]):
        cost += (a_t[c, rows, :, None] - b_rev[c, cols, None, :]) ** 2
    return cost


def _dtw_cross(a: np.ndarray, b: np.ndarray, window: int | None) -> np.ndarray:
    """DTW between every series of ``a`` (p, C, La) and of ``b`` (r, C, Lb): (p, r).

    The cumulative cost of cell (i, j) (1-based; row and column 0 are the boundary) depends on
    cells of the two previous anti-diagonals only, so the table is swept one anti-diagonal at a
    time, each a vectorised step over its cells and all pairs. An anti-diagonal is stored by
    row i: ``(La + 1, p, r)``, so its three predecessors are plain slices. Each cell is computed
    with the same operations as the recursion (cost + min of three), hence the same result.
    """
    len_a, len_b = a.shape[2], b.shape[2]
    band = _band(window, len_a, len_b)
    a_t = np.ascontiguousarray(a.transpose(1, 2, 0))
    b_rev = np.ascontiguousarray(b[:, :, ::-1].transpose(1, 2, 0))
    shape = (len_a + 1, a.shape[0], b.shape[0])
    before_last = np.full(shape, np.inf)  # anti-diagonal 0: the start cell (0, 0)
    before_last[0] = 0.0
    last = np.full(shape, np.inf)  # anti-diagonal 1: boundary cells only
    for d in range(2, len_a + len_b + 1):
        lo, hi = _diagonal_range(d, len_a, len_b, band)
        current = np.full(shape, np.inf)
        if lo <= hi:
            best = np.minimum(
                np.minimum(last[lo - 1 : hi], last[lo : hi + 1]), before_last[lo - 1 : hi]
            )
            current[lo : hi + 1] = _diagonal_costs(a_t, b_rev, d, lo, hi, len_b) + best
        before_last, last = last, current
    return last[len_a]


def _as_series(x: np.ndarray | ArrayData, rank: int, what: str) -> np.ndarray:
    values = x.values if isinstance(x, ArrayData) else np.asarray(x)
    layout = "(channels, length)" if rank == 2 else _LAYOUT
    if values.ndim != rank or 0 in values.shape:
        raise DataError(f"{what} must have shape {layout} with no empty axis, got {values.shape}")
    values = values.astype(np.float64, copy=False)
    if not np.all(np.isfinite(values)):
        raise DataError(f"{what} holds missing or infinite values")
    return values


def _check_channels(a: np.ndarray, b: np.ndarray) -> None:
    if a.shape[-2] != b.shape[-2]:
        raise DataError(
            f"series with {a.shape[-2]} and {b.shape[-2]} channels cannot be compared: DTW "
            "needs the same channels"
        )


def dtw_distance(a: np.ndarray, b: np.ndarray, window: int | None = None) -> float:
    """DTW between two series of shape (channels, length); the lengths may differ.

    The minimum over warping paths of the summed squared Euclidean distances between matched
    time points (not square-rooted, as in aeon/sktime). ``window``: Sakoe-Chiba radius in
    time steps (None: unconstrained; 0: the squared Euclidean distance), widened to the
    difference of the lengths if smaller, so that a path always exists.
    """
    window = _check_window(window)
    x, y = _as_series(a, 2, "a"), _as_series(b, 2, "b")
    _check_channels(x, y)
    return float(_dtw_cross(x[None], y[None], window)[0, 0])


def _chunks(n: int, size: int) -> Iterator[slice]:
    for start in range(0, n, size):
        yield slice(start, min(start + size, n))


def nearest_by_dtw(
    queries: np.ndarray | ArrayData,
    reference: np.ndarray | ArrayData,
    window: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """For each query series, the index of its nearest reference series by DTW and the distance.

    ``queries`` (q, C, La) and ``reference`` (r, C, Lb), as arrays or ``ArrayData``. Returns
    ``(indices, distances)``, each of length q; ties go to the lowest index. Pairs are computed
    in blocks of bounded memory.
    """
    window = _check_window(window)
    q = _as_series(queries, 3, "queries")
    r = _as_series(reference, 3, "reference")
    _check_channels(q, r)
    per_pair = q.shape[2] + 1  # cells of one anti-diagonal buffer
    ref_block = max(1, _CELL_BUDGET // per_pair)
    query_block = max(1, _CELL_BUDGET // (per_pair * min(ref_block, len(r))))
    indices = np.zeros(len(q), dtype=np.int64)
    distances = np.full(len(q), np.inf)
    for rows in _chunks(len(q), query_block):
        for cols in _chunks(len(r), ref_block):
            dist = _dtw_cross(q[rows], r[cols], window)
            best = dist.argmin(axis=1)
            value = dist[np.arange(len(best)), best]
            better = value < distances[rows]
            indices[rows] = np.where(better, best + cols.start, indices[rows])
            distances[rows] = np.where(better, value, distances[rows])
    return indices, distances


def autocorrelation(series: np.ndarray | ArrayData, max_lag: int) -> np.ndarray:
    """Mean over series and channels of the sample autocorrelation at lags 0..``max_lag``.

    Each series (and channel) is centred on its own mean and normalised by its own sum of
    squares (the usual biased estimator, 1 at lag 0); constant series carry no correlation
    and are left out. ``max_lag`` is capped at the series length minus 1.
    """
    x = _as_series(series, 3, "series")
    if isinstance(max_lag, bool) or not isinstance(max_lag, int | np.integer) or max_lag < 0:
        raise ValueError(f"max_lag must be a non-negative integer, got {max_lag!r}")
    length = x.shape[2]
    lags = min(int(max_lag), length - 1)
    centred = x - x.mean(axis=2, keepdims=True)
    power = (centred**2).sum(axis=2)
    varying = power > 1e-12
    if not varying.any():
        raise DataError("every series is constant: its autocorrelation is undefined")
    out = np.empty(lags + 1)
    for k in range(lags + 1):
        products = (centred[..., : length - k] * centred[..., k:]).sum(axis=2)
        out[k] = (products[varying] / power[varying]).mean()
    return out


# -- TSTR ----------------------------------------------------------------------------------------
def _knn_dtw_proba(
    x_train: np.ndarray, y_train: np.ndarray, x_test: np.ndarray, k: int, window: int | None
) -> np.ndarray:
    """One-hot "probabilities": the class of each test series' nearest training series."""
    nearest, _ = nearest_by_dtw(x_test, x_train, window)
    return np.eye(k)[y_train[nearest]]


def tstr_accuracy(
    synthetic: ArrayData,
    real_test: ArrayData,
    classes: Sequence[str],
    models: Sequence[str] = SERIES_MODELS,
    seed: int = 0,
    window: int | None = None,
) -> dict[str, MetricResult]:
    """Accuracy on real test series of classifiers trained on ``synthetic`` series.

    "random_forest": scikit-learn's RandomForestClassifier (200 trees, seeded) on the raw,
    flattened values; "knn_dtw": 1-nearest-neighbour by :func:`dtw_distance` (``window`` is
    its Sakoe-Chiba radius). Returns ``{model: MetricResult}`` with ``value`` the accuracy and
    ``details`` the balanced accuracy and ``classes_missing_from_train`` (a synthetic set may
    lack a class: it is named there, never an error). Pass the real training series as
    ``synthetic`` for the real-data reference.
    """
    chosen = check_models(models, SERIES_MODELS)
    window = _check_window(window)
    names = checked_classes(classes)
    x_train = checked_values(synthetic, 3, _LAYOUT, "synthetic")
    x_test = checked_values(real_test, 3, _LAYOUT, "real test")
    check_same_shape(synthetic, real_test)
    y_train = encode_array_labels(synthetic, names, "synthetic")
    y_test = encode_array_labels(real_test, names, "real test")
    results = {}
    for model in chosen:
        if model == "random_forest":
            flat_train, flat_test = (
                x_train.reshape(len(x_train), -1),
                x_test.reshape(len(x_test), -1),
            )
            proba, info = fit_proba("rf", seed, flat_train, y_train, flat_test, len(names))
        else:
            proba, info = _knn_dtw_proba(x_train, y_train, x_test, len(names), window), {}
        pred = Predictions(names, y_test, proba, {**info, "classifier": model, "seed": seed})
        details = prediction_details(pred, y_train, window=window)
        results[model] = MetricResult(f"tstr_accuracy_{model}", details["accuracy"], details)
    return results


# -- plot ----------------------------------------------------------------------------------------
def _draw_pair(ax, generated: np.ndarray, real: np.ndarray, title: str) -> None:
    """Each channel of the generated series (solid) over the same channel of the real (dashed)."""
    for c in range(generated.shape[0]):
        colour = f"C{c % 10}"
        ax.plot(real[c], color=colour, linestyle="--", alpha=0.6, linewidth=1.2)
        ax.plot(generated[c], color=colour, linewidth=1.2)
    ax.set_title(title, fontsize=9)
    ax.tick_params(labelsize=7)


def _label_text(data: np.ndarray | ArrayData, index: int) -> str:
    if isinstance(data, ArrayData) and data.labels is not None:
        return f" ({data.labels[index]})"
    return ""


def plot_nearest(
    synthetic: np.ndarray | ArrayData,
    reference: np.ndarray | ArrayData,
    path: str | Path,
    n: int = 6,
    window: int | None = None,
    overwrite: bool = False,
) -> Path:
    """Write a PNG of the first ``n`` synthetic series, each overlaid on its nearest real series.

    Generated series are solid, their nearest reference series (by :func:`dtw_distance` with
    ``window``) dashed in the same colour per channel; each panel's title gives both indices,
    labels if any, and the DTW distance. A distance near 0 means a near copy of a real record.
    The file is written to a temporary file and renamed into place; an existing ``path`` raises
    ``OutputExistsError`` unless ``overwrite``. Returns the path. Needs matplotlib.
    """
    figure = nearest_figure(synthetic, reference, n, window)
    atomic_write(
        Path(path), lambda tmp: figure.savefig(tmp, format="png", dpi=100), overwrite=overwrite
    )
    return Path(path)


def nearest_figure(
    synthetic: np.ndarray | ArrayData,
    reference: np.ndarray | ArrayData,
    n: int = 6,
    window: int | None = None,
):
    """The matplotlib Figure of :func:`plot_nearest` (for a page that embeds it)."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be a positive integer, got {n!r}")
    shown = _as_series(synthetic, 3, "synthetic")[:n]
    real = _as_series(reference, 3, "reference")
    nearest, distances = nearest_by_dtw(shown, real, window)
    figure = _figure(len(shown))
    for k, ax in enumerate(figure.axes):
        if k >= len(shown):
            ax.set_visible(False)
            continue
        title = (
            f"synthetic #{k}{_label_text(synthetic, k)} vs real #{nearest[k]}"
            f"{_label_text(reference, int(nearest[k]))}\nDTW = {distances[k]:.4g}"
        )
        _draw_pair(ax, shown[k], real[nearest[k]], title)
    figure.suptitle("generated (solid) and nearest real series by DTW (dashed)", fontsize=10)
    return figure


def _figure(panels: int):
    """A matplotlib Figure (Agg canvas, no pyplot global state) with a grid of panels."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        raise DataError("plot_nearest needs matplotlib: pip install matplotlib") from None
    cols = min(3, panels)
    rows = -(-panels // cols)
    figure = Figure(figsize=(4.0 * cols, 2.8 * rows), layout="constrained")
    FigureCanvasAgg(figure)
    figure.subplots(rows, cols, squeeze=False)
    return figure
