"""Conditional DCGAN-style networks for images and series.

Generators map ``(z, one-hot label)`` to records in [-1, 1]; critics are plain ``nn.Sequential``
stacks of ``Conv1d``/``Conv2d`` (groups=1, zeros padding), optional ``GroupNorm``,
``LeakyReLU``, ``Flatten`` and a final ``Linear`` to one score. That form is what the fast
per-example clipping understands, and it never holds batch statistics (no BatchNorm anywhere:
per-example clipping must not see other examples, and EMA copies of generators average
parameters only).

The critic's input already carries the condition: :func:`condition_channels` broadcasts the
one-hot label as constant extra channels, so a critic is built for ``shape[0] + n_classes``
input channels. :func:`flat_condition` does the same for MLP critics on flattened records.

Critic down-sampling rule (both 1-D and 2-D): a block uses a 4-wide kernel with stride 2 and
padding 1 (halving the size) while the smallest spatial size is at least 4; once it is below 4
the block uses a 3-wide kernel, stride 1, padding 1 (keeping the size), so tiny images and short
series never shrink to nothing.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import nn

from dpforge.nets.base import LatentGenerator
from dpforge.nets.mlp import one_hot

NORMS = ("group", "none")
UPSAMPLING = ("transpose", "nearest")
_DOWN = (4, 2, 1)  # kernel, stride, padding: halves the size
_KEEP = (3, 1, 1)  # keeps the size


def condition_channels(rows: torch.Tensor, onehot: torch.Tensor) -> torch.Tensor:
    """Append a (n, K) one-hot to (n, C, *spatial) rows as K constant channels.

    Uses views, ``expand`` and ``cat`` only, so it works inside ``torch.func.vmap`` on a single
    example whose batch dimension is present with size 1.
    """
    spatial = rows.shape[2:]
    cond = onehot.to(rows.dtype).reshape(*onehot.shape, *([1] * len(spatial)))
    cond = cond.expand(*onehot.shape, *spatial)
    return torch.cat([rows, cond], dim=1)


def flat_condition(rows: torch.Tensor, onehot: torch.Tensor) -> torch.Tensor:
    """Flatten (n, C, *spatial) rows to (n, C * prod(spatial)) and append the (n, K) one-hot."""
    return torch.cat([rows.flatten(1), onehot.to(rows.dtype)], dim=1)


def latent_with_condition(
    z: torch.Tensor, labels: torch.Tensor | None, n_classes: int
) -> torch.Tensor:
    """``z`` concatenated with the one-hot label (nothing appended when unconditional)."""
    if n_classes > 0 and labels is None:
        raise ValueError(f"this generator is conditional on {n_classes} classes: pass labels")
    return torch.cat([z, one_hot(labels, n_classes, z.shape[0], z)], dim=1)


def group_norm(channels: int) -> nn.GroupNorm:
    """GroupNorm with at most 32 groups of at least 2 channels each (1 group if impossible).

    At least 2 channels per group keeps it from degenerating into instance norm, which would
    make the bias of the layer before it useless.
    """
    limit = min(32, channels // 2)
    groups = max([g for g in range(1, limit + 1) if channels % g == 0], default=1)
    return nn.GroupNorm(groups, channels)


def center_crop(x: torch.Tensor, size: Sequence[int]) -> torch.Tensor:
    """The centre ``size`` of the trailing spatial dimensions of ``x``."""
    for axis, want in enumerate(size, start=x.dim() - len(size)):
        start = (x.shape[axis] - want) // 2
        x = x.narrow(axis, start, want)
    return x


def check_shape(shape: Sequence[int], n_spatial: int, what: str) -> tuple[int, ...]:
    """Validate a record shape ``(channels, *spatial)`` with ``n_spatial`` spatial dims."""
    shape = tuple(int(s) for s in shape)
    if len(shape) != 1 + n_spatial or min(shape) < 1:
        layout = "(channels, height, width)" if n_spatial == 2 else "(channels, length)"
        raise ValueError(f"{what} needs a shape {layout} of positive sizes, got {shape}")
    return shape


def check_norm(norm: str) -> str:
    """Validate a ``norm`` argument."""
    if norm not in NORMS:
        raise ValueError(f"norm must be one of {NORMS}, got {norm!r}")
    return norm


def seed_size(size: int, n_doublings: int) -> int:
    """Smallest starting size that reaches at least ``size`` after ``n_doublings`` doublings."""
    return max(1, math.ceil(size / 2**n_doublings))


class SeededImageGenerator(LatentGenerator):
    """The start every image generator shares: ``z`` + one-hot -> ``channels[0]`` maps of
    ``h0 x w0`` with ``h0 = ceil(H / 2**len(channels))``; and the end: centre crop, tanh."""

    def __init__(
        self, latent_dim: int, n_classes: int, shape: Sequence[int], channels: Sequence[int]
    ) -> None:
        super().__init__(latent_dim, n_classes)
        name = type(self).__name__
        self.shape = check_shape(shape, 2, name)
        if not channels:
            raise ValueError(f"{name} needs at least one entry in channels")
        self.seed_shape = (channels[0], *(seed_size(s, len(channels)) for s in self.shape[1:]))
        self.project = nn.Linear(latent_dim + n_classes, math.prod(self.seed_shape))

    def seed_maps(self, z: torch.Tensor, labels: torch.Tensor | None) -> torch.Tensor:
        seed = self.project(latent_with_condition(z, labels, self.n_classes))
        return seed.view(z.shape[0], *self.seed_shape)

    def finish(self, maps: torch.Tensor) -> torch.Tensor:
        """Crop the upsampled maps to exactly (H, W) and squash them into [-1, 1]."""
        return torch.tanh(center_crop(maps, self.shape[1:]))


class ConvGenerator(SeededImageGenerator):
    """DCGAN-style G(z, y) -> image of ``shape`` = (channels, height, width) in [-1, 1].

    A Linear layer maps ``z`` + one-hot to ``channels[0]`` maps of ``h0 x w0``; each of the
    ``len(channels)`` upsampling blocks doubles the size, through ``channels[1:]`` and finally
    to ``shape[0]``. ``h0 = ceil(H / 2**k)`` so any size works: the result is centre-cropped to
    exactly (H, W), then squashed by tanh. ``upsample``: ``"transpose"`` (a transposed
    convolution, kernel 4, stride 2, padding 1: the DCGAN block) or ``"nearest"`` (nearest-
    neighbour doubling, then a 3x3 convolution: no checkerboard pattern from overlapping
    kernels; Odena et al., Distill 2016). The ``upconv`` generator family is the latter.
    """

    def __init__(
        self,
        latent_dim: int,
        n_classes: int,
        shape: Sequence[int],
        channels: Sequence[int] = (128, 64),
        norm: str = "group",
        upsample: str = "transpose",
    ) -> None:
        super().__init__(latent_dim, n_classes, shape, channels)
        if upsample not in UPSAMPLING:
            raise ValueError(f"upsample must be one of {UPSAMPLING}, got {upsample!r}")
        layers: list[nn.Module] = _norm_act(channels[0], check_norm(norm))
        for c_in, c_out in zip(channels[:-1], channels[1:], strict=True):
            layers += _doubling(c_in, c_out, upsample, bias=norm == "none")
            layers += _norm_act(c_out, norm)
        layers += _doubling(channels[-1], self.shape[0], upsample, bias=True)
        self.body = nn.Sequential(*layers)

    def forward(
        self,
        z: torch.Tensor,
        labels: torch.Tensor | None,
        noise_generator: torch.Generator | None = None,
    ) -> torch.Tensor:
        """Images (n, *shape) in [-1, 1]; ``noise_generator`` is accepted and ignored."""
        return self.finish(self.body(self.seed_maps(z, labels)))


def _doubling(c_in: int, c_out: int, upsample: str, bias: bool) -> list[nn.Module]:
    """A block that doubles the spatial size: a transposed convolution, or nearest-neighbour
    upsampling followed by a 3x3 convolution."""
    if upsample == "transpose":
        return [nn.ConvTranspose2d(c_in, c_out, 4, 2, 1, bias=bias)]
    return [nn.Upsample(scale_factor=2, mode="nearest"), nn.Conv2d(c_in, c_out, 3, 1, 1, bias=bias)]


def _norm_act(channels: int, norm: str) -> list[nn.Module]:
    """Optional GroupNorm, then ReLU: the generator's block tail."""
    return ([group_norm(channels)] if norm == "group" else []) + [nn.ReLU()]


