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
from matplotlib.colors import LogNorm  # noqa: E402
from matplotlib.ticker import FuncFormatter, MaxNLocator  # noqa: E402

from dpforge.schema.dates import SECONDS  # noqa: E402
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


def _tick_text(value: float, column: Column) -> str:
    """A tick as a reader writes the value: a date for a date column, a plain number else."""
    if column.is_time:
        stamp = pd.to_datetime(value * SECONDS[column.type], unit="s")
        return stamp.strftime("%Y-%m-%d" if column.type == "date" else "%Y-%m-%d %H:%M")
    return f"{value:,.4g}"


def _numeric_panel(ax, column: Column, tables: Sequence[tuple[str, pd.DataFrame, str]]) -> None:
    """Shares per public cell, drawn at the cells' true positions: a column whose cells span
    several orders of magnitude gets a symmetric-log axis, so ticks read as plain values."""
    edges = plot_edges(column, 24)
    for name, table, colour in tables:
        values = table[column.name].to_numpy(dtype=float)
        values = np.clip(values[~np.isnan(values)], edges[0], edges[-1])
        shares = np.histogram(values, bins=edges)[0] / max(1, len(values))
        ax.stairs(shares, edges, fill=True, alpha=0.45, color=colour, label=name)
    widths = np.diff(edges)
    if widths.max() > 20 * widths.min() and not column.is_time:
        ax.set_xscale("symlog", linthresh=max(float(widths.min()), 1e-9))
    else:
        ax.xaxis.set_major_locator(MaxNLocator(4))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda value, _: _tick_text(value, column)))
    ax.set_ylabel("share of rows", fontsize=6)


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


def _missing_text(column: Column, tables: Sequence[tuple[str, pd.DataFrame, str]]) -> str:
    """The share of empty cells of a nullable column in each table, for its panel's title."""
    if not column.nullable:
        return ""
    shares = [f"{name} {table[column.name].isna().mean():.0%}" for name, table, _ in tables]
    return "\nmissing: " + ", ".join(shares)


def histograms(schema: Schema, tables: Sequence[tuple[str, pd.DataFrame]]) -> str:
    """One panel per column, the given tables side by side: the share of rows in each public
    cell (numeric columns: drawn at the cells' true positions; dates as dates), or of each
    category; a nullable column's title gives each table's share of empty cells."""
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
        ax.set_title(column.name + _missing_text(column, coloured), fontsize=8)
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
    """2-D histograms of a numeric pair (Frigerio et al. Fig. 1), one panel per table: the
    share of rows per cell on a log colour scale, empty cells white, so a few dense cells do
    not leave the rest of the panel black."""
    x, y = (schema.column(n) for n in pair)
    ex, ey = plot_edges(x, 32), plot_edges(y, 32)
    shares = [_cell_shares(table, (x.name, y.name), (ex, ey)) for _, table in tables]
    seen = np.concatenate([s[~np.isnan(s)] for s in shares])
    norm = LogNorm(*(seen.min(), seen.max()) if seen.size else (1e-3, 1.0))  # one scale for all
    fig, axes = plt.subplots(1, len(tables), figsize=(4.4 * len(tables), 3.8), squeeze=False)
    for ax, (name, _), cells in zip(axes.flat, tables, shares, strict=True):
        image = ax.pcolormesh(ex, ey, cells.T, cmap="viridis", norm=norm)
        ax.set_xlabel(x.name, fontsize=8)
        ax.set_ylabel(y.name, fontsize=8)
        ax.set_title(name, fontsize=9)
    fig.colorbar(image, ax=list(axes.flat), fraction=0.046, label="share of rows (log)")
    return figure_uri(fig)


def _cell_shares(
    table: pd.DataFrame, names: tuple[str, str], edges: tuple[np.ndarray, np.ndarray]
) -> np.ndarray:
    """The share of the table's complete rows in each 2-D cell; NaN (drawn white) where empty."""
    xs, ys = (table[n].to_numpy(dtype=float) for n in names)
    keep = ~(np.isnan(xs) | np.isnan(ys))
    xs, ys = (np.clip(v[keep], e[0], e[-1]) for v, e in zip((xs, ys), edges, strict=True))
    counts = np.histogram2d(xs, ys, bins=list(edges))[0]
    return np.where(counts > 0, counts / max(1, keep.sum()), np.nan)


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
