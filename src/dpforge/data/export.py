"""Writing synthetic images and time series: PNG folders, ``.npz``, wide CSV and quick plots.

Every writer refuses to replace an existing output unless ``overwrite=True``
(:class:`~dpforge.errors.OutputExistsError`), and every output appears atomically: a folder is
built in a temporary folder beside the target and renamed into place, a file is written to a
temporary file and renamed. A failed or interrupted write leaves the target as it was.

What is written here is what a released generator produced; these writers read no private
data, so nothing here touches the privacy budget.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from PIL import Image

from dpforge.data.arrays import ArrayData
from dpforge.data.images import sorted_classes
from dpforge.data.series import default_channel_names
from dpforge.errors import DataError, OutputExistsError
from dpforge.storage import FolderKind, atomic_write, replace_folder

GRID_LIMIT = 100
GRID_PAD = 2
GRID_BACKGROUND = 128
IMAGES_FOLDER = "images"
IMAGES_NPZ = "images.npz"
GRID_PNG = "grid.png"


# -- atomic folders ---------------------------------------------------------------------------
def _refuse_existing(target: Path, overwrite: bool) -> None:
    if (target.exists() or target.is_symlink()) and not overwrite:
        raise OutputExistsError(
            f"{target} already exists; choose another name or pass overwrite=True (--overwrite)"
        )


def _is_image_output(path: Path) -> bool:
    return any((path / name).exists() for name in (IMAGES_FOLDER, IMAGES_NPZ, GRID_PNG))


# What write_images writes; an existing folder is replaced only when it holds nothing else.
IMAGE_FOLDER = FolderKind(
    "synthetic images folder", frozenset({IMAGES_FOLDER, IMAGES_NPZ, GRID_PNG}), _is_image_output
)


def atomic_folder(target: Path, build: Callable[[Path], None], *, overwrite: bool) -> None:
    """Call ``build(tmp)`` on a new empty folder beside ``target``, then rename it into place.

    With ``overwrite``, an existing target is replaced only when it is a synthetic images
    folder dpforge wrote, and so that a kill at any moment leaves the old or the new folder
    (:func:`dpforge.storage.replace_folder`).
    """
    target = Path(target)
    _refuse_existing(target, overwrite)
    replace_folder(target, build, IMAGE_FOLDER, overwrite=overwrite)


# -- images -----------------------------------------------------------------------------------
def write_images(
    data: ArrayData,
    folder: str | Path,
    *,
    png: bool = True,
    npz: bool = True,
    grid: bool = True,
    overwrite: bool = False,
) -> Path:
    """Write images (n, channels, height, width), 1 or 3 channels, into a new ``folder``.

    ``images/``: one PNG per record named by its record number (``00000.png``, ...), inside
    one sub-folder per class when labelled, so that :func:`dpforge.data.images.read_images`
    reads it back. ``images.npz``: arrays 'x' (uint8 values) and 'y' (labels as text, when
    labelled). ``grid.png``: up to 100 images for a quick look, one row per class (classes in
    natural order) when labelled. Values are taken to be in the pixel range 0..255 already:
    they are clipped and rounded to uint8. Returns the folder.
    """
    if not (png or npz or grid):
        raise ValueError("nothing to write: png, npz and grid are all False")
    pixels = _uint8_pixels(data)
    labels = None if data.labels is None else np.asarray([str(v) for v in data.labels])
    if png and labels is not None:
        for name in sorted_classes(labels):
            _check_folder_name(name)
    target = Path(folder)

    def build(tmp: Path) -> None:
        if png:
            _write_pngs(tmp / IMAGES_FOLDER, pixels, labels)
        if npz:
            _write_npz(tmp / IMAGES_NPZ, pixels, labels)
        if grid:
            _save_png(image_grid(pixels, labels), tmp / GRID_PNG)

    atomic_folder(target, build, overwrite=overwrite)
    return target


def _uint8_pixels(data: ArrayData) -> np.ndarray:
    values = data.values
    if values.ndim != 4 or values.shape[1] not in (1, 3) or len(values) == 0:
        raise DataError(
            "images to write must be shaped (n, channels, height, width) with n >= 1 and 1 or "
            f"3 channels; got {list(values.shape)}"
        )
    if values.dtype == np.uint8:
        return values
    if values.dtype.kind not in "iubf":
        raise DataError(f"image values must be numbers, got dtype {values.dtype}")
    finite = np.isfinite(values.reshape(len(values), -1)).all(axis=1)
    if not finite.all():
        record = int(np.flatnonzero(~finite)[0])
        raise DataError(
            f"record index {record} holds missing or infinite values ({int((~finite).sum())} "
            "record(s) in all); the generator diverged or the values were damaged"
        )
    return np.rint(np.clip(values, 0, 255)).astype(np.uint8)


def _check_folder_name(name: str) -> None:
    bad = not name or name in (".", "..") or name.startswith(".")
    if bad or any(c in name for c in ("/", "\\", "\0")):
        raise DataError(
            f"class {name!r} cannot be a folder name (empty, hidden, or with a path "
            "separator); rename the class or write with png=False"
        )


def _as_image(pixels: np.ndarray) -> Image.Image:
    """(channels, height, width) uint8 as a Pillow image ('L' or 'RGB')."""
    return Image.fromarray(pixels[0] if pixels.shape[0] == 1 else pixels.transpose(1, 2, 0))


def _save_png(image: Image.Image, path: Path) -> None:
    image.save(path, format="PNG")


def _write_pngs(folder: Path, pixels: np.ndarray, labels: np.ndarray | None) -> None:
    width = max(5, len(str(len(pixels) - 1)))
    folder.mkdir()
    for i, image in enumerate(pixels):
        parent = folder if labels is None else folder / labels[i]
        parent.mkdir(exist_ok=True)
        _save_png(_as_image(image), parent / f"{i:0{width}d}.png")


def _write_npz(path: Path, pixels: np.ndarray, labels: np.ndarray | None) -> None:
    arrays = {"x": pixels} if labels is None else {"x": pixels, "y": labels.astype(str)}
    with path.open("wb") as handle:
        np.savez_compressed(handle, **arrays)


def image_grid(
    pixels: np.ndarray, labels: np.ndarray | None, limit: int = GRID_LIMIT
) -> Image.Image:
    """Up to ``limit`` images (uint8, n x C x H x W) tiled on a gray background.

    Labelled: one row per class in natural order, the first images of each class. Unlabelled:
    the first images in a near-square grid.
    """
    cells = _grid_cells(len(pixels), labels, limit)
    c, h, w = pixels.shape[1:]
    cols = max(len(row) for row in cells)
    canvas = np.full(
        (c, len(cells) * (h + GRID_PAD) + GRID_PAD, cols * (w + GRID_PAD) + GRID_PAD),
        GRID_BACKGROUND,
        dtype=np.uint8,
    )
    for r, row in enumerate(cells):
        for k, index in enumerate(row):
            top, left = GRID_PAD + r * (h + GRID_PAD), GRID_PAD + k * (w + GRID_PAD)
            canvas[:, top : top + h, left : left + w] = pixels[index]
    return _as_image(canvas)


def _grid_cells(n: int, labels: np.ndarray | None, limit: int) -> list[list[int]]:
    if labels is None:
        shown = min(n, limit)
        cols = math.ceil(math.sqrt(shown))
        return [list(range(start, min(start + cols, shown))) for start in range(0, shown, cols)]
    classes = sorted_classes(labels)[:limit]
    per_class = max(1, limit // len(classes))
    return [np.flatnonzero(labels == c)[:per_class].tolist() for c in classes]


# -- time series ------------------------------------------------------------------------------
def _series_values(data: ArrayData) -> np.ndarray:
    values = data.values
    if values.ndim != 3 or len(values) == 0:
        raise DataError(
            f"series to write must be shaped (n, channels, length) with n >= 1; got "
            f"{list(values.shape)}"
        )
    if values.dtype.kind not in "iubf":
        raise DataError(f"series values must be numbers, got dtype {values.dtype}")
    return values


def _channel_names(n_channels: int, channel_names: Sequence[str] | None) -> list[str]:
    names = list(default_channel_names(n_channels) if channel_names is None else channel_names)
    if len(names) != n_channels or len(set(names)) != len(names):
        raise DataError(
            f"the series have {n_channels} channel(s); give as many distinct channel names, "
            f"got {names}"
        )
    return [str(n) for n in names]


def series_columns(
    n_channels: int, length: int, channel_names: Sequence[str] | None = None
) -> list[str]:
    """Wide-CSV column names: t0..t{L-1} for one channel, '<channel>_t<j>' for several."""
    if n_channels == 1:
        return [f"t{j}" for j in range(length)]
    names = _channel_names(n_channels, channel_names)
    return [f"{name}_t{j}" for name in names for j in range(length)]


def write_series_csv(
    data: ArrayData,
    path: str | Path,
    *,
    overwrite: bool = False,
    channel_names: Sequence[str] | None = None,
    label: str = "label",
) -> Path:
    """Write series (n, channels, length) as a wide CSV: one row per series.

    Columns are t0..t{L-1} for one channel and ``<channel>_t<j>`` for several (channel names
    from ``channel_names``, default 'channel_<i>'), then a ``label`` column when labelled. Read
    it back with ``read_wide_csv(path, label=..., channels=...)``. Numbers are written with
    full precision. Returns the path.
    """
    values = _series_values(data)
    n, c, length = values.shape
    if not np.isfinite(values).all():
        raise DataError("the series hold missing or infinite values; they cannot be written")
    columns = series_columns(c, length, _channel_names(c, channel_names))
    frame = pd.DataFrame(values.reshape(n, c * length), columns=columns)
    if data.labels is not None:
        if label in columns:
            raise DataError(f"label column name '{label}' is also a value column: pick another")
        frame[label] = [str(v) for v in data.labels]
    target = Path(path)
    atomic_write(target, lambda tmp: frame.to_csv(tmp, index=False), overwrite=overwrite)
    return target


def plot_series(
    data: ArrayData,
    path: str | Path,
    *,
    n: int = 8,
    overwrite: bool = False,
    channel_names: Sequence[str] | None = None,
) -> Path:
    """Plot ``n`` series (one panel each, every channel a line) into a PNG file.

    Labelled data show the classes in turn (first series of each class, then the second, ...)
    so that every class appears; the panel title names the record and its class. Drawn with
    matplotlib's Agg canvas: no display and no global pyplot state. Returns the path.
    """
    values = _series_values(data)
    if n < 1:
        raise ValueError(f"n must be at least 1, got {n}")
    names = _channel_names(values.shape[1], channel_names)
    labels = None if data.labels is None else np.asarray([str(v) for v in data.labels])
    chosen = _pick_series(len(values), labels, n)
    figure = _series_figure(values, labels, chosen, names)
    target = Path(path)
    atomic_write(
        target, lambda tmp: figure.savefig(tmp, format="png", dpi=100), overwrite=overwrite
    )
    return target


def _pick_series(count: int, labels: np.ndarray | None, n: int) -> list[int]:
    if labels is None:
        return list(range(min(n, count)))
    queues = [np.flatnonzero(labels == c).tolist() for c in sorted_classes(labels)]
    chosen: list[int] = []
    for depth in range(max(len(q) for q in queues)):
        chosen += [q[depth] for q in queues if depth < len(q)]
        if len(chosen) >= n:
            break
    return chosen[:n]


def _series_figure(
    values: np.ndarray, labels: np.ndarray | None, chosen: list[int], names: list[str]
) -> Figure:
    figure = Figure(figsize=(8, 1.6 * len(chosen) + 0.6), layout="constrained")
    FigureCanvasAgg(figure)
    axes = figure.subplots(len(chosen), 1, sharex=True, squeeze=False)[:, 0]
    steps = np.arange(values.shape[2])
    for ax, index in zip(axes, chosen, strict=True):
        for channel, name in enumerate(names):
            ax.plot(steps, values[index, channel], linewidth=1, label=name)
        title = f"record {index}" + ("" if labels is None else f", class {labels[index]}")
        ax.set_title(title, fontsize=9, loc="left")
    if len(names) > 1:
        axes[0].legend(fontsize=8, loc="upper right")
    axes[-1].set_xlabel("time step")
    return figure
