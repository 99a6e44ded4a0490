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


def test_all_softmax_heads_at_once_match_one_softmax_per_column_with_gradients():
    """A generator of softmax heads only (every anchored table) takes them in one segment
    softmax: the values and the gradients of a softmax of each column's own logits, for
    logits far apart in scale (the per-head maximum keeps it finite)."""
    widths = (3, 16, 2, 16, 16, 5, 1)
    starts = [sum(widths[:i]) for i in range(len(widths))]
    pairs = enumerate(zip(starts, widths, strict=True))
    spans = tuple(Span(f"c{i}", start, w, SOFTMAX) for i, (start, w) in pairs)
    g = Generator(8, 0, spans, hidden=(16,))
    raw = torch.randn(200, sum(widths), generator=make_generator(4), dtype=torch.float64)
    raw[:, 3:19] *= 300.0  # one head's logits in the hundreds, another's near 0
    upstream = torch.randn(raw.shape, generator=make_generator(5), dtype=torch.float64)

    def values_and_grad(heads) -> tuple[torch.Tensor, torch.Tensor]:
        x = raw.clone().requires_grad_(True)
        out = heads(x)
        (out * upstream).sum().backward()
        return out.detach(), x.grad

    fast = values_and_grad(lambda x: g.apply_heads(x, None))
    slow = values_and_grad(
        lambda x: torch.cat([torch.softmax(x[:, s.start : s.stop], dim=1) for s in spans], 1)
    )
    assert torch.isfinite(fast[0]).all()
    torch.testing.assert_close(fast[0], slow[0], rtol=1e-12, atol=1e-15)
    torch.testing.assert_close(fast[1], slow[1], rtol=1e-10, atol=1e-12)
