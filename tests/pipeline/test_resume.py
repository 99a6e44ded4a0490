"""Resume is a privacy event: a checkpoint made with other settings or data is refused.

Issue 13.1: a GS-WGAN run resumed with another batch size was charged at the new one. Every
setting that fixes the accounting is stored in the checkpoint and compared before the first
step. Runs stop at their first checkpoint (step 0), so no training step runs here.
"""

from __future__ import annotations

import json
import os
import stat

import pytest
import torch

import dpforge.pipeline.refine as synth_module
from dpforge.data.arrays import ArrayData
from dpforge.datasets.images import load_digits_images
from dpforge.errors import PrivacyError
from dpforge.methods.dpcgan import DPCGANConfig
from dpforge.methods.dpwgan import DPWGANConfig
from dpforge.methods.gswgan import GSWGANConfig
from dpforge.synthesizer import Synthesizer

SMALL = {
    "generator_net": "mlp",
    "discriminator_net": "mlp",
    "generator_hidden": (16,),
    "discriminator_hidden": (16,),
    "latent_dim": 8,
}
CONFIGS = {
    "dpcgan": DPCGANConfig(batch_size=32, **SMALL),
    "dpwgan": DPWGANConfig(batch_size=32, **SMALL),
    "gswgan": GSWGANConfig(batch_size=32, num_discriminators=10, warm_start_steps=1, **SMALL),
}


class Stop(Exception):
    """Raised after the first checkpoint is written: an interrupted run."""


@pytest.fixture(scope="module")
def digits():
    train, _, schema = load_digits_images()
    return ArrayData(train.values[:600], train.labels[:600]), schema


def _options(name: str, **changes):
    method = changes.get("method", name)
    options = {
        "method": method,
        "epsilon": 20.0,
        "delta": 1e-5,
        "noise_multiplier": 6.0 if method == "gswgan" else 1.0,
        "method_options": CONFIGS[method],
        "seed": 0,
        "progress": False,
        "anchor": None,  # the GAN's steps are what a checkpoint resumes
    }
    options.update(changes)
    return options


def _interrupted(schema, data, folder, monkeypatch, **options) -> None:
    """Start a fit that stops right after writing its first checkpoint."""
    original = synth_module.save_checkpoint

    def save_then_stop(*args, **kwargs):
        original(*args, **kwargs)
        raise Stop

    monkeypatch.setattr(synth_module, "save_checkpoint", save_then_stop)
    with pytest.raises(Stop):
        Synthesizer(schema, checkpoint_dir=folder, **options).fit(data)
    monkeypatch.setattr(synth_module, "save_checkpoint", original)


@pytest.mark.parametrize(
    ("method", "changes", "pattern"),
    [
        ("gswgan", {"batch_size": 1}, "method_options.batch_size = 32, not 1"),
        ("gswgan", {"num_discriminators": 5}, "method_options.num_discriminators = 10, not 5"),
        ("gswgan", {"clip_norm": 0.5}, "method_options.clip_norm = 1.0, not 0.5"),
        ("dpcgan", {"batch_size": 64}, "batch_size = 32, not 64"),
        ("dpcgan", {"clip_norm": 3.0}, "method_options.clip_norm = 1.0, not 3.0"),
        ("dpcgan", {"microbatches": 4}, "method_options.microbatches = None, not 4"),
        ("dpwgan", {"d_steps": 5}, "method_options.d_steps = 2, not 5"),
        ("dpwgan", {"clip_decay": 0.9}, "method_options.clip_decay = 1.0, not 0.9"),
    ],
)
def test_resume_with_other_method_options_is_refused_before_a_step(
    digits, tmp_path, monkeypatch, method, changes, pattern
):
    from dataclasses import replace

    data, schema = digits
    folder = tmp_path / "ckpt"
    _interrupted(schema, data, folder, monkeypatch, **_options(method))
    changed = replace(CONFIGS[method], **changes)
    steps = []
    monkeypatch.setattr(synth_module, "train", lambda *a, **k: steps.append(1))
    with pytest.raises(PrivacyError, match=pattern.replace(".", r"\.")):
        Synthesizer(schema, checkpoint_dir=folder, **_options(method, method_options=changed)).fit(
            data
        )
    assert not steps


@pytest.mark.parametrize(
    ("changes", "pattern"),
    [
        ({"epsilon": 30.0}, "epsilon = 20.0, not 30.0"),
        ({"delta": 1e-6}, "delta = 1e-05, not 1e-06"),
        ({"noise_multiplier": 2.0}, "noise_multiplier = 1.0, not 2.0"),
        ({"noise_multiplier": None, "epochs": 3.0}, "epochs = None, not 3.0"),
        ({"metadata_share": 0.2}, "metadata_share = 0.1, not 0.2"),
        ({"method": "dpwgan", "method_options": CONFIGS["dpwgan"]}, "method = 'dpcgan'"),
        ({"out_of_bounds": "clip"}, "out_of_bounds = 'error', not 'clip'"),
    ],
)
def test_resume_with_other_privacy_options_is_refused(
    digits, tmp_path, monkeypatch, changes, pattern
):
    data, schema = digits
    folder = tmp_path / "ckpt"
    _interrupted(schema, data, folder, monkeypatch, **_options("dpcgan"))
    with pytest.raises(PrivacyError, match=pattern):
        Synthesizer(schema, checkpoint_dir=folder, **_options("dpcgan", **changes)).fit(data)


