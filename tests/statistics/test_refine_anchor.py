"""The anchor loss kept during refinement (issue 24 part 3): ``refine_weight`` times the loss
on the already-released statistics is added to the generator's adversarial loss, so the
refined generator stays near the releases (free: post-processing).

Small real data: scikit-learn's 8x8 digits, at epsilon = inf (the releases are then exact and
the discriminator trains without noise; what is checked is the generator's loss, not privacy).
"""

from __future__ import annotations

import math
from dataclasses import replace
from types import SimpleNamespace

import pytest
import torch

from dpforge.datasets.images import load_digits_images
from dpforge.kinds import arrays as array_kinds
from dpforge.methods.dpcgan import DPCGANConfig
from dpforge.statistics.anchor import stratified_labels
from dpforge.statistics.features import FeatureAnchorConfig
from dpforge.synthesizer import Synthesizer

MOMENTS = FeatureAnchorConfig(statistic="moments", rank=10, share=0.5, batch_size=200)
SMALL_D = DPCGANConfig(batch_size=32, discriminator_net="mlp", discriminator_hidden=(32,))


def test_refine_weight_sets_the_refinement_anchor_and_its_batch():
    method, loss = SimpleNamespace(anchor=None, anchor_batch=None), object()
    array_kinds.MomentAnchoring(replace(MOMENTS, refine_weight=2.5)).set_refine_anchor(method, loss)
    assert method.anchor == (loss, 2.5) and method.anchor_batch == 200
    array_kinds.MomentAnchoring(replace(MOMENTS, refine_weight=0.0)).set_refine_anchor(method, loss)
    assert method.anchor is None  # the adversarial loss alone
    with pytest.raises(ValueError, match="refine_weight >= 0"):
        replace(MOMENTS, refine_weight=-1.0).validate()


def _moment_gap(weight: float, monkeypatch) -> float:
    """The released-moment loss of the refined generator's samples."""
    train, _, schema = load_digits_images()
    losses = []
    original = array_kinds.MomentLoss

    def keep(subspace, moments):
        losses.append(original(subspace, moments))
        return losses[-1]

    monkeypatch.setattr(array_kinds, "MomentLoss", keep)
    synth = Synthesizer(
        schema, epsilon=math.inf, seed=0, progress=False, method_options=SMALL_D, epochs=3.0,
        anchor=replace(MOMENTS, refine_weight=weight),
    ).fit(train)  # fmt: skip
    generator = synth.generator_
    rng = torch.Generator().manual_seed(5)
    labels = stratified_labels(1000, 10, "cpu")
    with torch.no_grad():
        x = generator(generator.sample_latent(1000, rng), labels)
        return float(losses[-1](x, labels))


@pytest.mark.slow
def test_a_refine_weight_keeps_the_refined_generator_near_the_released_moments(monkeypatch):
    free, kept = _moment_gap(0.0, monkeypatch), _moment_gap(20.0, monkeypatch)
    assert kept < 0.5 * free, (kept, free)
