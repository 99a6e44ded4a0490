"""The command line on images and time series, as a user calls it: draft a schema from the
data, review it, fit, sample with a condition; outputs are PNG/npz/grid and CSV/plot."""

from __future__ import annotations

import json

import numpy as np
import pytest
from tests.cli_support import QUIET, merged, options_file

from cli_support import run
from dpforge.data.arrays import ArrayData
from dpforge.data.export import write_images, write_series_csv
from dpforge.data.images import read_images
from dpforge.data.series import read_wide_csv
from dpforge.datasets.images import load_digits_images
from dpforge.datasets.series import load_italy_power_demand

pytestmark = pytest.mark.slow


def _reviewed(path, **changes):
    """What a steward does after reading the draft: declare public values, drop the flag."""
    schema = json.loads(path.read_text())
    schema.pop("review", None)
    schema.update(changes)
    path.write_text(json.dumps(schema))


def test_images_from_a_png_folder(tmp_path, monkeypatch, capsys):
    train, _, _ = load_digits_images()
    pixels = ArrayData(np.rint(train.values * 255 / 16), train.labels)
    write_images(pixels, tmp_path / "digits", npz=False, grid=False)
    folder, schema = tmp_path / "digits" / "images", tmp_path / "schema.json"

    code, out = run(["schema", folder, "-o", schema], monkeypatch, capsys)
    assert code == 0 and "REVIEW NEEDED" in out
    drafted = json.loads(schema.read_text())
    assert drafted["type"] == "image" and drafted["shape"] == [1, 8, 8]
    assert drafted["channels"][0]["lower"] == 0 and drafted["channels"][0]["upper"] == 255
    code, out = run(
        ["fit", folder, "--schema", schema, "--out", tmp_path / "m"], monkeypatch, capsys
    )
    assert code == 2 and "review" in out  # a draft is refused until reviewed
    _reviewed(schema, label_prior="uniform")

    model = tmp_path / "model"
    args = ["fit", folder, "--schema", schema, "--out", model, "--epsilon", "30", "--delta", "1e-4"]
    # the discriminator alone (feature anchoring is the default)
    sections = {"anchor": {"share": 0}, "refine": {"batch_size": 32, "epochs": 2.5}}
    code, out = run([*args, *_refined("dpcgan", sections), "--seed", "0"], monkeypatch, capsys)
    assert code == 0, out
    assert "privacy spent" in out

    images = tmp_path / "sevens"
    code, out = run(
        ["sample", model, "-n", "12", "-o", images, "--condition", "label=7"],
        monkeypatch,
        capsys,
    )
    assert code == 0, out
    assert (images / "grid.png").is_file() and (images / "images.npz").is_file()
    again = read_images(images / "images")
    assert again.values.shape == (12, 1, 8, 8) and set(again.labels) == {"7"}

    arrays_only = tmp_path / "npz-only"
    code, out = run(
        ["sample", model, "-n", "5", "-o", arrays_only, "--image-format", "npz"],
        monkeypatch,
        capsys,
    )
    assert code == 0, out
    assert (arrays_only / "images.npz").is_file() and not (arrays_only / "images").exists()
    assert read_images(arrays_only / "images.npz").values.shape == (5, 1, 8, 8)


def test_time_series_from_a_wide_csv(tmp_path, monkeypatch, capsys):
    train, _, _ = load_italy_power_demand()
    data, schema = tmp_path / "series.csv", tmp_path / "schema.json"
    write_series_csv(train, data, label="class")
    code, out = run(
        ["schema", data, "-o", schema, "--type", "timeseries", "--target", "class"],
        monkeypatch,
        capsys,
    )
    assert code == 0, out
    drafted = json.loads(schema.read_text())
    assert drafted["shape"] == [1, 24] and drafted["channels"][0]["lower"] is None
    _reviewed(schema, label_prior="uniform")

    model, out_csv = tmp_path / "model", tmp_path / "synthetic.csv"
    code, out = run(
        [
            "fit", data, "--schema", schema, "--out", model, "--epsilon", "10", "--delta", "1e-4",
            *_refined("dpwgan", {
                "anchor": {"share": 0}, "refine": {"batch_size": 64, "epochs": 9},
                "output": {"samples": 20, "samples_out": str(out_csv)},
            }),
            "--seed", "0",
        ],
        monkeypatch,
        capsys,
    )  # fmt: skip
    assert code == 0, out
    assert "lower bound of channel" in out  # the range was estimated under DP and charged
    synthetic = read_wide_csv(out_csv, label="class")
    assert synthetic.values.shape == (20, 1, 24)
    assert out_csv.with_suffix(".png").is_file()


def test_images_default_to_moment_anchoring_and_the_statistic_is_checked(
    tmp_path, monkeypatch, capsys
):
    train, _, _ = load_digits_images()
    write_images(ArrayData(np.rint(train.values * 255 / 16), train.labels), tmp_path / "d",
                 npz=False, grid=False)  # fmt: skip
    folder, schema = tmp_path / "d" / "images", tmp_path / "schema.json"
    assert run(["schema", folder, "-o", schema], monkeypatch, capsys)[0] == 0
    _reviewed(schema, label_prior="uniform")
    model = tmp_path / "model"
    args = ["fit", folder, "--schema", schema, "--out", model, "--epsilon", "10"]
    code, out = run([*args, "--delta", "1e-4", "--seed", "0"], monkeypatch, capsys)
    assert code == 0, out
    saved = json.loads((model / "model.json").read_text())
    ledger = json.dumps(saved["privacy"])
    assert "principal subspace" in ledger and "covariance in that subspace" in ledger
    assert saved["config"]["generator_net"] == "gaussian"
    kernels = options_file({"anchor": {"statistic": "kernels"}})
    code, out = run([*args, "--options", kernels, "--overwrite"], monkeypatch, capsys)
    assert code != 0 and "statistic must be one of" in out and "Traceback" not in out


def test_the_command_line_anchors_each_kind_on_its_defaults():
    """[anchor] share alone keeps the data type's defaults (series: the 1-D generator and the
    narrow kernels of feature_anchor_defaults), as the Python API's anchor="auto" does."""
    from dataclasses import replace

    from dpforge.cli.fit_options import anchor_option
    from dpforge.cli.options_file import FitOptions
    from dpforge.kinds.feature_defaults import feature_anchor_defaults

    _, _, series = load_italy_power_demand()
    _, _, images = load_digits_images()
    half = FitOptions(anchor={"share": 0.5})
    assert anchor_option(FitOptions(), series, None, False) == "auto"
    assert anchor_option(half, series, "dpcgan", False) == replace(
        feature_anchor_defaults("timeseries"), share=0.5
    )
    assert anchor_option(FitOptions(anchor={"rank": 8}), images, None, False) == replace(
        feature_anchor_defaults("image"), rank=8
    )
    assert anchor_option(FitOptions(anchor={"share": 0}), series, "dpcgan", False) is None


def _refined(refiner: str, sections: dict) -> list:
    """``--refine`` and an options file holding ``sections`` (no progress bar)."""
    return ["--refine", refiner, "--options", options_file(merged(QUIET, sections))]
