"""Crash and resume (issue 14): a checkpointed ``dpforge fit`` killed with SIGKILL at random
moments, several times in a row, never lets the ledger count fewer private steps than ran; one
checkpoint folder serves one fit at a time; a diverged run stops and releases nothing.

Steps that ran are counted from outside the process: the checkpoint says where each run
started (``state.spent``, with the written-ahead ledger), and the progress log (printed after
each 5% of the steps) says how far a killed run got at least.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time

import numpy as np
from filelock import FileLock

from cli_support import merged, options_file
from dpforge.model_io import MANIFEST, WEIGHTS
from dpforge.privacy.accounting import dpsgd_event
from dpforge.privacy.ledger import PrivacyLedger
from dpforge.training import CHECKPOINT_INFO, LEDGER_AHEAD, LOCK

CLI = [sys.executable, "-c", "from dpforge.cli import main; main()"]
OPTIONS = {
    "data": {"target": "diagnosis"},
    "anchor": {"share": 0},
    "refine": {"batch_size": 64, "epochs": 60},
    "output": {"checkpoint_every": 40},  # the progress log tells the test when to kill
}
FIT = ["--epsilon", "8", "--refine", "dpcgan", "--options", str(options_file(OPTIONS))]


def _env() -> dict[str, str]:
    return {**os.environ, "OMP_NUM_THREADS": "1", "COLUMNS": "200"}


def _start(files, tmp_path) -> tuple[subprocess.Popen, list[str]]:
    data, schema_path = files
    args = [*CLI, "fit", str(data), "--schema", str(schema_path), "--out", str(tmp_path / "m")]
    args += [*FIT, "--checkpoint-dir", str(tmp_path / "ck")]
    log = open(tmp_path / "run.log", "w")  # noqa: SIM115 - closed by the caller via the process
    return subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, env=_env()), args


def _spent(folder) -> int:
    """Where a run on this checkpoint folder starts: the steps already charged."""
    state = json.loads((folder / CHECKPOINT_INFO).read_text())["state"]
    ahead = folder / LEDGER_AHEAD
    reserved = json.loads(ahead.read_text())["steps_reserved"] if ahead.exists() else 0
    return max(state["spent"], state["step"], reserved)


def _fraction(tmp_path) -> float:
    """How far the run got by its progress log (0 before its first line)."""
    steps = re.findall(r"step (\d+)/(\d+)", (tmp_path / "run.log").read_text())
    return max((int(a) / int(b) for a, b in steps), default=0.0)


def _logged(tmp_path) -> int:
    steps = re.findall(r"step (\d+)/\d+", (tmp_path / "run.log").read_text())
    return max(map(int, steps), default=0)


def test_sigkill_at_random_moments_never_hides_a_step(files, tmp_path):
    folder, rng = tmp_path / "ck", np.random.default_rng(14)
    ran, kills = 0, 0
    for _ in range(3):
        start = _spent(folder) if (folder / CHECKPOINT_INFO).exists() else 0
        process, _ = _start(files, tmp_path)
        deadline = time.monotonic() + 120
        while not (folder / CHECKPOINT_INFO).exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        # kill at a random point of the plan, read from the progress log: a fixed sleep let a
        # fast machine finish (and release) before the kill landed
        target = float(rng.uniform(0.1, 0.6))
        while process.poll() is None and _fraction(tmp_path) < target:
            time.sleep(0.01)
        if process.poll() is not None:
            break  # finished before the kill: the loop ends with a released model
        os.kill(process.pid, signal.SIGKILL)
        process.wait()
        kills += 1
        assert not (tmp_path / "m").exists()  # a killed run releases nothing
        logged = _logged(tmp_path)
        ran += max(0, logged - start)
        # the ledger is ahead of every step the killed run reported
        assert _spent(folder) >= logged
    process, _ = _start(files, tmp_path)
    start = _spent(folder)
    assert process.wait(timeout=300) == 0, (tmp_path / "run.log").read_text()
    assert kills >= 1
    manifest = json.loads((tmp_path / "m" / MANIFEST).read_text())
    plan = manifest["plan"]
    ran += plan["steps"] - start
    assert ran <= plan["steps"]  # every step that ran is charged, wasted ones included
    ledger = PrivacyLedger.from_dict(manifest["privacy"]["ledger"])
    delta = manifest["privacy"]["delta"]
    claimed = manifest["privacy"]["report"]["epsilon"]
    metadata = PrivacyLedger(ledger.entries[:-1])
    metadata.record(
        "steps that ran", dpsgd_event(plan["sample_rate"], plan["noise_multiplier"], ran)
    )
    assert claimed >= metadata.epsilon(delta) - 1e-9
    assert claimed <= 8.0
    # released once: the model folder alone, nothing staged beside it
    assert sorted(p.name for p in (tmp_path / "m").iterdir()) == sorted([MANIFEST, WEIGHTS])
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".m.")]
    assert not [p for p in folder.iterdir() if p.name.endswith(".tmp")]


def test_a_second_fit_on_a_locked_checkpoint_folder_fails_at_once(files, tmp_path):
    folder = tmp_path / "ck"
    folder.mkdir()
    (folder / ".checkpoint.json.abc123.tmp").write_bytes(b"")  # a killed run's leftover
    data, schema_path = files
    args = [*CLI, "fit", str(data), "--schema", str(schema_path), "--out", str(tmp_path / "m")]
    args += [*FIT, "--checkpoint-dir", str(folder)]
    with FileLock(folder / LOCK):
        result = subprocess.run(args, capture_output=True, text=True, env=_env(), timeout=120)
    assert result.returncode == 2
    assert "another dpforge fit is using the checkpoint folder" in result.stderr
    assert (folder / ".checkpoint.json.abc123.tmp").exists()  # not ours to touch while locked
    assert not (tmp_path / "m").exists()


def test_a_diverging_run_stops_keeps_its_checkpoint_and_releases_nothing(files, tmp_path):
    data, schema_path = files
    folder = tmp_path / "ck"
    (folder).mkdir()
    (folder / ".checkpoint.safetensors.k1.tmp").write_bytes(b"")  # a killed run's leftover
    args = [*CLI, "fit", str(data), "--schema", str(schema_path), "--out", str(tmp_path / "m")]
    diverging = options_file(merged(OPTIONS, {"refine": {"clip_norm": 1e38}}))
    args += [*FIT[:-1], str(diverging), "--checkpoint-dir", str(folder)]
    result = subprocess.run(args, capture_output=True, text=True, env=_env(), timeout=300)
    assert result.returncode == 2, result.stderr
    assert "training diverged at private step" in result.stderr
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert not re.search(r"\d\.\d{3,}", result.stderr)  # no loss or weight value in it
    assert not (tmp_path / "m").exists()
    state = json.loads((folder / CHECKPOINT_INFO).read_text())["state"]
    assert state["step"] == 0  # the last good checkpoint, not a diverged one
    assert not (folder / ".checkpoint.safetensors.k1.tmp").exists()  # cleaned up under the lock


def test_a_kill_during_the_model_folders_save_leaves_nothing_after_the_next_run(files, tmp_path):
    """Issue 46.11: a kill during the model folder's save left an empty hidden staging folder
    beside it. No write can outlive a SIGKILL, so the next run that names the folder removes
    it (check_output_folder -> recover_folder) and releases the complete model."""
    data, schema_path = files
    args = ["fit", str(data), "--schema", str(schema_path), "--out", str(tmp_path / "m")]
    shorter = {"refine": {"epochs": 20}, "output": {"checkpoint_every": 500, "progress": False}}
    args += [*FIT[:-1], str(options_file(merged(OPTIONS, shorter)))]
    args += ["--checkpoint-dir", str(tmp_path / "ck")]
    killed_in_save = (
        "import os, signal, sys; import dpforge.model_io as m; "
        "m.write_tensors = lambda *a, **k: os.kill(os.getpid(), signal.SIGKILL); "
        "from dpforge.cli import main; main()"
    )
    first = subprocess.run([sys.executable, "-c", killed_in_save, *args], env=_env(), timeout=300)
    assert first.returncode == -signal.SIGKILL
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".m.")]  # the leftover
    assert not (tmp_path / "m").exists()
    again = subprocess.run([*CLI, *args], capture_output=True, text=True, env=_env(), timeout=300)
    assert again.returncode == 0, again.stderr
    assert sorted(p.name for p in (tmp_path / "m").iterdir()) == sorted([MANIFEST, WEIGHTS])
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".m.")]
