"""DCGAN-style image generator, conv critics and the condition helpers.

The critics must stay plain ``nn.Sequential`` stacks of the layer types the fast per-example
clipping understands, with no batch statistics; the condition helpers must work per example
inside ``torch.func.vmap`` (the clipping oracle).
"""

import pytest
import torch
from torch import nn
from torch.func import functional_call, grad, vmap

from dpforge.nets.conv import (
    UPSAMPLING,
    ConvGenerator,
    center_crop,
    condition_channels,
    conv1d_critic,
    conv_critic,
    flat_condition,
    group_norm,
)
from dpforge.privacy.noise import make_generator

IMAGE_SHAPES = [(1, 28, 28), (1, 8, 8), (3, 32, 32), (1, 5, 7), (2, 1, 1)]
SERIES_SHAPES = [(1, 24), (3, 24), (2, 3), (1, 1)]
CRITIC_LAYERS = (nn.Conv1d, nn.Conv2d, nn.GroupNorm, nn.Linear, nn.Flatten, nn.LeakyReLU)
SMALL = (8, 4)


def labels_for(n: int, n_classes: int) -> torch.Tensor | None:
    return torch.arange(n) % n_classes if n_classes else None


def onehot_for(n: int, n_classes: int) -> torch.Tensor:
    labels = labels_for(n, n_classes)
    return torch.eye(n_classes)[labels] if n_classes else torch.zeros(n, 0)


def check_plain_critic(critic: nn.Module, in_channels: int) -> None:
    """A plain Sequential of allowed layers, convs with groups=1 and zero padding, Linear -> 1."""
    assert type(critic) is nn.Sequential
    assert all(type(m) in CRITIC_LAYERS for m in critic)
    assert not any(isinstance(m, nn.modules.batchnorm._BatchNorm) for m in critic.modules())
    convs = [m for m in critic if isinstance(m, nn.Conv1d | nn.Conv2d)]
    assert convs[0].in_channels == in_channels
    assert all(c.groups == 1 and c.padding_mode == "zeros" for c in convs)
    assert isinstance(critic[-1], nn.Linear) and critic[-1].out_features == 1


@pytest.mark.parametrize("shape", IMAGE_SHAPES)
@pytest.mark.parametrize("n_classes", [0, 3])
@pytest.mark.parametrize("upsample", UPSAMPLING)
def test_generator_shape_and_range(shape, n_classes, upsample):
    g = ConvGenerator(6, n_classes, shape, channels=SMALL, upsample=upsample)
    z = g.sample_latent(5, make_generator(0))
    out = g(z, labels_for(5, n_classes))
    assert out.shape == (5, *shape)
    assert torch.isfinite(out).all() and out.abs().max() <= 1.0


@pytest.mark.parametrize("shape", IMAGE_SHAPES)
@pytest.mark.parametrize("norm", ["none", "group"])
def test_conv_critic_is_plain_and_scores_conditioned_images(shape, norm):
    critic = conv_critic(shape, 3, channels=(4, 8), norm=norm)
    check_plain_critic(critic, shape[0] + 3)
    assert any(isinstance(m, nn.GroupNorm) for m in critic) == (norm == "group")
    rows = torch.rand(5, *shape) * 2 - 1
    assert critic(condition_channels(rows, onehot_for(5, 3))).shape == (5, 1)


@pytest.mark.parametrize("shape", SERIES_SHAPES)
@pytest.mark.parametrize("norm", ["none", "group"])
def test_conv1d_critic_is_plain_and_scores_conditioned_series(shape, norm):
    critic = conv1d_critic(shape, 2, channels=(4, 8), norm=norm)
    check_plain_critic(critic, shape[0] + 2)
    rows = torch.rand(5, *shape) * 2 - 1
    assert critic(condition_channels(rows, onehot_for(5, 2))).shape == (5, 1)


def test_critics_downsample_long_inputs_and_keep_short_ones():
    strides = [
        m.stride[0]
        for m in conv1d_critic((1, 24), 0, channels=(4, 4, 4, 4))
        if isinstance(m, nn.Conv1d)
    ]
    assert strides == [2, 2, 2, 1]  # 24 -> 12 -> 6 -> 3 -> 3
    square = [m.stride for m in conv_critic((1, 28, 3), 0) if isinstance(m, nn.Conv2d)]
    assert square == [(1, 1), (1, 1)]  # the smallest side (3) decides


def test_labels_change_the_output():
    g = ConvGenerator(6, 3, (1, 8, 8), channels=SMALL)
    z = g.sample_latent(4, make_generator(0)).repeat(3, 1)
    labels = torch.arange(3).repeat_interleave(4)
    out = g(z, labels).view(3, 4, -1)
    assert not torch.allclose(out[0], out[1]) and not torch.allclose(out[1], out[2])


def test_conditional_generator_requires_labels():
    g = ConvGenerator(6, 3, (1, 8, 8), channels=SMALL)
    with pytest.raises(ValueError, match="labels"):
        g(g.sample_latent(2, make_generator(0)), None)


