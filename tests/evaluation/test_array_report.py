"""Reports of image and time-series models: TSTR, DTW, pictures and attacks on one page."""

from __future__ import annotations

import re

import pytest

from dpforge.datasets.images import load_digits_images
from dpforge.datasets.series import load_italy_power_demand
from dpforge.evaluation.array_report import array_report
from dpforge.evaluation.report import release_report
from dpforge.methods.dpcgan import DPCGANConfig
from dpforge.synthesizer import Synthesizer

pytestmark = pytest.mark.slow

SMALL_IMAGE = {"generator_channels": (16, 8), "discriminator_channels": (8, 16), "latent_dim": 16}
SMALL_SERIES = {"generator_hidden": (16,), "discriminator_hidden": (32,), "latent_dim": 8}


def _fit(schema, data, config, epochs):
    return Synthesizer(
        schema, method="dpcgan", method_options=config, epsilon=50.0, delta=1e-4, seed=0,
        epochs=epochs, progress=False, anchor=None,
    ).fit(data)  # fmt: skip


def images(text: str) -> list[str]:
    return re.findall(r'<img src="([^"]*)"', text)


@pytest.mark.parametrize("kind", ["image", "timeseries"])
def test_array_reports(kind):
    if kind == "image":
        train, test, schema = load_digits_images()
        model = _fit(schema, train, DPCGANConfig(batch_size=32, **SMALL_IMAGE), 2.5)
        measure, pictures = "macro AuROC (logistic regression)", 2
    else:
        train, test, schema = load_italy_power_demand()
        model = _fit(schema, train, DPCGANConfig(batch_size=64, **SMALL_SERIES), 9)
        measure, pictures = "accuracy (random forest)", 4  # bands x 2, autocorrelation, nearest
    text, result = array_report(model, train, test, seed=0, n_synthetic=300)
    assert "NOT DIFFERENTIALLY PRIVATE" in text and "Privacy ledger" in text
    utility = result["utility"]
    assert utility["measure"] == measure and 0 <= utility["mean"]["synthetic"]["auroc_macro"] <= 1
    assert utility["mean"]["real"]["auroc_macro"] > 0.8  # real-data baseline on real test records
    assert set(result["attacks"]["attacks"]) == {"dcr", "domias", "classifier"}
    assert (result["dtw"] is None) == (kind == "image")
    if kind == "timeseries":
        assert result["dtw"]["synthetic_to_train_median"] > 0 and "Nearest real series" in text
        acf = result["autocorrelation"]
        assert acf["real_train"][0] == pytest.approx(1.0)
        assert len(acf["lags"]) == 24  # 24 hourly values: lags 0-23
        # ItalyPowerDemand's daily load curves: strongly correlated at lag 1 in both real sets
        assert acf["real_train"][1] > 0.5 and acf["mean_abs_diff_real_test"] < 0.05
        assert "Autocorrelation" in text and "nearest real series" in text
        assert result["reference"] is None
    else:
        ref = result["reference"]
        assert ref["classifier_test_accuracy"] > 0.75  # the judge itself reads real digits (8x8)
        assert ref["label_fidelity_real_train"] > 0.75
        assert set(ref["label_fidelity_per_class"]) == set(schema.classes)
        assert 1.0 <= ref["inception_score"] <= len(schema.classes)
        assert ref["frechet_real_train_to_test"] < ref["frechet_to_test"]  # a 2.5-epoch GAN
        assert "Label fidelity per class" in text and "label fidelity (reference CNN)" in text
        assert result["autocorrelation"] is None
    assert len(images(text)) == pictures + 1  # the pictures and the ROC curves
    assert all(s.startswith("data:image/png;base64,") for s in images(text))
    public = release_report(model, seed=0)
    assert "NOT DIFFERENTIALLY PRIVATE" not in public and len(images(public)) == 1


def test_cli_report_of_an_image_model(tmp_path, capsys, monkeypatch):
    import sys

    import numpy as np

    from dpforge.cli import main

    train, test, schema = load_digits_images()
    _fit(schema, train, DPCGANConfig(batch_size=32, **SMALL_IMAGE), 2.5).save(tmp_path / "model")
    for name, data in (("train", train), ("test", test)):
        np.savez(tmp_path / f"{name}.npz", x=data.values, y=data.labels.astype(str))
    out = tmp_path / "report.html"
    monkeypatch.setattr(
        sys, "argv",
        ["dpforge", "report", str(tmp_path / "model"), "--real-train", str(tmp_path / "train.npz"),
         "--real-test", str(tmp_path / "test.npz"), "-o", str(out), "--rows", "200"],
    )  # fmt: skip
    with pytest.raises(SystemExit) as exited:
        main()
    captured = capsys.readouterr()
    assert exited.value.code in (0, None), captured.err
    page = out.read_text(encoding="utf-8")
    assert "synthetic images" in page and "Membership-inference attacks" in page
    assert "NOT differentially private" in " ".join(captured.err.split())
