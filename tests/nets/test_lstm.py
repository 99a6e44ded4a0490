"""Recurrent series generator (noise at every step) and the flat MLP series critic."""

import pytest
import torch
from torch import nn

from dpforge.nets.conv import flat_condition
from dpforge.nets.lstm import LSTMGenerator
from dpforge.nets.mlp import flat_mlp_critic
from dpforge.privacy.noise import make_generator


def labels_for(n: int, n_classes: int) -> torch.Tensor | None:
    return torch.arange(n) % n_classes if n_classes else None


@pytest.mark.parametrize("shape", [(1, 24), (3, 10), (2, 1)])
@pytest.mark.parametrize("n_classes", [0, 2])
@pytest.mark.parametrize("layers", [1, 2])
def test_shape_and_range(shape, n_classes, layers):
    g = LSTMGenerator(4, n_classes, shape, hidden=8, layers=layers)
    z = g.sample_latent(5, make_generator(0))
    assert z.shape == (5, shape[1], 4)
    out = g(z, labels_for(5, n_classes))
    assert out.shape == (5, *shape)
    assert torch.isfinite(out).all() and out.abs().max() <= 1.0


def test_noise_enters_at_every_step():
    g = LSTMGenerator(4, 0, (1, 6), hidden=8)
    z = g.sample_latent(1, make_generator(0))
    later = z.clone()
    later[:, 3] += 1.0  # change only step 3's noise
    before, after = g(z, None), g(later, None)
    torch.testing.assert_close(before[..., :3], after[..., :3])  # the past is untouched
    assert not torch.allclose(before[..., 3], after[..., 3])


def test_labels_change_the_output():
    g = LSTMGenerator(4, 3, (2, 12), hidden=8)
    z = g.sample_latent(4, make_generator(0)).repeat(3, 1, 1)
    out = g(z, torch.arange(3).repeat_interleave(4)).view(3, 4, -1)
    assert not torch.allclose(out[0], out[1]) and not torch.allclose(out[1], out[2])


def test_determinism_from_the_passed_generator_only():
    g = LSTMGenerator(4, 2, (3, 10), hidden=8)
    state = torch.get_rng_state()
    z1, z2 = (g.sample_latent(4, make_generator(7)) for _ in range(2))
    assert torch.equal(torch.get_rng_state(), state)
    labels = labels_for(4, 2)
    torch.testing.assert_close(g(z1, labels, make_generator(1)), g(z2, labels), rtol=0, atol=0)


@pytest.mark.parametrize("layers", [1, 2])
def test_gradients_reach_every_parameter(layers):
    g = LSTMGenerator(4, 2, (3, 10), hidden=8, layers=layers)
    out = g(g.sample_latent(6, make_generator(0)), labels_for(6, 2))
    (out * torch.randn(out.shape, generator=make_generator(1))).sum().backward()
    for name, param in g.named_parameters():
        assert param.grad is not None and param.grad.abs().sum() > 0, name


def test_bad_inputs_are_rejected():
    g = LSTMGenerator(4, 2, (3, 10), hidden=8)
    with pytest.raises(ValueError, match="labels|conditional"):
        g(g.sample_latent(2, make_generator(0)), None)
    with pytest.raises(ValueError, match="length"):
        g(torch.zeros(2, 4), labels_for(2, 2))
    with pytest.raises(ValueError, match="shape"):
        LSTMGenerator(4, 0, (1, 8, 8))


@pytest.mark.parametrize("shape", [(1, 24), (3, 10)])
def test_flat_mlp_critic_is_plain_and_scores_flat_rows(shape):
    critic = flat_mlp_critic(shape, 2, hidden=(16, 8))
    assert type(critic) is nn.Sequential
    assert all(type(m) in (nn.Linear, nn.LeakyReLU) for m in critic)
    assert critic[0].in_features == shape[0] * shape[1] + 2 and critic[-1].out_features == 1
    g = LSTMGenerator(4, 2, shape, hidden=8)
    labels = labels_for(5, 2)
    out = g(g.sample_latent(5, make_generator(0)), labels)
    assert critic(flat_condition(out, torch.eye(2)[labels])).shape == (5, 1)
