"""Generator heads: finite outputs, softmax blocks that are distributions, tanh in [-1, 1]."""

import torch

from dpforge.data.encoder import SOFTMAX, TANH, Span
from dpforge.nets.mlp import Generator, make_discriminator
from dpforge.privacy.noise import make_generator

SPANS = (Span("x", 0, 1, TANH), Span("c", 1, 3, SOFTMAX), Span("d", 4, 2, SOFTMAX))


def test_gumbel_and_softmax_heads_are_distributions():
    g = Generator(8, 2, SPANS, hidden=(16,))
    z = torch.randn(500, 8, generator=make_generator(0))
    labels = torch.randint(0, 2, (500,), generator=make_generator(1))
    for noise in (make_generator(2), None):  # training (Gumbel) and sampling (softmax)
        out = g(z, labels, noise)
        assert torch.isfinite(out).all()
        assert out[:, 0].abs().max() <= 1.0
        for start, stop in ((1, 4), (4, 6)):
            torch.testing.assert_close(out[:, start:stop].sum(1), torch.ones(500))
            assert (out[:, start:stop] >= 0).all()


def test_discriminator_has_no_batch_statistics():
    d = make_discriminator(6, 2, (32, 16))
    assert all(isinstance(m, torch.nn.Linear | torch.nn.LeakyReLU) for m in d)