def conv_critic(
    shape: Sequence[int],
    n_classes: int,
    channels: Sequence[int] = (32, 64),
    norm: str = "none",
) -> nn.Sequential:
    """DCGAN-like image critic D(x, y) as a plain ``nn.Sequential``.

    Input: (n, shape[0] + n_classes, H, W), the image with the one-hot label as extra channels
    (see :func:`condition_channels`). Blocks follow the module's down-sampling rule, each
    followed by optional GroupNorm and LeakyReLU(0.2); then Flatten and a Linear to 1 score.
    """
    return _critic(check_shape(shape, 2, "conv_critic"), n_classes, channels, norm, nn.Conv2d)


def conv1d_critic(
    shape: Sequence[int],
    n_classes: int,
    channels: Sequence[int] = (32, 64),
    norm: str = "none",
) -> nn.Sequential:
    """Series critic D(x, y) as a plain ``nn.Sequential`` of Conv1d blocks.

    Input: (n, shape[0] + n_classes, length). Same down-sampling rule as :func:`conv_critic`:
    kernel 4 / stride 2 / padding 1 while the length is at least 4, else kernel 3 / stride 1.
    """
    return _critic(check_shape(shape, 1, "conv1d_critic"), n_classes, channels, norm, nn.Conv1d)


def _critic(
    shape: tuple[int, ...],
    n_classes: int,
    channels: Sequence[int],
    norm: str,
    conv: type[nn.Conv1d] | type[nn.Conv2d],
) -> nn.Sequential:
    check_norm(norm)
    layers: list[nn.Module] = []
    c_in, spatial = shape[0] + n_classes, list(shape[1:])
    for c_out in channels:
        kernel, stride, padding = _DOWN if min(spatial) >= 4 else _KEEP
        layers.append(conv(c_in, c_out, kernel, stride, padding))
        layers += ([group_norm(c_out)] if norm == "group" else []) + [nn.LeakyReLU(0.2)]
        spatial = [(s + 2 * padding - kernel) // stride + 1 for s in spatial]
        c_in = c_out
    layers += [nn.Flatten(), nn.Linear(c_in * math.prod(spatial), 1)]
    return nn.Sequential(*layers)
