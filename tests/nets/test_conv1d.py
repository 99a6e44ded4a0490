"""The 1-D upsampling generator for series: shapes, range, conditioning, smoothness."""

from __future__ import annotations

import pytest
import torch

from dpforge.nets.conv1d import Conv1dGenerator
from dpforge.nets.init import initialise
from dpforge.nets.lstm import LSTMGenerator
from dpforge.nets.mlp import FlatGenerator


def make(shape=(1, 24), n_classes=2, seed=0, **options) -> Conv1dGenerator:
    g = Conv1dGenerator(16, n_classes, shape, **options)
    initialise(g, torch.Generator().manual_seed(seed))
    return g


@pytest.mark.parametrize("shape", [(1, 24), (3, 7), (2, 100), (1, 1)])
@pytest.mark.parametrize("n_classes", [0, 3])
def test_shape_and_range(shape, n_classes):
    g = make(shape, n_classes, channels=(8, 4), hidden=32)
    labels = torch.arange(6) % n_classes if n_classes else None
    x = g(g.sample_latent(6, torch.Generator().manual_seed(1)), labels)
    assert x.shape == (6, *shape)
    assert x.abs().max() <= 1.0


def test_labels_change_the_output_and_are_required():
    g = make()
    z = g.sample_latent(4, torch.Generator().manual_seed(2))
    a, b = g(z, torch.zeros(4, dtype=torch.long)), g(z, torch.ones(4, dtype=torch.long))
    assert not torch.allclose(a, b)
    with pytest.raises(ValueError, match="labels"):
        g(z, None)


def test_determinism_from_the_passed_generator_only():
    def draw() -> torch.Tensor:
        g = make(n_classes=0, seed=5)
        return g(g.sample_latent(3, torch.Generator().manual_seed(3)), None)

    first = draw()
    torch.manual_seed(123)  # the global state must not matter
    assert torch.equal(first, draw())


def test_gradients_reach_every_parameter():
    g = make()
    z = g.sample_latent(5, torch.Generator().manual_seed(4))
    g(z, torch.arange(5) % 2).square().sum().backward()
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in g.parameters())


def roughness(x: torch.Tensor) -> float:
    """Mean squared second difference over the mean squared first difference."""
    d1 = x[..., 1:] - x[..., :-1]
    d2 = d1[..., 1:] - d1[..., :-1]
    return float(d2.square().mean() / d1.square().mean())


def test_untrained_curves_are_smoother_than_the_flat_and_recurrent_generators():
    """Why the generator exists: at initialisation its curves already vary slowly (linear
    upsampling and 5-wide kernels), where the MLP's and the LSTM's steps are independent."""
    seed = torch.Generator().manual_seed(6)
    conv, flat, lstm = make(), FlatGenerator(16, 2, (1, 24), (64,)), LSTMGenerator(16, 2, (1, 24))
    for net in (flat, lstm):
        initialise(net, torch.Generator().manual_seed(0))
    labels = torch.arange(200) % 2
    with torch.no_grad():
        smooth = roughness(conv(conv.sample_latent(200, seed), labels))
        rough = [roughness(n(n.sample_latent(200, seed), labels)) for n in (flat, lstm)]
    assert smooth < 0.5 * min(rough)


def test_bad_arguments_are_rejected():
    with pytest.raises(ValueError):
        Conv1dGenerator(8, 2, (24,))
    with pytest.raises(ValueError):
        Conv1dGenerator(8, 2, (1, 24), channels=())
