"""``dpforge evaluate`` end to end: fit a table model with the CLI, evaluate it, read the JSON."""

from __future__ import annotations

import json
import math
import sys

import pytest

from cli_support import quiet
from dpforge.cli import main
from dpforge.evaluation.evaluate import HEADLINE_SCORES

FEW = "lr,nb,dt"


def call(args) -> int:
    """Run the console script's entry point with ``args``; return its exit code."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sys, "argv", ["dpforge", *map(str, args)])
        try:
            main()
        except SystemExit as exc:
            return exc.code or 0
    return 0


def run(args, capsys) -> tuple[int, str]:
    """Exit code and everything printed (stderr + stdout)."""
    code = call(args)
    captured = capsys.readouterr()
    return code, captured.err + captured.out


@pytest.fixture(scope="module")
def fitted(tmp_path_factory, cancer):
    """A model fitted by ``dpforge fit`` on 400 cancer rows; the other 169 held out."""
    frame, schema = cancer
    folder = tmp_path_factory.mktemp("evaluate")
    shuffled = frame.sample(frac=1.0, random_state=0).reset_index(drop=True)
    train, test = folder / "train.csv", folder / "test.csv"
    shuffled.iloc[:400].to_csv(train, index=False)
    shuffled.iloc[400:].to_csv(test, index=False)
    (folder / "schema.json").write_text(schema.to_json())
    model = folder / "model"
    code = call(
        ["fit", train, "--schema", folder / "schema.json", "--out", model, "--epsilon", 3]
        + ["--seed", 0, *quiet()]
    )
    assert code == 0
    return model, train, test


def evaluate_args(fitted, out, *extra) -> list:
    model, train, test = fitted
    return ["evaluate", model, "--real-train", train, "--real-test", test, "-o", out, *extra]


def test_evaluate_writes_metrics_json(fitted, tmp_path, capsys):
    out = tmp_path / "metrics.json"
    code, text = run(evaluate_args(fitted, out, "--classifiers", FEW, "--seed", 1), capsys)
    assert code == 0, text
    result = json.loads(out.read_text())
    assert {"notice", "rows", "row_use", "utility", "fidelity", "privacy", "schema"} <= set(result)
    assert result["differentially_private"] is False
    assert result["rows"] == {"real_train": 400, "real_test": 169, "synthetic": 400}
    utility = result["utility"]
    assert set(utility["classifiers"]) == {"lr", "nb", "dt"} and utility["seed"] == 1
    for scores in utility["classifiers"].values():
        assert 0.0 <= scores["synthetic"]["auroc_macro"] <= 1.0
        assert 0.0 <= scores["real"]["auroc_macro"] <= 1.0
        assert scores["synthetic"]["n_test"] == scores["real"]["n_test"] == 169
        assert set(scores["ratio"]) == set(HEADLINE_SCORES)
    fidelity = result["fidelity"]
    assert {"tvd", "ks", "wasserstein1", "association"} <= set(fidelity)
    assert 0.0 <= fidelity["tvd"]["mean_one_way"] <= 1.0
    assert len(fidelity["ks"]["per_column"]) == 6
    privacy = result["privacy"]
    assert privacy["delta"] == 1e-5 and privacy["epsilon"] <= 3.0 + 1e-6
    assert math.isfinite(privacy["epsilon_rdp"]) and privacy["epsilon_rdp"] >= privacy["epsilon"]
    assert privacy["ledger"]["format"] == "dpforge.privacy_ledger" and privacy["entries"]
    flat = " ".join(text.split())
    assert "NOT differentially private" in flat and str(out.name) in flat


def test_evaluate_refuses_to_overwrite(fitted, tmp_path, capsys):
    out = tmp_path / "metrics.json"
    out.write_text("keep me\n")
    code, text = run(evaluate_args(fitted, out, "--classifiers", "lr"), capsys)
    assert code == 2 and "already exists" in text and "--overwrite" in text
    assert out.read_text() == "keep me\n"
    code, text = run(evaluate_args(fitted, out, "--classifiers", "lr", "--overwrite"), capsys)
    assert code == 0, text
    assert json.loads(out.read_text())["format"] == "dpforge.evaluation"


def test_evaluate_rows_and_output_place(fitted, tmp_path, capsys):
    out = tmp_path / "m.json"
    code, text = run(evaluate_args(fitted, out, "--classifiers", "nb", "--rows", 123), capsys)
    assert code == 0, text
    assert json.loads(out.read_text())["rows"]["synthetic"] == 123
    inside = fitted[0] / "metrics.json"
    code, text = run(evaluate_args(fitted, inside, "--classifiers", "nb"), capsys)
    assert code == 2 and "inside the model folder" in text and not inside.exists()


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--classifiers", "lr,xgboost"], "--classifiers"),
        (["--rows", "0"], "--rows"),
    ],
)
def test_evaluate_bad_options(fitted, tmp_path, capsys, extra, message):
    out = tmp_path / "m.json"
    code, text = run(evaluate_args(fitted, out, *extra), capsys)
    assert code == 2 and message in text and not out.exists()


@pytest.mark.slow
def test_evaluate_a_time_series_model(tmp_path, capsys):
    """Series models are evaluated too (they were refused before): utility, DTW, autocorrelation
    and attacks in the JSON, the NOT-private notice on the console."""
    import numpy as np

    from dpforge.datasets.series import load_italy_power_demand
    from dpforge.methods.dpcgan import DPCGANConfig
    from dpforge.synthesizer import Synthesizer

    train, test, schema = load_italy_power_demand()
    config = DPCGANConfig(
        batch_size=64, generator_hidden=(16,), discriminator_hidden=(32,), latent_dim=8
    )
    Synthesizer(
        schema, method="dpcgan", method_options=config, epsilon=10.0, delta=1e-4, seed=0,
        epochs=9, progress=False, anchor=None,
    ).fit(train).save(tmp_path / "model")  # fmt: skip
    for name, data in (("train", train), ("test", test)):
        np.savez(tmp_path / f"{name}.npz", x=data.values, y=data.labels.astype(str))
    out = tmp_path / "m.json"
    args = [tmp_path / "model", tmp_path / "train.npz", tmp_path / "test.npz"]
    code, text = run(evaluate_args(args, out, "--rows", 200), capsys)
    assert code == 0, text
    result = json.loads(out.read_text())
    assert result["data_type"] == "timeseries" and result["rows"]["synthetic"] == 200
    assert result["utility"]["mean"]["real"]["auroc_macro"] > 0.8  # RF accuracy on real series
    assert result["autocorrelation"]["real_train"][0] == pytest.approx(1.0)
    assert set(result["attacks"]["attacks"]) == {"dcr", "domias", "classifier"}
    assert "NOT differentially private" in " ".join(text.split()) and "autocorrelation" in text
    code, _ = run(evaluate_args(args, tmp_path / "n.json", "--rows", 200, "--no-attacks"), capsys)
    assert code == 0 and json.loads((tmp_path / "n.json").read_text())["attacks"] is None


def test_evaluate_checks_real_files_against_the_schema(fitted, tmp_path, capsys):
    model, train, _ = fitted
    bad = tmp_path / "bad.csv"
    bad.write_text("mean_radius,diagnosis\n1.0,benign\n")
    out = tmp_path / "m.json"
    code, text = run(
        ["evaluate", model, "--real-train", train, "--real-test", bad, "-o", out], capsys
    )
    assert code == 2 and "schema does not match" in text and not out.exists()