@pytest.mark.parametrize("method", ["gswgan", "dpcgan"])
def test_resume_on_other_data_of_the_same_size_is_refused(digits, tmp_path, monkeypatch, method):
    data, schema = digits
    folder = tmp_path / "ckpt"
    _interrupted(schema, data, folder, monkeypatch, **_options(method))
    values = data.values.copy()
    values[17, 0, 3, 3] = 16.0 - values[17, 0, 3, 3]
    other = ArrayData(values, data.labels)
    with pytest.raises(PrivacyError, match="the data differ") as caught:
        Synthesizer(schema, checkpoint_dir=folder, **_options(method)).fit(other)
    stored = json.loads((folder / "checkpoint.json").read_text())["privacy_settings"]
    assert stored["data_sha256"] not in str(caught.value)  # the fingerprint is never printed


def test_the_checkpoint_records_the_settings_and_a_data_fingerprint(digits, tmp_path, monkeypatch):
    data, schema = digits
    folder = tmp_path / "ckpt"
    _interrupted(schema, data, folder, monkeypatch, **_options("gswgan"))
    stored = json.loads((folder / "checkpoint.json").read_text())["privacy_settings"]
    assert stored["method"] == "gswgan" and stored["epsilon"] == 20.0
    assert stored["delta"] == 1e-5 and stored["noise_multiplier"] == 6.0
    assert stored["sample_rate"] == pytest.approx(0.1)
    assert stored["method_options.batch_size"] == 32
    assert stored["method_options.num_discriminators"] == 10
    assert stored["method_options.critic_training"] == "frozen"
    assert len(stored["data_sha256"]) == 64
    # The same settings and data resume (and the stored settings match them exactly).
    monkeypatch.setattr(synth_module, "train", lambda *a, **k: None)
    Synthesizer(schema, checkpoint_dir=folder, **_options("gswgan")).fit(data)


def test_a_checkpoint_without_settings_is_refused(digits, tmp_path, monkeypatch):
    data, schema = digits
    folder = tmp_path / "ckpt"
    _interrupted(schema, data, folder, monkeypatch, **_options("dpcgan"))
    info = json.loads((folder / "checkpoint.json").read_text())
    del info["privacy_settings"]
    (folder / "checkpoint.json").write_text(json.dumps(info))
    with pytest.raises(PrivacyError, match="does not record the settings"):
        Synthesizer(schema, checkpoint_dir=folder, **_options("dpcgan")).fit(data)


def test_a_checkpoint_is_one_unit_step_and_networks_together(digits, tmp_path, monkeypatch):
    """A kill between the two files must not pair newer networks with an older step."""
    from dpforge.training import load_checkpoint

    data, schema = digits
    folder = tmp_path / "ckpt"
    _interrupted(schema, data, folder, monkeypatch, **_options("dpcgan"))
    info = json.loads((folder / "checkpoint.json").read_text())
    info["state"]["step"] = 7  # a stale or edited JSON copy
    (folder / "checkpoint.json").write_text(json.dumps(info))
    from dpforge.kinds import kind_of
    from dpforge.methods import METHODS

    encoder = kind_of(schema).encoder(schema)
    prior = torch.full((10,), 0.1)
    method_cls = METHODS["dpcgan"][0]
    method = method_cls(CONFIGS["dpcgan"], encoder.layout, encoder.n_classes, prior, 1.0, "cpu")
    state, _ = load_checkpoint(folder, method, synth_module.make_generator(0))
    assert state.step == 0


def test_checkpoint_files_are_private_to_their_owner(digits, tmp_path, monkeypatch):
    """Issue 43.10: a checkpoint holds the exact N, the records' fingerprint and the
    non-private discriminator: its files are 0600 whatever the umask (the budget file is too)."""
    data, schema = digits
    folder = tmp_path / "ckpt"
    old = os.umask(0o022)
    try:
        _interrupted(schema, data, folder, monkeypatch, **_options("dpcgan"))
    finally:
        os.umask(old)
    written = [p for p in folder.iterdir() if p.is_file() and not p.name.endswith(".lock")]
    assert {"checkpoint.json", "checkpoint.safetensors"} <= {p.name for p in written}
    modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in written}
    assert modes == dict.fromkeys(modes, 0o600)
