"""A 1-D convolutional generator for series: smooth curves by construction.

An MLP maps each output step on its own, so nothing ties neighbouring hours together and its
curves come out jagged; under DTW, a jagged curve is far from every real one and a 1-NN
classifier trained on such curves loses the class signal
(bench/results/series/italy_anchor_notes.md). Here the curve is built coarse to fine: ``z`` and the
one-hot label go through a small MLP to ``channels[0]`` feature maps of length ``ceil(L /
2**len(channels))``; each block doubles the length by linear interpolation (smooth by construction)
and applies a 5-wide convolution and ReLU; a last 5-wide convolution maps to the series' channels,
the result is centre-cropped to the length L and squashed by tanh. No normalisation layer holds
batch statistics.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import nn

from dpforge.nets.base import LatentGenerator
from dpforge.nets.conv import center_crop, check_shape, latent_with_condition, seed_size

KERNEL = 5


class Conv1dGenerator(LatentGenerator):
    """G(z, y) -> series of ``shape`` = (channels, length) in [-1, 1], upsampled coarse to fine.

    ``hidden`` is the width of the MLP before the first feature maps; ``channels`` the feature
    maps at each resolution (one doubling of the length per entry).
    """

    def __init__(
        self,
        latent_dim: int,
        n_classes: int,
        shape: Sequence[int],
        channels: Sequence[int] = (64, 32),
        hidden: int = 256,
    ) -> None:
        super().__init__(latent_dim, n_classes)
        self.shape = check_shape(shape, 1, "Conv1dGenerator")
        if not channels or min(channels) < 1 or hidden < 1:
            raise ValueError(
                f"Conv1dGenerator needs channels >= 1 (at least one) and hidden >= 1, got "
                f"{tuple(channels)}, {hidden}"
            )
        self.seed_shape = (int(channels[0]), seed_size(self.shape[1], len(channels)))
        self.project = nn.Sequential(
            nn.Linear(latent_dim + n_classes, hidden),
            nn.ReLU(),
            nn.Linear(hidden, math.prod(self.seed_shape)),
            nn.ReLU(),
        )
        widths = [*channels, self.shape[0]]
        layers: list[nn.Module] = []
        for i, (c_in, c_out) in enumerate(zip(widths[:-1], widths[1:], strict=True)):
            layers += [nn.Upsample(scale_factor=2, mode="linear", align_corners=False)]
            layers += [nn.Conv1d(c_in, c_out, KERNEL, padding=KERNEL // 2)]
            layers += [nn.ReLU()] if i < len(widths) - 2 else []
        self.body = nn.Sequential(*layers)

    def forward(
        self,
        z: torch.Tensor,
        labels: torch.Tensor | None,
        noise_generator: torch.Generator | None = None,
    ) -> torch.Tensor:
        """Series (n, channels, length) in [-1, 1]; ``noise_generator`` is accepted and ignored."""
        seed = self.project(latent_with_condition(z, labels, self.n_classes))
        maps = self.body(seed.view(z.shape[0], *self.seed_shape))
        return torch.tanh(center_crop(maps, self.shape[1:]))