def test_determinism_from_the_passed_generator_only():
    g = ConvGenerator(6, 3, (1, 8, 8), channels=SMALL)
    state = torch.get_rng_state()
    z1, z2 = (g.sample_latent(4, make_generator(7)) for _ in range(2))
    assert torch.equal(torch.get_rng_state(), state)  # global RNG untouched
    torch.testing.assert_close(z1, z2, rtol=0, atol=0)
    labels = labels_for(4, 3)
    torch.testing.assert_close(g(z1, labels, make_generator(1)), g(z2, labels), rtol=0, atol=0)


@pytest.mark.parametrize("norm", ["group", "none"])
@pytest.mark.parametrize("upsample", UPSAMPLING)
def test_gradients_reach_every_generator_parameter(norm, upsample):
    g = ConvGenerator(6, 3, (3, 7, 9), channels=SMALL, norm=norm, upsample=upsample)
    out = g(g.sample_latent(6, make_generator(0)), labels_for(6, 3))
    (out * torch.randn(out.shape, generator=make_generator(1))).sum().backward()
    for name, param in g.named_parameters():
        assert param.grad is not None and param.grad.abs().sum() > 0, name


def test_nearest_upsampling_has_no_transposed_convolution():
    g = ConvGenerator(6, 3, (1, 28, 28), channels=SMALL, upsample="nearest")
    assert not any(isinstance(m, nn.ConvTranspose2d) for m in g.modules())
    assert sum(isinstance(m, nn.Upsample) for m in g.modules()) == len(SMALL)
    with pytest.raises(ValueError, match="upsample"):
        ConvGenerator(6, 3, (1, 28, 28), upsample="bilinear")


def test_generator_has_no_batch_norm():
    g = ConvGenerator(6, 3, (1, 28, 28))
    assert not any(isinstance(m, nn.modules.batchnorm._BatchNorm) for m in g.modules())
    assert any(isinstance(m, nn.GroupNorm) for m in g.modules())


@pytest.mark.parametrize("shape", [(2, 5), (2, 4, 6)])
def test_condition_channels_broadcasts_and_works_in_vmap(shape):
    rows = torch.randn(4, *shape, generator=make_generator(0))
    onehot = onehot_for(4, 3)
    batched = condition_channels(rows, onehot)
    assert batched.shape == (4, shape[0] + 3, *shape[1:])
    torch.testing.assert_close(batched[:, : shape[0]], rows)
    expected = onehot.view(4, 3, *([1] * (len(shape) - 1))).expand(4, 3, *shape[1:])
    torch.testing.assert_close(batched[:, shape[0] :], expected)

    def one(r, o):  # a single example with its batch dim present as size 1
        return condition_channels(r.unsqueeze(0), o.unsqueeze(0)).squeeze(0)

    torch.testing.assert_close(vmap(one)(rows, onehot), batched)


@pytest.mark.parametrize("norm", ["none", "group"])
def test_per_example_critic_gradients_through_condition_channels(norm):
    """torch.func per-example gradients (the clipping oracle) match a loop of backwards."""
    critic = conv_critic((1, 8, 8), 3, channels=(4, 4), norm=norm)
    rows, onehot = torch.randn(3, 1, 8, 8, generator=make_generator(0)), onehot_for(3, 3)
    params = {k: v.detach() for k, v in critic.named_parameters()}

    def loss(p, r, o):
        x = condition_channels(r.unsqueeze(0), o.unsqueeze(0))
        return functional_call(critic, p, (x,)).sum()

    per_example = vmap(grad(loss), in_dims=(None, 0, 0))(params, rows, onehot)
    for i in range(3):
        critic.zero_grad()
        critic(condition_channels(rows[i : i + 1], onehot[i : i + 1])).sum().backward()
        for name, param in critic.named_parameters():
            torch.testing.assert_close(per_example[name][i], param.grad)


def test_flat_condition():
    rows, onehot = torch.randn(4, 2, 3, 5), onehot_for(4, 3)
    flat = flat_condition(rows, onehot)
    assert flat.shape == (4, 2 * 3 * 5 + 3)
    torch.testing.assert_close(flat[:, :30], rows.reshape(4, 30))
    torch.testing.assert_close(flat[:, 30:], onehot)
    assert flat_condition(rows, torch.zeros(4, 0)).shape == (4, 30)


def test_center_crop_takes_the_middle():
    x = torch.arange(8 * 8).view(1, 1, 8, 8)
    torch.testing.assert_close(center_crop(x, (5, 6)), x[..., 1:6, 1:7])


def test_group_norm_groups_have_at_least_two_channels():
    assert group_norm(64).num_groups == 32 and group_norm(8).num_groups == 4
    assert group_norm(3).num_groups == 1 and group_norm(1).num_groups == 1


def test_bad_arguments_are_rejected():
    with pytest.raises(ValueError, match="shape"):
        ConvGenerator(4, 0, (28, 28))
    with pytest.raises(ValueError, match="shape"):
        conv1d_critic((1, 8, 8), 0)
    with pytest.raises(ValueError, match="norm"):
        conv_critic((1, 8, 8), 0, norm="batch")
