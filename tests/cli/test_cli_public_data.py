"""[data] public_data of the options file: perceptual anchoring for images by default, refused for
other data types before any private record is read."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np

from cli_support import options_file, run
from dpforge.cli.fit_options import anchor_option
from dpforge.cli.options_file import FitOptions
from dpforge.data.arrays import ArrayData
from dpforge.data.export import write_images
from dpforge.datasets.images import load_digits_images
from dpforge.datasets.series import load_italy_power_demand
from dpforge.kinds.feature_defaults import feature_anchor_defaults


def test_a_public_set_makes_perceptual_the_images_default():
    _, _, images = load_digits_images()
    rank = FitOptions(anchor={"rank": 8})
    assert anchor_option(rank, images, None, True) == replace(
        feature_anchor_defaults("image", True), rank=8
    )
    assert feature_anchor_defaults("image", True).statistic == "perceptual"
    assert anchor_option(rank, images, None, False).statistic == "moments"


def test_public_data_for_series_is_refused_before_the_data_are_read(tmp_path, monkeypatch, capsys):
    _, _, schema = load_italy_power_demand()
    schema_path = tmp_path / "schema.json"
    schema_path.write_text(json.dumps(schema.to_dict()))
    missing = tmp_path / "no-such-private-file.csv"  # never opened: the refusal comes first
    public = tmp_path / "public"
    train, _, _ = load_digits_images()
    write_images(ArrayData(np.rint(train.values * 255 / 16), None), public, grid=False)
    args = ["fit", missing, "--schema", schema_path, "--out", tmp_path / "m"]
    options = options_file({"data": {"public_data": str(public / "images")}})
    code, out = run([*args, "--options", options], monkeypatch, capsys)
    assert code != 0 and "[data] public_data is for images" in out and "Traceback" not in out
