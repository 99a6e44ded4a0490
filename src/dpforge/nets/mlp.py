"""Conditional MLP generator and discriminator (the DP-CGAN "vanilla" networks).

The discriminator is a plain ``nn.Sequential`` of Linear layers and parameter-free activations:
that is the form the fast per-example clipping understands, and it has no BatchNorm (which
would mix examples and break per-example clipping). The generator's output heads are built
from the encoder's spans: tanh for continuous columns, a softmax (or Gumbel-softmax, while
training) for each categorical column.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import nn
from torch.nn import functional as F

from dpforge.data.encoder import SOFTMAX, TANH, Span
from dpforge.nets.base import LatentGenerator


def mlp(in_dim: int, hidden: Sequence[int], out_dim: int, slope: float = 0.2) -> nn.Sequential:
    """Linear -> LeakyReLU blocks, then a final Linear layer."""
    layers: list[nn.Module] = []
    for width in hidden:
        layers += [nn.Linear(in_dim, width), nn.LeakyReLU(slope)]
        in_dim = width
    layers.append(nn.Linear(in_dim, out_dim))
    return nn.Sequential(*layers)


def one_hot(labels: torch.Tensor | None, n_classes: int, n_rows: int, like: torch.Tensor):
    """One-hot condition vectors; an empty (n_rows, 0) tensor for unconditional models."""
    if n_classes == 0 or labels is None:
        return like.new_zeros((n_rows, 0))
    return F.one_hot(labels, n_classes).to(like.dtype)


def make_discriminator(data_dim: int, n_classes: int, hidden: Sequence[int]) -> nn.Sequential:
    """D(x, y): the input is the encoded row concatenated with the one-hot label."""
    return mlp(data_dim + n_classes, hidden, 1)


class Generator(LatentGenerator):
    """G(z, y) -> encoded row, with one activation per span."""

    def __init__(
        self,
        latent_dim: int,
        n_classes: int,
        spans: Sequence[Span],
        hidden: Sequence[int] = (128,),
        gumbel_tau: float = 0.2,
    ) -> None:
        super().__init__(latent_dim, n_classes)
        self.spans = tuple(spans)
        self.gumbel_tau = gumbel_tau
        out_dim = self.spans[-1].stop if self.spans else 0
        self.body = mlp(latent_dim + n_classes, hidden, out_dim)

    def forward(
        self,
        z: torch.Tensor,
        labels: torch.Tensor | None,
        noise_generator: torch.Generator | None = None,
    ) -> torch.Tensor:
        """With ``noise_generator`` the categorical heads are Gumbel-softmax samples (training);
        without it they are plain softmax probabilities."""
        cond = one_hot(labels, self.n_classes, z.shape[0], z)
        raw = self.body(torch.cat([z, cond], dim=1))
        return self.apply_heads(raw, noise_generator)

    def apply_heads(
        self, raw: torch.Tensor, noise_generator: torch.Generator | None
    ) -> torch.Tensor:
        parts = []
        if noise_generator is None and self.spans and self._all_softmax():
            return _segment_softmax(raw, self._head_of_unit(raw.device), len(self.spans))
        if noise_generator is None:  # plain softmax: equal-width neighbours in one call
            for spans in _runs(self.spans):
                parts.append(_softmax_run(raw, spans))
            return torch.cat(parts, dim=1)
        for span in self.spans:
            block = raw[:, span.start : span.stop]
            if span.activation == TANH:
                parts.append(torch.tanh(block))
            elif span.activation == SOFTMAX:
                parts.append(_gumbel_softmax(block, self.gumbel_tau, noise_generator))
            else:
                raise ValueError(f"span '{span.column}': unknown activation {span.activation}")
        return torch.cat(parts, dim=1)

    def _all_softmax(self) -> bool:
        return all(span.activation == SOFTMAX for span in self.spans)

    def _head_of_unit(self, device: torch.device) -> torch.Tensor:
        """(D,): the index of the head each output unit belongs to."""
        sizes = torch.tensor([span.dim for span in self.spans], device=device)
        return torch.repeat_interleave(torch.arange(len(self.spans), device=device), sizes)


def _segment_softmax(raw: torch.Tensor, head: torch.Tensor, n_heads: int) -> torch.Tensor:
    """Every head's softmax over its own units at once, without slicing ``raw`` (each slice's
    backward writes a full-size zero gradient). The per-head maximum is subtracted for
    stability and detached: a softmax does not change when its inputs shift together."""
    n = raw.shape[0]
    index = head.expand(n, -1)
    top = raw.new_full((n, n_heads), -torch.inf)
    top = top.scatter_reduce(1, index, raw.detach(), reduce="amax")
    exp = torch.exp(raw - top.index_select(1, head))
    total = raw.new_zeros((n, n_heads)).index_add(1, head, exp)
    return exp / total.index_select(1, head)


def _runs(spans: Sequence[Span]) -> list[list[Span]]:
    """Consecutive spans grouped while they are softmax heads of one width (a table's numeric
    columns often share their cell count); any other span alone."""
    runs: list[list[Span]] = []
    for span in spans:
        last = runs[-1][-1] if runs else None
        same = last is not None and span.activation == SOFTMAX == last.activation
        if same and span.dim == last.dim and span.start == last.stop:
            runs[-1].append(span)
        else:
            runs.append([span])
    return runs


def _softmax_run(raw: torch.Tensor, spans: list[Span]) -> torch.Tensor:
    """The heads of one run: each span's own softmax (tanh for a lone tanh span), the run's
    equal-width softmax spans in one call (the same values, fewer small operations: a
    21-column table's anchor step spent about a fifth of its time in them)."""
    first, n = spans[0], len(spans)
    block = raw[:, first.start : spans[-1].stop]
    if first.activation == TANH:
        return torch.tanh(block)
    if first.activation != SOFTMAX:
        raise ValueError(f"span '{first.column}': unknown activation {first.activation}")
    shaped = block.reshape(raw.shape[0], n, first.dim)
    return torch.softmax(shaped, dim=2).reshape(raw.shape[0], n * first.dim)


def _gumbel_softmax(
    logits: torch.Tensor, tau: float, noise_generator: torch.Generator
) -> torch.Tensor:
    """A Gumbel-softmax sample of one head (training); the plain softmax is ``_softmax_run``."""
    uniform = torch.rand(
        logits.shape, generator=noise_generator, device=logits.device, dtype=logits.dtype
    )
    gumbel = -torch.log((-torch.log(uniform.clamp_min(1e-10))).clamp_min(1e-10))
    return torch.softmax((logits + gumbel) / tau, dim=1)


class FlatGenerator(LatentGenerator):
    """G(z, y) -> records of any fixed ``shape`` (images, series) from an MLP with a tanh head.

    The DP-CGAN paper's "vanilla" generator for MNIST: latent and one-hot label in, one hidden
    layer, C*H*W tanh outputs reshaped to (C, H, W).
    """

    def __init__(
        self, latent_dim: int, n_classes: int, shape: Sequence[int], hidden: Sequence[int]
    ) -> None:
        super().__init__(latent_dim, n_classes)
        self.shape = tuple(int(s) for s in shape)
        self.body = mlp(latent_dim + n_classes, hidden, math.prod(self.shape))

    def forward(
        self,
        z: torch.Tensor,
        labels: torch.Tensor | None,
        noise_generator: torch.Generator | None = None,
    ) -> torch.Tensor:
        cond = one_hot(labels, self.n_classes, z.shape[0], z)
        flat = torch.tanh(self.body(torch.cat([z, cond], dim=1)))
        return flat.view(z.shape[0], *self.shape)


def flat_mlp_critic(
    shape: Sequence[int], n_classes: int, hidden: Sequence[int] = (128,)
) -> nn.Sequential:
    """MLP critic on flattened records of ``shape`` with the one-hot label appended."""
    return mlp(math.prod(shape) + n_classes, hidden, 1)
