"""``dpforge privacy``: the calculator's three modes, JSON output and refused combinations."""

from __future__ import annotations

import json

import pytest
import typer
from typer.testing import CliRunner

from dpforge.cli.privacy import privacy
from dpforge.errors import PrivacyError
from dpforge.privacy.accounting import dpsgd_event, epsilon

MNIST = ["-n", "60000", "--batch-size", "600"]
THYROID = ["--dataset-size", "3772", "-b", "32"]


def _app() -> typer.Typer:
    app = typer.Typer()
    app.command("privacy")(privacy)

    @app.callback()
    def main() -> None:  # a callback keeps "privacy" a subcommand, as in the real app
        """dpforge (test)."""

    return app


def _run(*args: str):
    return CliRunner().invoke(_app(), ["privacy", *args])


def _json(*args: str) -> dict:
    result = _run(*args, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_pinned_mnist_run_table() -> None:
    result = _run(*MNIST, "--noise-multiplier", "1.15", "--steps", "24900")
    assert result.exit_code == 0, result.output
    out = result.output
    assert "8.17" in out  # PLD, reported
    assert "8.81" in out  # RDP 8.8019, rounded up: a printed bound is never below the computed one
    assert "24,900" in out and "0.01" in out and "249.00" in out
    assert "ε (PLD, reported)" in out and "ε (RDP)" in out


def test_pinned_mnist_run_json() -> None:
    data = _json(*MNIST, "--sigma", "1.15", "--steps", "24900")
    assert data["solved"] == "epsilon"
    assert data["epsilon_rdp"] == pytest.approx(8.80, abs=0.01)
    assert data["epsilon_pld"] == pytest.approx(8.17, abs=0.01)
    assert data["epsilon"] == data["epsilon_pld"] and data["accountant"] == "pld"
    assert data["sample_rate"] == 0.01 and data["steps"] == 24900 and data["delta"] == 1e-5


def test_epochs_become_rounded_steps() -> None:
    data = _json(*THYROID, "--sigma", "1.15", "--epochs", "50")
    assert data["steps"] == 5894  # round(50 · 3772 / 32)
    assert data["epsilon_rdp"] == pytest.approx(3.24, abs=0.01)
    assert data["epsilon_pld"] == pytest.approx(2.97, abs=0.01)


def test_noise_for_target_epsilon() -> None:
    data = _json(*THYROID, "--epsilon", "3", "--epochs", "50")
    assert data["solved"] == "noise_multiplier" and data["target_epsilon"] == 3.0
    sigma = data["noise_multiplier"]
    assert 1.1 < sigma < 1.15  # 1.15 gives 2.97 < 3
    assert data["epsilon_pld"] <= 3.0
    assert epsilon(dpsgd_event(32 / 3772, sigma, 5894), 1e-5) == data["epsilon_pld"]
    assert data["epsilon_rdp"] > 3.0  # shown for comparison; PLD is the calibrated one

    table = _run(*THYROID, "--epsilon", "3", "--epochs", "50").output
    assert f"{sigma:.4f}" in table and "← computed" in table


def test_steps_for_target_epsilon() -> None:
    data = _json(*THYROID, "--epsilon", "3", "--sigma", "1.15")
    assert data["solved"] == "steps"
    assert data["steps"] >= 5894 and data["epsilon_pld"] <= 3.0
    assert data["epochs"] == pytest.approx(data["steps"] * 32 / 3772)
    beyond = epsilon(dpsgd_event(32 / 3772, 1.15, data["steps"] + 1), 1e-5)
    assert beyond > 3.0


def test_non_private_baseline_prints_infinity() -> None:
    assert "∞" in _run(*MNIST, "--sigma", "0", "--steps", "10").output
    assert _json(*MNIST, "--sigma", "0", "--steps", "10")["epsilon"] == "inf"


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--steps", "100"], "give --noise-multiplier (to compute epsilon) or --epsilon"),
        (["--sigma", "1.0"], "give --epochs or --steps"),
        (["--epsilon", "1.0"], "give --epochs or --steps"),
        (["--sigma", "1", "--epsilon", "1", "--steps", "9"], "all given; leave out the one"),
        (["--sigma", "1", "--epochs", "1", "--steps", "9"], "--epochs and --steps were both"),
        (["--sigma", "1", "--steps", "9", "--delta", "1e-4"], "not below 1/N = 1/60000"),
        (["--sigma", "1", "--steps", "9", "--delta", "0"], "delta=0.0 must be in (0, 1)"),
        (["--sigma", "1", "--epochs", "0"], "--epochs=0.0 must be a positive number"),
        (["--sigma", "1", "--epochs", "0.001"], "less than one step"),
        (["--sigma", "-1", "--steps", "9"], "noise_multiplier=-1.0"),
        (["--epsilon", "-1", "--steps", "9"], "epsilon=-1.0"),
    ],
)
def test_bad_combinations_raise_privacy_error(args: list[str], fragment: str) -> None:
    result = _run(*MNIST, *args)
    assert isinstance(result.exception, PrivacyError), result.output
    message = str(result.exception)
    assert fragment in message and "\n" not in message


def test_batch_larger_than_data_is_refused() -> None:
    result = _run("-n", "100", "-b", "200", "--sigma", "1", "--steps", "10")
    assert isinstance(result.exception, PrivacyError)
    assert "--batch-size=200 must be between 1 and the data set size 100" in str(result.exception)


def test_no_step_fits_says_so() -> None:
    result = _run("-n", "1000", "-b", "100", "--epsilon", "0.01", "--sigma", "0.5")
    assert result.exit_code == 0, result.output
    assert "Not even one step fits the target" in result.output
    assert _json("-n", "1000", "-b", "100", "--epsilon", "0.01", "--sigma", "0.5")["steps"] == 0
