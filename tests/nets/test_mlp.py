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


def test_equal_width_softmax_heads_in_one_call_match_one_softmax_per_column():
    """Neighbouring softmax heads of one width share a call: the same values, bit for bit, as
    a softmax of each column's own logits."""
    widths = (("a", 4), ("b", 4), ("c", 4), ("d", 2), ("e", 4))
    starts = (1, 5, 9, 13, 15)
    spans = (Span("x", 0, 1, TANH),) + tuple(
        Span(name, start, w, SOFTMAX) for (name, w), start in zip(widths, starts, strict=True)
    )
    g = Generator(8, 0, spans, hidden=(16,))
    raw = torch.randn(300, 19, generator=make_generator(3))
    expected = torch.cat(
        [torch.tanh(raw[:, :1])]
        + [torch.softmax(raw[:, s.start : s.stop], dim=1) for s in spans[1:]],
        dim=1,
    )
    assert torch.equal(g.apply_heads(raw, None), expected)
