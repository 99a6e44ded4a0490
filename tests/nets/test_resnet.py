"""Residual image generator (GS-WGAN's family): shapes, range, conditioning, gradients."""

import pytest
import torch
from torch import nn

from dpforge.nets.conv import condition_channels, conv_critic
from dpforge.nets.resnet import ResNetGenerator, UpBlock
from dpforge.privacy.noise import make_generator

SMALL = (8, 4)


def labels_for(n: int, n_classes: int) -> torch.Tensor | None:
    return torch.arange(n) % n_classes if n_classes else None


@pytest.mark.parametrize("shape", [(1, 28, 28), (1, 8, 8), (3, 32, 32), (1, 5, 7)])
@pytest.mark.parametrize("n_classes", [0, 3])
def test_shape_and_range(shape, n_classes):
    g = ResNetGenerator(6, n_classes, shape, channels=SMALL)
    out = g(g.sample_latent(5, make_generator(0)), labels_for(5, n_classes))
    assert out.shape == (5, *shape)
    assert torch.isfinite(out).all() and out.abs().max() <= 1.0


def test_output_feeds_a_conditioned_critic():
    g = ResNetGenerator(6, 3, (1, 28, 28), channels=SMALL)
    labels = labels_for(4, 3)
    out = g(g.sample_latent(4, make_generator(0)), labels)
    critic = conv_critic((1, 28, 28), 3, channels=(4, 8))
    assert critic(condition_channels(out, torch.eye(3)[labels])).shape == (4, 1)


def test_blocks_double_the_size_with_a_projection_only_when_channels_change():
    x = torch.randn(2, 8, 3, 5)
    changing, keeping = UpBlock(8, 4), UpBlock(8, 8)
    assert changing(x).shape == (2, 4, 6, 10) and keeping(x).shape == (2, 8, 6, 10)
    assert isinstance(changing.skip, nn.Conv2d) and changing.skip.kernel_size == (1, 1)
    assert isinstance(keeping.skip, nn.Identity)


def test_labels_change_the_output():
    g = ResNetGenerator(6, 3, (1, 8, 8), channels=SMALL)
    z = g.sample_latent(4, make_generator(0)).repeat(3, 1)
    out = g(z, torch.arange(3).repeat_interleave(4)).view(3, 4, -1)
    assert not torch.allclose(out[0], out[1]) and not torch.allclose(out[1], out[2])


def test_determinism_from_the_passed_generator_only():
    g = ResNetGenerator(6, 3, (1, 8, 8), channels=SMALL)
    state = torch.get_rng_state()
    z1, z2 = (g.sample_latent(4, make_generator(7)) for _ in range(2))
    assert torch.equal(torch.get_rng_state(), state)
    labels = labels_for(4, 3)
    torch.testing.assert_close(g(z1, labels, make_generator(1)), g(z2, labels), rtol=0, atol=0)


@pytest.mark.parametrize("norm", ["group", "none"])
def test_gradients_reach_every_parameter(norm):
    g = ResNetGenerator(6, 3, (3, 7, 9), channels=SMALL, norm=norm)
    out = g(g.sample_latent(6, make_generator(0)), labels_for(6, 3))
    (out * torch.randn(out.shape, generator=make_generator(1))).sum().backward()
    for name, param in g.named_parameters():
        assert param.grad is not None and param.grad.abs().sum() > 0, name


def test_no_batch_norm_and_conditional_needs_labels():
    g = ResNetGenerator(6, 3, (1, 28, 28))
    assert not any(isinstance(m, nn.modules.batchnorm._BatchNorm) for m in g.modules())
    assert any(isinstance(m, nn.GroupNorm) for m in g.modules())
    with pytest.raises(ValueError, match="labels"):
        g(g.sample_latent(2, make_generator(0)), None)
