"""The plots of series.py: generated series over their nearest training series (DTW),
and generated next to real series per class."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from dpforge.data.arrays import ArrayData
from dpforge.evaluation.series import plot_nearest


def by_class(data: ArrayData, classes, per_class: int) -> ArrayData:
    """The first ``per_class`` series of each class, class after class."""
    index = np.concatenate(
        [np.flatnonzero(data.labels.astype(str) == c)[:per_class] for c in classes]
    )
    return ArrayData(data.values[index], data.labels[index])


def plot_per_class(synthetic: ArrayData, real: ArrayData, classes, path: Path, n: int = 10):
    """A 2 x K grid: ``n`` generated series per class (top), ``n`` real training series of the
    same class (bottom), on common axes."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(4.2 * len(classes), 5.6), layout="constrained")
    FigureCanvasAgg(figure)
    axes = figure.subplots(2, len(classes), sharex=True, sharey=True, squeeze=False)
    for col, name in enumerate(classes):
        for row, (data, what) in enumerate(((synthetic, "generated"), (real, "real (train)"))):
            values = by_class(data, [name], n).values[:, 0]
            ax = axes[row, col]
            for k, series in enumerate(values):
                ax.plot(series, color=f"C{k % 10}", linewidth=1.0, alpha=0.8)
            ax.set_title(f"{what}, class {name} ({len(values)} series)", fontsize=9)
            ax.tick_params(labelsize=7)
            ax.set_xlabel("hour", fontsize=8)
    figure.suptitle("ItalyPowerDemand: generated vs real daily curves per class", fontsize=10)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, format="png", dpi=100)
    return path


def write_plots(out: Path, synthetic: dict[str, ArrayData], train: ArrayData, classes) -> dict:
    """PNGs next to ``out``: nearest-by-DTW pairs and generated series per class."""
    stem = out.with_suffix("")
    files = {}
    for key, data in synthetic.items():
        suffix = "" if key == "private" else "_nonprivate"
        nearest = Path(f"{stem}{suffix}_nearest.png")
        plot_nearest(by_class(data, classes, 3), train, nearest, n=6, overwrite=True)
        per_class = plot_per_class(data, train, classes, Path(f"{stem}{suffix}_per_class.png"))
        files[key] = {"nearest": nearest.name, "per_class": per_class.name}
    return files
