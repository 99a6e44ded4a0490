"""`dpforge budget show|set` and the fit command's budget file, as a user calls them."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

import pytest

from cli_support import fast, quiet, run
from dpforge.privacy.budget import BUDGET_SUFFIX

FAST = {"refine": {"epochs": 12, "noise_multiplier": None}}
UNRECORDED = {**FAST, "privacy": {"record_budget": False}}


def _fit(data, schema_path, out, monkeypatch, capsys, *extra, sections=FAST):
    args = ["fit", data, "--schema", schema_path, "--epsilon", "2", "--out", out]
    return run([*args, *fast(sections), *extra], monkeypatch, capsys)


@pytest.mark.slow
def test_fits_are_composed_and_the_run_beyond_the_total_refused(
    files, tmp_path, monkeypatch, capsys
):
    data, schema_path = files
    budget_file = tmp_path / ("data.csv" + BUDGET_SUFFIX)
    code, out = run(
        ["budget", "set", data, "--epsilon", "2.5", "--delta", "1e-5"], monkeypatch, capsys
    )
    assert code == 0, out
    code, out = _fit(data, schema_path, tmp_path / "m1", monkeypatch, capsys)
    assert code == 0, out
    assert "data set budget" in out and "over 1 run(s)" in out and "total ε = 2.5" in out
    code, out = _fit(data, schema_path, tmp_path / "m2", monkeypatch, capsys)
    assert code == 2
    lines = [line for line in out.splitlines() if line.startswith("error")]
    assert len(lines) == 1 and "refused before training" in lines[0]
    assert not (tmp_path / "m2").exists()
    saved = json.loads(budget_file.read_text())
    assert len(saved["runs"]) == 1
    code, out = run(["budget", "show", data], monkeypatch, capsys)
    assert code == 0 and "dpcgan discriminator" in out and "over 1 run(s)" in out
    # Opting out is explicit, and said.
    code, out = _fit(data, schema_path, tmp_path / "m3", monkeypatch, capsys, sections=UNRECORDED)
    assert code == 0 and "not recorded in a budget file" in out
    assert len(json.loads(budget_file.read_text())["runs"]) == 1


def test_show_without_a_file_and_an_explicit_budget_path(files, tmp_path, monkeypatch, capsys):
    data, _ = files
    code, out = run(["budget", "show", data], monkeypatch, capsys)
    assert code == 0 and "no budget file yet" in out
    elsewhere = tmp_path / "central" / "adult-budget.json"
    code, out = run(
        ["budget", "set", data, "--epsilon", "4", "--delta", "1e-6", "--budget", elsewhere],
        monkeypatch,
        capsys,
    )
    assert code == 0 and elsewhere.exists()
    assert not (tmp_path / ("data.csv" + BUDGET_SUFFIX)).exists()
    code, out = run(["budget", "show", data, "--budget", elsewhere], monkeypatch, capsys)
    assert code == 0 and "nothing spent yet" in out and "total ε = 4" in out


def test_bad_budget_input_is_one_line(files, tmp_path, monkeypatch, capsys):
    data, schema_path = files
    code, out = run(
        ["budget", "set", data, "--epsilon", "-1", "--delta", "1e-5"], monkeypatch, capsys
    )
    assert code == 2 and "total epsilon" in out
    code, out = run(["budget", "show", tmp_path / "missing.csv"], monkeypatch, capsys)
    assert code == 2 and "does not exist" in out
    code, out = _fit(
        data,
        schema_path,
        tmp_path / "m",
        monkeypatch,
        capsys,
        "--budget",
        tmp_path / "b.json",
        sections=UNRECORDED,
    )
    assert code == 2 and "not both" in out


def test_an_unwritable_budget_place_fails_before_training(files, tmp_path, monkeypatch, capsys):
    data, schema_path = files
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the budget's folder should be")
    code, out = _fit(data, schema_path, tmp_path / "m", monkeypatch, capsys, "--budget",
                     blocker / "budget.json")  # fmt: skip
    assert code == 2 and "cannot write the budget file" in out and "record_budget = false" in out
    assert not (tmp_path / "m").exists()


@pytest.mark.slow
def test_a_killed_fit_has_already_charged_its_budget(files, tmp_path):
    """Write-ahead: SIGKILL the fit as soon as its reservation is in the budget file; it
    stays, the file is complete JSON, and nothing half-written is left beside the data."""
    data, schema_path = files
    budget_file = tmp_path / ("data.csv" + BUDGET_SUFFIX)
    args = ["fit", data, "--schema", schema_path, "--epsilon", "2", "--out", tmp_path / "m"]
    args += fast({"refine": {"epochs": 60, "noise_multiplier": None}}, seed=None)
    process = subprocess.Popen(
        [sys.executable, "-c", "from dpforge.cli import main; main()", *map(str, args)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 120
    while not budget_file.exists() and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    process.send_signal(signal.SIGKILL)
    process.wait(30)
    assert process.returncode == -signal.SIGKILL  # killed while training, not finished
    saved = json.loads(budget_file.read_text())
    assert len(saved["runs"]) == 1
    run = saved["runs"][0]
    entries = run["ledger"]["entries"]
    # Killed at once after the file appeared: the run's whole target is reserved (counted as
    # one Gaussian at epsilon = 2), or, if the kill came later, settled with the planned steps.
    reserved = [e["name"] for e in entries] == [
        "reserved: at most this until the run's plan is known"
    ]
    assert (run["reserved"] and run["epsilon"] == 2.0 and reserved) or (
        entries[-1]["name"].startswith("dpcgan:") and "discriminator steps" in entries[-1]["name"]
    )
    assert not (tmp_path / "m").exists()
    assert not [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_ctrl_c_says_what_was_charged_and_how_to_resume(files, tmp_path, monkeypatch, capsys):
    """Issue 46.9: Ctrl-C exited with 130 and printed nothing while the whole ε was charged.
    Interrupted in its discriminator steps, the fit says in one line what stays charged to the
    budget file and the exact command that resumes it."""
    import dpforge.pipeline.refine as refine_stage

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(refine_stage, "train", interrupted)
    data, schema_path = files
    checkpoint = tmp_path / "ck"
    extra = ["--checkpoint-dir", checkpoint]
    code, out = _fit(data, schema_path, tmp_path / "m", monkeypatch, capsys, *extra)
    assert code == 130
    (line,) = [line for line in out.splitlines() if line.strip()]
    command = " ".join(map(str, ["dpforge", "fit", data, "--schema", schema_path, "--epsilon",
                                 "2", "--out", tmp_path / "m", *fast(FAST), *extra]))  # fmt: skip
    assert line.startswith("interrupted: ε = ") and "stays charged to" in line
    assert str(tmp_path / ("data.csv" + BUDGET_SUFFIX)) in line
    assert line.endswith(f"resume with: {command}")
    assert not (tmp_path / "m").exists()


def test_fits_at_the_totals_delta_compose_and_show_what_ran(files, tmp_path, monkeypatch, capsys):
    """Issue 46.2: under 'budget set --epsilon 4 --delta 1e-5', every second fit at delta
    1e-5 was refused, at any epsilon, with advice to lower epsilon; 'budget show' called
    marginal anchoring "dpcgan fit". The runs' events are composed and read at the total's
    delta, a reservation counts as a Gaussian bound (not its whole delta), and a refusal says
    which of epsilon or delta binds."""
    data, schema_path = files
    set_total = ["budget", "set", data, "--epsilon", "4", "--delta", "1e-5"]
    assert run(set_total, monkeypatch, capsys)[0] == 0
    anchored = ["fit", data, "--schema", schema_path, "--epsilon", "1", "--delta", "1e-5",
                "--out", tmp_path / "m1", "--seed", "0", *quiet()]  # fmt: skip
    code, out = run(anchored, monkeypatch, capsys)
    assert code == 0, out
    code, out = _fit(data, schema_path, tmp_path / "m2", monkeypatch, capsys, "--delta", "1e-5")
    assert code == 0, out
    assert "over 2 run(s)" in out
    code, out = run(["budget", "show", data], monkeypatch, capsys, unwrap=True)
    assert "marginal anchoring, target" in out and "dpcgan discriminator, target" in out
    code, out = _fit(data, schema_path, tmp_path / "m3", monkeypatch, capsys, "--epsilon", "6")
    assert code == 2 and "ε binds: lower --epsilon" in " ".join(out.split())
    assert not (tmp_path / "m3").exists()
