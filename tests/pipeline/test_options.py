"""Bad run options give one line, before any data are read or any step runs (issue 14).

Every case here used to give a traceback, to train silently with another value, or to run
(or account) for longer than anyone waits. The checks live in ``dpforge.options`` and serve
the command line and the Python API alike.
"""

from __future__ import annotations

import math
import subprocess
import sys
import time

import pytest
import torch

import dpforge.pipeline.refine as synth_module
from cli_support import merged, options_file, run
from dpforge.errors import DpforgeError, PrivacyError
from dpforge.methods.dpcgan import DPCGANConfig
from dpforge.methods.dpwgan import DPWGANConfig
from dpforge.options import MAX_STEPS, MIN_NOISE_MULTIPLIER, check_device
from dpforge.synthesizer import Synthesizer

BASE = {"anchor": {"share": 0}, "output": {"progress": False}, "data": {"target": "diagnosis"}}


def _options(refiner: str = "dpcgan", **refine: object) -> list[str]:
    """``--refine`` and an options file with the discriminator alone and ``refine``'s keys."""
    path = options_file(merged(BASE, {"refine": refine}))
    return ["--epsilon", "8", "--refine", refiner, "--options", str(path)]


BAD_FIT_OPTIONS = [
    (_options(batch_size=0), "batch size must be >= 1"),
    (_options(epochs=math.nan), "epochs must be a finite number > 0"),
    (_options(epochs=math.inf), "epochs must be a finite number > 0"),
    (_options(epochs=0), "epochs must be a finite number > 0"),
    (_options(epochs=1e7), f"more than {MAX_STEPS:,} private steps"),
    (_options(noise_multiplier=1e6), f"more than {MAX_STEPS:,} private steps"),
    (_options(noise_multiplier=1e-9), f"must be between {MIN_NOISE_MULTIPLIER}"),
    ([*_options(), "--seed", "-1"], "seed=-1 must be between 0 and 2**63 - 1"),
    ([*_options(), "--seed", str(2**63)], "must be between 0 and 2**63 - 1"),
    ([*_options(), "--seed", str(2**64)], "must be between 0 and 2**63 - 1"),
    ([*_options(), "--epsilon", "1e300"], "is above 100"),
    (_options(microbatches=100, batch_size=64), "larger than the batch size 64"),
    (_options("gswgan", num_discriminators=0), "num_discriminators must be >= 1"),
    (_options("gswgan", num_discriminators=1000), "is more than the"),
    (_options(clip_norm=math.inf), "clip_norm must be a finite number"),
    (_options("dpwgan", gp_weight=1e30), "gp_weight 1e+30 is above"),
    ([*_options(), "--device", "banana"], "'banana' is not a torch device: give cpu, cuda"),
    ([*_options(), "--device", f"cuda:{torch.cuda.device_count()}"], "CUDA device(s) on this"),
]  # fmt: skip


@pytest.mark.parametrize(("extra", "message"), BAD_FIT_OPTIONS)
def test_bad_fit_options_give_one_line_before_any_step(
    files, tmp_path, monkeypatch, capsys, extra, message
):
    data, schema_path = files
    steps = []
    monkeypatch.setattr(synth_module, "train", lambda *a, **k: steps.append(1))
    out = tmp_path / "model"
    started = time.perf_counter()
    args = ["fit", data, "--schema", schema_path, "--out", out, *extra]
    code, text = run(args, monkeypatch, capsys)
    assert code == 2, text
    assert "Traceback" not in text and len(text.strip().splitlines()) == 1, text
    assert message in text
    assert not steps and not out.exists()
    assert time.perf_counter() - started < 60  # refused, not planned for minutes


def test_option_errors_come_before_the_data_file_is_read(files, tmp_path, monkeypatch, capsys):
    _, schema_path = files
    missing = tmp_path / "no-such-file.csv"
    code, text = run(
        ["fit", missing, "--schema", schema_path, "--out", tmp_path / "m",
         *_options(epochs=math.nan)],
        monkeypatch, capsys,
    )  # fmt: skip
    assert code == 2 and "epochs must be" in text


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"method_options": DPCGANConfig(g_lr=math.inf)}, "g_lr must be a finite number"),
        ({"method_options": DPWGANConfig(d_lr=math.nan)}, "d_lr must be a finite number"),
        ({"method_options": DPCGANConfig(d_lr_start=0.0)}, "d_lr_start must be > 0"),
        ({"seed": 2**63}, "between 0 and 2"),
        ({"seed": 1.5}, "must be a whole number"),
        ({"epochs": 0}, "epochs must be a finite number > 0"),
        ({"epsilon": 1e300}, "above 100"),
        ({"noise_multiplier": 1e-9, "epochs": None}, "must be between"),
    ],
)
def test_the_python_api_refuses_the_same_options(cancer, kwargs, message):
    frame, schema = cancer
    options = {"anchor": None, "progress": False, "epochs": 20.0, **kwargs}
    method = "dpwgan" if isinstance(options.get("method_options"), DPWGANConfig) else "dpcgan"
    with pytest.raises(PrivacyError, match=message):
        Synthesizer(schema, method=method, **options).fit(frame)


def test_devices_torch_can_use_are_taken_and_others_refused_by_name(cancer):
    assert check_device("cpu") == torch.device("cpu")
    for bad in ("banana", "meta", f"cuda:{torch.cuda.device_count()}"):
        with pytest.raises(DpforgeError, match=f"device '{bad}'"):
            check_device(bad)
    frame, schema = cancer
    with pytest.raises(DpforgeError, match="'banana' is not a torch device"):
        Synthesizer(schema, anchor=None, progress=False, device="banana").fit(frame)


def test_the_largest_seed_trains():
    """Seeds up to 2**63 - 1 are valid for every random stream the run derives from them."""
    synth = Synthesizer.__new__(Synthesizer)
    synth.seed = 2**63 - 1
    streams = [synth._seed_sequence(k) for k in range(5)]
    assert all(0 <= s < 2**63 for s in streams)
    synth_module.make_generator(streams[0])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--sigma", "1e-9", "--epochs", "1"], "must be between"),
        (["--sigma", "1", "--epochs", "1e9"], "more than"),
        (["--sigma", "1", "--steps", "100000000"], "more than"),
    ],
)
def test_the_calculator_refuses_tiny_noise_and_endless_runs(args, message):
    started = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "-c", "from dpforge.cli import main; main()", "privacy", "-n", "60000",
         "-b", "256", *args],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode == 2, result.stderr
    assert message in result.stderr and "Traceback" not in result.stderr
    assert time.perf_counter() - started < 60


def test_the_calculator_stops_its_noise_search_at_the_floor(monkeypatch, capsys):
    code, text = run(
        ["privacy", "-n", "60000", "-b", "256", "--epsilon", "100", "--epochs", "1", "--json"],
        monkeypatch,
        capsys,
    )
    assert code == 0, text
    assert f'"noise_multiplier": {MIN_NOISE_MULTIPLIER}' in text
    # Issue 25: a target above MAX_EPSILON (100) is refused, as fit refuses it.
    args = ["privacy", "-n", "60000", "-b", "256", "--epsilon", "1e300", "--epochs", "1"]
    code, text = run(args, monkeypatch, capsys)
    assert code == 2 and "above 100" in text
