"""Initial weights come from the run's generator, with a rule for every layer type used."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from dpforge.nets.conv import ConvGenerator, conv_critic
from dpforge.nets.init import initialise
from dpforge.nets.lstm import LSTMGenerator


def _seeded(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def test_norm_layers_start_as_identity_and_conv_weights_use_fan_in():
    g = ConvGenerator(8, 3, (1, 28, 28), channels=(16, 8), norm="group")
    critic = conv_critic((1, 28, 28), 3, channels=(8, 16), norm="group")
    for net in (g, critic):
        initialise(net, _seeded(0))
        for layer in net.modules():
            if isinstance(layer, nn.GroupNorm):
                assert torch.all(layer.weight == 1) and torch.all(layer.bias == 0)
            if isinstance(layer, nn.modules.conv._ConvNd):
                fan_in = layer.weight[0].numel()
                assert layer.weight.abs().max() <= 1 / math.sqrt(fan_in)
                assert layer.weight.std() > 0.3 / math.sqrt(fan_in)  # really drawn


def test_same_seed_same_weights_and_global_rng_untouched():
    a, b = LSTMGenerator(4, 2, (1, 12), hidden=8), LSTMGenerator(4, 2, (1, 12), hidden=8)
    state = torch.random.get_rng_state()
    initialise(a, _seeded(5))
    initialise(b, _seeded(5))
    for pa, pb in zip(a.parameters(), b.parameters(), strict=True):
        assert torch.equal(pa, pb)
    assert torch.equal(state, torch.random.get_rng_state())


def test_generated_images_depend_on_the_latent_after_initialisation():
    g = ConvGenerator(8, 0, (1, 8, 8), channels=(8, 4), norm="group")
    initialise(g, _seeded(1))
    z = g.sample_latent(4, _seeded(2))
    out = g(z, None)
    assert out.std(dim=0).mean() > 1e-3  # not a constant image


def test_a_layer_without_a_rule_is_an_error():
    with pytest.raises(TypeError, match="no initialisation rule for BatchNorm1d"):
        initialise(nn.Sequential(nn.Linear(3, 3), nn.BatchNorm1d(3)), _seeded(0))
