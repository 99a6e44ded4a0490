"""Conditional residual image generator (the generator family GS-WGAN uses).

GS-WGAN trains the generator through privatised gradients on its OUTPUT, so the generator is
free to be deep; residual up-sampling blocks keep it trainable. BatchNorm is replaced by
GroupNorm: EMA copies of a generator average parameters only, and batch statistics would tie a
generated sample to the others in its batch.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn
from torch.nn import functional as F

from dpforge.nets.conv import (
    SeededImageGenerator,
    check_norm,
    group_norm,
)


class UpBlock(nn.Module):
    """Pre-activation residual block that doubles the spatial size.

    main: [norm] -> ReLU -> nearest x2 -> conv3x3 -> [norm] -> ReLU -> conv3x3;
    skip: nearest x2 -> conv1x1 when the channel count changes, else identity.
    """

    def __init__(self, c_in: int, c_out: int, norm: str = "group") -> None:
        super().__init__()
        grouped = check_norm(norm) == "group"
        self.norm1 = group_norm(c_in) if grouped else nn.Identity()
        self.conv1 = nn.Conv2d(c_in, c_out, 3, padding=1, bias=not grouped)
        self.norm2 = group_norm(c_out) if grouped else nn.Identity()
        self.conv2 = nn.Conv2d(c_out, c_out, 3, padding=1)
        self.skip = nn.Conv2d(c_in, c_out, 1) if c_in != c_out else nn.Identity()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(n, c_in, h, w) -> (n, c_out, 2h, 2w)."""
        h = F.interpolate(F.relu(self.norm1(x)), scale_factor=2, mode="nearest")
        h = self.conv2(F.relu(self.norm2(self.conv1(h))))
        return h + self.skip(F.interpolate(x, scale_factor=2, mode="nearest"))


class ResNetGenerator(SeededImageGenerator):
    """Residual G(z, y) -> image of ``shape`` = (channels, height, width) in [-1, 1].

    A Linear layer maps ``z`` + one-hot to ``channels[0]`` maps of ``h0 x w0``; ``len(channels)``
    residual blocks each double the size (through ``channels[1:]``, the last one keeping
    ``channels[-1]``); then [norm] -> ReLU -> conv3x3 to ``shape[0]``, a centre crop to exactly
    (H, W) (``h0 = ceil(H / 2**k)``) and tanh.
    """

    def __init__(
        self,
        latent_dim: int,
        n_classes: int,
        shape: Sequence[int],
        channels: Sequence[int] = (128, 64),
        norm: str = "group",
    ) -> None:
        super().__init__(latent_dim, n_classes, shape, channels)
        outs = (*channels[1:], channels[-1])
        self.blocks = nn.Sequential(
            *(UpBlock(c_in, c_out, norm) for c_in, c_out in zip(channels, outs, strict=True))
        )
        self.out_norm = group_norm(channels[-1]) if norm == "group" else nn.Identity()
        self.out_conv = nn.Conv2d(channels[-1], self.shape[0], 3, padding=1)

    def forward(
        self,
        z: torch.Tensor,
        labels: torch.Tensor | None,
        noise_generator: torch.Generator | None = None,
    ) -> torch.Tensor:
        """Images (n, *shape) in [-1, 1]; ``noise_generator`` is accepted and ignored."""
        h = self.blocks(self.seed_maps(z, labels))
        return self.finish(self.out_conv(F.relu(self.out_norm(h))))
