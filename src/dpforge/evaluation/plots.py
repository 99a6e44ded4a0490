"""The report's figures, drawn with matplotlib (Agg) and returned as base64 PNG data URIs.

Every figure is embedded in the HTML page (``<img src="data:image/png;base64,...">``), so the
report is one file that needs no server and loads nothing from elsewhere.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402 (the backend is chosen first)
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from dpforge.schema.table import Column, Schema  # noqa: E402
from dpforge.statistics.bins import numeric_bins  # noqa: E402

__all__ = [
    "association_heatmaps",
    "density_pair",
    "figure_uri",
    "histograms",
    "plot_edges",
    "image_grid",
    "roc_curves",
    "series_panels",
    "autocorrelations",
]

REAL, SYNTHETIC = "#1f77b4", "#d62728"
MAX_CATEGORIES = 20  # categories drawn per column (the most frequent in the first table)


def figure_uri(fig) -> str:
    """The figure as a PNG data URI; the figure is closed."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=90, bbox_inches="tight")
    plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def plot_edges(column: Column, n_bins: int) -> np.ndarray:
    """Histogram edges on the column's public cells: interior cell edges, or for an integer
    column of small range, one cell per whole number."""
    bins = numeric_bins(column, n_bins)
    if bins.edges.size:
        return bins.edges
    return np.r_[bins.values - 0.5, bins.values[-1] + 0.5]


def _numeric_panel(ax, column: Column, tables: Sequence[tuple[str, pd.DataFrame, str]]) -> None:
    edges = plot_edges(column, 24)
    for name, table, colour in tables:
        values = np.clip(table[column.name].to_numpy(dtype=float), edges[0], edges[-1])
        shares = np.histogram(values, bins=edges)[0] / max(1, len(values))
        ax.bar(np.arange(len(shares)), shares, width=1.0, alpha=0.5, color=colour, label=name)
    ticks = np.linspace(0, len(edges) - 2, 4).round().astype(int)
    ax.set_xticks(ticks, [f"{edges[t]:.4g}" for t in ticks])


def _categorical_panel(ax, column: Column, tables: Sequence[tuple[str, pd.DataFrame, str]]) -> None:
    first = tables[0][1][column.name].astype(str).value_counts(normalize=True)
    order = [c for c in first.index if c in column.categories][:MAX_CATEGORIES]
    order += [c for c in column.categories if c not in order][: MAX_CATEGORIES - len(order)]
    width = 0.8 / len(tables)
    x = np.arange(len(order))
    for i, (name, table, colour) in enumerate(tables):
        share = table[column.name].astype(str).value_counts(normalize=True)
        ax.bar(x + i * width, [share.get(c, 0.0) for c in order], width, color=colour, label=name)
    ax.set_xticks(x + width * (len(tables) - 1) / 2)
    ax.set_xticklabels([c[:12] for c in order], rotation=90, fontsize=6)


def histograms(schema: Schema, tables: Sequence[tuple[str, pd.DataFrame]]) -> str:
    """One panel per column, the given tables side by side: the share of rows in each public
    cell (numeric columns: one bar per cell, ticks at cell lower edges; cells may be
    log-spaced), or of each category."""
    coloured = [(n, t, c) for (n, t), c in zip(tables, (REAL, SYNTHETIC), strict=False)]
    if len(tables) == 1:
        coloured = [(tables[0][0], tables[0][1], SYNTHETIC)]
    cols = 4
    rows = -(-len(schema.columns) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(3.2 * cols, 2.6 * rows), squeeze=False)
    for ax, column in zip(axes.flat, schema.columns, strict=False):
        if column.is_numeric:
            _numeric_panel(ax, column, coloured)
        else:
            _categorical_panel(ax, column, coloured)
        ax.set_title(column.name, fontsize=9)
        ax.tick_params(labelsize=6)
    for ax in list(axes.flat)[len(schema.columns) :]:
        ax.axis("off")
    axes.flat[0].legend(fontsize=7)
    fig.tight_layout()
    return figure_uri(fig)


def association_heatmaps(matrices: Sequence[tuple[str, pd.DataFrame]]) -> str:
    """Association matrices side by side (0..1; a difference matrix is drawn on 0..1 too)."""
    fig, axes = plt.subplots(1, len(matrices), figsize=(5.2 * len(matrices), 4.6), squeeze=False)
    for ax, (title, matrix) in zip(axes.flat, matrices, strict=True):
        image = ax.imshow(matrix.to_numpy(dtype=float), vmin=0.0, vmax=1.0, cmap="viridis")
        names = [str(n)[:14] for n in matrix.columns]
        ax.set_xticks(range(len(names)), names, rotation=90, fontsize=6)
        ax.set_yticks(range(len(names)), names, fontsize=6)
        ax.set_title(title, fontsize=9)
        fig.colorbar(image, ax=ax, fraction=0.046)
    fig.tight_layout()
    return figure_uri(fig)


