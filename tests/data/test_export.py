"""Writers for synthetic output: round trips, atomic folders, refusal to overwrite."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

import dpforge.data.export as export
from dpforge.data.arrays import ArrayData
from dpforge.data.export import image_grid, plot_series, write_images, write_series_csv
from dpforge.data.images import read_image_folder, read_images, read_npz_images
from dpforge.data.series import read_long_csv, read_wide_csv
from dpforge.errors import DataError, OutputExistsError


def _images(n: int, channels: int, labels: list[str] | None = None) -> ArrayData:
    values = np.random.default_rng(1).integers(0, 256, size=(n, channels, 6, 5), dtype=np.uint8)
    return ArrayData(values, None if labels is None else np.asarray(labels, dtype=object))


def _siblings(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


# -- images -----------------------------------------------------------------------------------
def test_gray_labelled_png_folder_round_trip(tmp_path):
    data = _images(7, 1, ["3", "1", "3", "10", "1", "3", "10"])
    out = write_images(data, tmp_path / "synthetic")
    assert _siblings(out) == ["grid.png", "images", "images.npz"]
    assert _siblings(out / "images") == ["1", "10", "3"]
    assert _siblings(out / "images" / "3") == ["00000.png", "00002.png", "00005.png"]
    back = read_image_folder(out / "images")
    order = [1, 4, 0, 2, 5, 3, 6]  # classes in natural order 1, 3, 10; records in order
    np.testing.assert_array_equal(back.values, data.values[order])
    assert back.labels.tolist() == data.labels[order].tolist()
    npz = read_npz_images(out / "images.npz")
    np.testing.assert_array_equal(npz.values, data.values)
    assert npz.labels.tolist() == data.labels.tolist()


def test_rgb_unlabelled_round_trip_and_grid(tmp_path):
    data = _images(5, 3)
    out = write_images(data, tmp_path / "rgb", npz=False)
    assert _siblings(out) == ["grid.png", "images"]
    back = read_images(out / "images")
    assert back.labels is None
    np.testing.assert_array_equal(back.values, data.values)
    with Image.open(out / "grid.png") as grid:
        assert grid.mode == "RGB"
        assert grid.size == (3 * (5 + 2) + 2, 2 * (6 + 2) + 2)  # 5 images: 3 columns, 2 rows


def test_float_values_are_clipped_and_rounded(tmp_path):
    values = np.array([[[[-3.0, 0.4, 0.6, 254.5, 300.0]]]])
    out = write_images(ArrayData(values), tmp_path / "f", png=False, grid=False)
    assert read_npz_images(out / "images.npz").values.ravel().tolist() == [0, 0, 1, 254, 255]


def test_grid_has_one_row_per_class():
    data = _images(120, 1, [str(i % 3) for i in range(120)])
    grid = np.asarray(image_grid(data.values, np.asarray(data.labels, dtype=str)))
    assert grid.shape == (3 * (6 + 2) + 2, 33 * (5 + 2) + 2)  # 100 // 3 = 33 cells per row
    first_of_class_2 = data.values[2, 0]
    np.testing.assert_array_equal(grid[2 * 8 + 2 : 2 * 8 + 8, 2:7], first_of_class_2)


def test_existing_output_is_refused_and_left_untouched(tmp_path):
    target = tmp_path / "out"
    target.mkdir()
    (target / "mine.txt").write_text("user data")
    with pytest.raises(OutputExistsError, match="already exists.*overwrite"):
        write_images(_images(2, 1), target)
    assert _siblings(target) == ["mine.txt"]
    assert _siblings(tmp_path) == ["out"]  # no temporary folder left behind


def test_overwrite_replaces_atomically(tmp_path):
    target = tmp_path / "out"
    write_images(_images(2, 1), target)
    write_images(_images(3, 1), target, png=False, grid=False, overwrite=True)
    assert _siblings(target) == ["images.npz"]
    assert len(read_npz_images(target / "images.npz")) == 3
    assert _siblings(tmp_path) == ["out"]


def test_failed_write_leaves_no_partial_output(tmp_path, monkeypatch):
    def broken(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(export, "_write_npz", broken)
    target = tmp_path / "out"
    write_images(_images(2, 1), target, npz=False)
    with pytest.raises(OSError, match="disk full"):
        write_images(_images(3, 1), target, overwrite=True)
    assert _siblings(target) == ["grid.png", "images"]  # the previous output, intact
    assert _siblings(tmp_path) == ["out"]


@pytest.mark.parametrize(
    ("data", "kwargs", "error", "pattern"),
    [
        (ArrayData(np.zeros((2, 2, 3, 3))), {}, DataError, r"1 or 3 channels; got \[2, 2, 3, 3"),
        (ArrayData(np.full((1, 1, 2, 2), np.nan)), {}, DataError, "record index 0 holds missing"),
        (_images(2, 1, ["a/b", "c"]), {}, DataError, "class 'a/b' cannot be a folder name"),
        (_images(2, 1, [".hidden", "c"]), {}, DataError, "class '.hidden' cannot be a folder"),
        (_images(2, 1), {"png": False, "npz": False, "grid": False}, ValueError, "nothing to"),
    ],
)
def test_write_images_errors(tmp_path, data, kwargs, error, pattern):
    with pytest.raises(error, match=pattern):
        write_images(data, tmp_path / "out", **kwargs)
    assert not (tmp_path / "out").exists()


def test_bad_class_names_are_fine_without_png_files(tmp_path):
    out = write_images(_images(2, 1, ["a/b", "c"]), tmp_path / "out", png=False)
    assert read_npz_images(out / "images.npz").labels.tolist() == ["a/b", "c"]


# -- time series ------------------------------------------------------------------------------
def test_series_csv_round_trip_one_channel(tmp_path):
    values = np.random.default_rng(2).normal(size=(4, 1, 6))
    data = ArrayData(values, np.asarray(["u", "v", "u", "v"], dtype=object))
    path = write_series_csv(data, tmp_path / "s.csv")
    assert path.read_text().splitlines()[0] == "t0,t1,t2,t3,t4,t5,label"
    back = read_wide_csv(path, label="label")
    np.testing.assert_array_equal(back.values, values)  # full precision
    assert back.labels.tolist() == ["u", "v", "u", "v"]


def test_long_to_wide_round_trip_with_channels(tmp_path):
    long_text = "id,time,temp,hum\nb,1,3,0.3\na,0,1,0.1\nb,0,2,0.2\na,1,2,0.2\n"
    (tmp_path / "l.csv").write_text(long_text)
    data = read_long_csv(tmp_path / "l.csv")
    path = write_series_csv(data, tmp_path / "w.csv", channel_names=["temp", "hum"])
    assert path.read_text().splitlines()[0] == "temp_t0,temp_t1,hum_t0,hum_t1"
    back = read_wide_csv(path, channels=["temp", "hum"])
    np.testing.assert_array_equal(back.values, data.values)
    assert back.values[0].tolist() == [[2, 3], [0.2, 0.3]]  # series b comes first


def test_series_csv_refuses_overwrite_and_bad_input(tmp_path):
    path = tmp_path / "s.csv"
    path.write_text("keep me")
    data = ArrayData(np.zeros((2, 2, 3)))
    with pytest.raises(OutputExistsError, match="already exists"):
        write_series_csv(data, path)
    assert path.read_text() == "keep me"
    write_series_csv(data, path, overwrite=True)
    assert path.read_text().splitlines()[0].startswith("channel_0_t0,")
    with pytest.raises(DataError, match="2 channel.*distinct channel names"):
        write_series_csv(data, tmp_path / "x.csv", channel_names=["a"])
    with pytest.raises(DataError, match="missing or infinite"):
        write_series_csv(ArrayData(np.full((1, 1, 2), np.inf)), tmp_path / "x.csv")
    labelled = ArrayData(np.zeros((1, 1, 2)), np.asarray(["a"], dtype=object))
    with pytest.raises(DataError, match="'t1' is also a value column"):
        write_series_csv(labelled, tmp_path / "x.csv", label="t1")
    with pytest.raises(DataError, match=r"\(n, channels, length\)"):
        write_series_csv(ArrayData(np.zeros((2, 3))), tmp_path / "x.csv")
    assert not (tmp_path / "x.csv").exists()


def test_plot_series_writes_a_png(tmp_path):
    values = np.sin(np.linspace(0, 6, 40)).reshape(1, 2, 20).repeat(5, axis=0)
    data = ArrayData(values, np.asarray(list("aabbc"), dtype=object))
    path = plot_series(data, tmp_path / "plot.png", n=3, channel_names=["x", "y"])
    with Image.open(path) as image:
        assert image.format == "PNG" and image.size[0] == 800
    with pytest.raises(OutputExistsError):
        plot_series(data, path)
    plot_series(ArrayData(values[:, :1]), path, overwrite=True)
    with pytest.raises(ValueError, match="n must be at least 1"):
        plot_series(data, tmp_path / "other.png", n=0)
    assert _siblings(tmp_path) == ["plot.png"]


def test_plotted_series_cover_every_class():
    labels = np.asarray(list("aaabbc"))
    assert export._pick_series(6, labels, 4) == [0, 3, 5, 1]
    assert export._pick_series(6, None, 4) == [0, 1, 2, 3]
    assert export._pick_series(2, None, 8) == [0, 1]
