"""A discriminator warm-started on the declared public set (issue 24 part 3): free (the ledger
and the DP-SGD steps are those of the run without it), no private record read while it
runs, refused without a public set, deterministic given the generator passed in.

Small real data: scikit-learn's 8x8 digits, the training part private and the test part the
declared public set.
"""

from __future__ import annotations

import copy
import json
import math
from dataclasses import replace

import numpy as np
import pytest
import torch

from cli_support import options_file, run
from dpforge.data.array_encoder import ArrayEncoder
from dpforge.data.arrays import ArrayData
from dpforge.datasets.images import load_digits_images
from dpforge.engines.base import Engine
from dpforge.errors import PrivacyError
from dpforge.kinds import perceptual as perceptual_kind
from dpforge.methods import public_start
from dpforge.methods.dpcgan import DPCGAN, DPCGANConfig
from dpforge.nets.init import initialise
from dpforge.statistics import perceptual
from dpforge.statistics.features import FeatureAnchorConfig
from dpforge.synthesizer import Synthesizer

ANCHOR = FeatureAnchorConfig(statistic="auto", steps=20, batch_size=100, share=0.5)
SMALL_D = DPCGANConfig(batch_size=32, discriminator_net="mlp", discriminator_hidden=(32,))


@pytest.fixture(scope="module")
def digits():
    train, test, schema = load_digits_images()
    return train, ArrayData(test.values, test.labels), schema


def _fit(schema, data, public, options, anchor=ANCHOR, epsilon=10.0, epochs=2.5):
    return Synthesizer(
        schema, epsilon=epsilon, delta=1e-4, seed=0, progress=False, anchor=anchor,
        public_data=public, method_options=options, epochs=epochs,
    ).fit(data)  # fmt: skip


@pytest.mark.slow
def test_the_warm_start_is_free_and_reads_no_private_record(digits, monkeypatch):
    """At epsilon = inf (the accountant's calibrations of a finite budget would take most of
    a minute): the warm start runs after the plan, so a finite budget's ledger cannot differ
    either."""
    train, public, schema = digits
    reads, during, steps = [], [], []
    original_read, original_warm = Engine.read, perceptual_kind.warm_start_on_public

    def read(self, stage):
        reads.append(stage)
        if during:  # a private record read while the warm start runs: fail loudly
            raise AssertionError(f"the warm start read the private records ({stage})")
        return original_read(self, stage)

    def warm(method, public_images, n_steps, generator):
        during.append(True)
        losses = original_warm(method, public_images, n_steps, generator)
        during.clear()
        steps.append(len(losses))
        return losses

    monkeypatch.setattr(Engine, "read", read)
    monkeypatch.setattr(perceptual_kind, "warm_start_on_public", warm)
    plain = _fit(schema, train, public, SMALL_D, epsilon=math.inf, epochs=0.5)
    plain_reads = reads.copy()
    reads.clear()
    options = replace(SMALL_D, public_warm_start_steps=15)
    warmed = _fit(schema, train, public, options, epsilon=math.inf, epochs=0.5)
    assert steps == [15]  # it ran once, and read nothing private while it ran
    assert reads == plain_reads and reads[-1] == "refine"  # the same reads as without it
    assert warmed.ledger_.to_dict() == plain.ledger_.to_dict()  # no entry, same DP-SGD event
    assert warmed.plan_.steps == plain.plan_.steps > 0
    a, b = plain.sample(20, seed=1).values, warmed.sample(20, seed=1).values
    assert not np.allclose(a, b)  # the warm-started discriminator refined differently


def test_the_warm_start_without_a_public_set_is_refused(digits):
    train, public, schema = digits
    moments = FeatureAnchorConfig(statistic="moments", share=0.5)
    options = replace(SMALL_D, public_warm_start_steps=5)
    with pytest.raises(PrivacyError, match="pass public_data"):
        _fit(schema, train, None, options, anchor=moments)
    alone = replace(ANCHOR, share=1.0)  # no refinement: the option applies to nothing
    with pytest.raises(PrivacyError, match="public_warm_start_steps"):
        _fit(schema, train, public, options, anchor=alone)
    with pytest.raises(PrivacyError, match="whole number >= 0"):
        DPCGANConfig(public_warm_start_steps=-1).validate()


def test_the_command_line_refuses_it_without_public_data(tmp_path, monkeypatch, capsys):
    _, _, schema = load_digits_images()
    schema_path = tmp_path / "schema.json"
    schema_path.write_text(json.dumps(schema.to_dict()))
    missing = tmp_path / "no-such-private-file.npz"  # never opened: the refusal comes first
    args = ["fit", missing, "--schema", schema_path, "--out", tmp_path / "m"]
    options = options_file({"anchor": {"share": 0.5}, "refine": {"public_warm_start_steps": 5}})
    code, out = run([*args, "--refine", "dpcgan", "--options", options], monkeypatch, capsys)
    assert code != 0 and "public_data" in out and "Traceback" not in out


def _method(schema) -> DPCGAN:
    encoder = ArrayEncoder(schema)
    prior = torch.full((10,), 0.1)
    config = replace(SMALL_D, batch_size=16)
    method = DPCGAN(config, encoder.layout, 10, prior, noise_multiplier=1.0)
    rng = torch.Generator().manual_seed(0)
    for module in method.trained_networks():
        initialise(module, rng)
    return method


def _weights(module: torch.nn.Module) -> list[torch.Tensor]:
    return [p.detach().clone() for p in module.parameters()]


def test_the_warm_start_is_deterministic_given_the_generator(digits):
    _, public, schema = digits
    images = perceptual.public_images(public, schema)
    first = _method(schema)
    second, third = copy.deepcopy(first), copy.deepcopy(first)
    before, g_before = _weights(first.discriminator), _weights(first.generator)
    losses = public_start.warm_start_on_public(first, images, 40, torch.Generator().manual_seed(3))
    public_start.warm_start_on_public(second, images, 40, torch.Generator().manual_seed(3))
    public_start.warm_start_on_public(third, images, 40, torch.Generator().manual_seed(4))
    same = zip(_weights(first.discriminator), _weights(second.discriminator), strict=True)
    assert all(torch.equal(a, b) for a, b in same)
    other = zip(_weights(first.discriminator), _weights(third.discriminator), strict=True)
    assert not all(torch.equal(a, b) for a, b in other)
    moved = zip(before, _weights(first.discriminator), strict=True)
    assert not all(torch.equal(a, b) for a, b in moved)
    kept = zip(g_before, _weights(first.generator), strict=True)
    assert all(torch.equal(a, b) for a, b in kept)  # the generator is not trained here
    assert np.mean(losses[-10:]) < losses[0]  # it learns to tell public from generated


def test_public_classes_stand_for_private_classes_mod_k(digits):
    _, public, schema = digits
    images = perceptual.public_images(public, schema)
    np.testing.assert_array_equal(
        public_start.public_classes(images, 3), np.asarray(images.labels) % 3
    )
    unlabelled = perceptual.PublicImages(images.values[:7], None)
    np.testing.assert_array_equal(public_start.public_classes(unlabelled, 3), [0, 1, 2, 0, 1, 2, 0])
    assert public_start.public_classes(images, 0) is None