def density_pair(
    schema: Schema, pair: tuple[str, str], tables: Sequence[tuple[str, pd.DataFrame]]
) -> str:
    """2-D histograms of a numeric pair (Frigerio et al. Fig. 1), one panel per table."""
    x, y = (schema.column(n) for n in pair)
    ex, ey = plot_edges(x, 32), plot_edges(y, 32)
    fig, axes = plt.subplots(1, len(tables), figsize=(4.4 * len(tables), 3.8), squeeze=False)
    for ax, (name, table) in zip(axes.flat, tables, strict=True):
        xs = np.clip(table[x.name].to_numpy(dtype=float), ex[0], ex[-1])
        ys = np.clip(table[y.name].to_numpy(dtype=float), ey[0], ey[-1])
        ax.hist2d(xs, ys, bins=[ex, ey], density=True, cmap="magma")
        ax.set_xlabel(x.name, fontsize=8)
        ax.set_ylabel(y.name, fontsize=8)
        ax.set_title(name, fontsize=9)
    fig.tight_layout()
    return figure_uri(fig)


def roc_curves(attacks: dict) -> str:
    """The ROC curve of every attack, with the diagonal of guessing."""
    fig, ax = plt.subplots(figsize=(4.6, 4.2))
    for name, result in attacks.items():
        roc = result["roc"]
        ax.plot(roc["fpr"], roc["tpr"], label=f"{name} (AUC {result['auc']:.3f})")
    ax.plot([0, 1], [0, 1], color="grey", linestyle="--", label="guessing")
    ax.set_xlabel("false-positive rate (non-members accused)")
    ax.set_ylabel("true-positive rate (members found)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return figure_uri(fig)


def image_grid(images: np.ndarray, labels: Sequence[str] | None, per_class: int = 8) -> str:
    """Images (n, channels, h, w) scaled to [0, 1] in a grid: one row per class (or rows of 8)."""
    rows: list[tuple[str, np.ndarray]] = []
    if labels is None:
        for start in range(0, min(len(images), 32), per_class):
            rows.append(("", images[start : start + per_class]))
    else:
        labels = np.asarray(labels).astype(str)
        for cls in dict.fromkeys(labels.tolist()):
            rows.append((cls, images[labels == cls][:per_class]))
    fig, axes = plt.subplots(len(rows), per_class, figsize=(per_class * 0.9, len(rows) * 0.95))
    axes = np.atleast_2d(axes)
    for r, (cls, block) in enumerate(rows):
        for c in range(per_class):
            ax = axes[r, c]
            ax.axis("off")
            if c < len(block):
                picture = np.moveaxis(block[c], 0, -1)
                ax.imshow(
                    picture[..., 0] if picture.shape[-1] == 1 else picture,
                    cmap="gray",
                    vmin=0,
                    vmax=1,
                )
        axes[r, 0].set_title(cls, fontsize=7, loc="left")
    return figure_uri(fig)


def series_panels(
    series: np.ndarray, labels: Sequence[str] | None, title: str, colour: str = SYNTHETIC
) -> str:
    """Per class: mean and 10-90 % band of the series (first channel) over time, in ``colour``
    (the synthetic colour by default; pass ``REAL`` for real series)."""
    labels = np.zeros(len(series)).astype(str) if labels is None else np.asarray(labels).astype(str)
    classes = list(dict.fromkeys(labels.tolist()))
    fig, axes = plt.subplots(1, len(classes), figsize=(3.6 * len(classes), 2.8), squeeze=False)
    for ax, cls in zip(axes.flat, classes, strict=True):
        block = series[labels == cls][:, 0, :]
        t = np.arange(block.shape[1])
        ax.fill_between(t, *np.percentile(block, [10, 90], axis=0), alpha=0.3, color=colour)
        ax.plot(t, block.mean(axis=0), color=colour)
        ax.set_title(f"{title}: class {cls}", fontsize=8)
    fig.tight_layout()
    return figure_uri(fig)


def autocorrelations(curves: Sequence[tuple[str, np.ndarray]]) -> str:
    """Mean autocorrelation against lag, one line per set of series."""
    fig, ax = plt.subplots(figsize=(5.0, 3.2))
    styles = {"synthetic": (SYNTHETIC, "-"), "real (training)": (REAL, "-")}
    for name, curve in curves:
        colour, line = styles.get(name, ("grey", "--"))
        ax.plot(np.arange(len(curve)), curve, color=colour, linestyle=line, marker=".", label=name)
    ax.axhline(0.0, color="black", linewidth=0.5)
    ax.set_xlabel("lag (time steps)")
    ax.set_ylabel("mean autocorrelation")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return figure_uri(fig)
