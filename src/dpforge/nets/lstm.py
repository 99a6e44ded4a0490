"""Conditional recurrent generator for time series, after Frigerio et al. (2019).

Noise enters at every time step: the latent is (n, length, latent_dim) and each step's input is
``z_t`` concatenated with the one-hot label, so the condition is seen throughout the sequence.
The matching critic here is an MLP on the flattened series plus the one-hot label (see
:func:`dpforge.nets.conv.flat_condition`); :func:`dpforge.nets.conv.conv1d_critic` is the
convolutional alternative.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from dpforge.nets.base import LatentGenerator
from dpforge.nets.conv import check_shape
from dpforge.nets.mlp import one_hot


class LSTMGenerator(LatentGenerator):
    """G(z_1..z_L, y) -> series of ``shape`` = (channels, length) in [-1, 1].

    ``nn.LSTM`` (batch first) over the per-step inputs ``[z_t, onehot(y)]``, then a Linear from
    ``hidden`` to ``channels`` and tanh at every step; the output is a contiguous
    (n, channels, length) tensor.
    """

    def __init__(
        self,
        latent_dim: int,
        n_classes: int,
        shape: Sequence[int],
        hidden: int = 64,
        layers: int = 1,
    ) -> None:
        super().__init__(latent_dim, n_classes)
        self.shape = check_shape(shape, 1, "LSTMGenerator")
        self.lstm = nn.LSTM(latent_dim + n_classes, hidden, num_layers=layers, batch_first=True)
        self.head = nn.Linear(hidden, self.shape[0])

    def latent_shape(self, n: int) -> tuple[int, ...]:
        """Noise at every time step (Frigerio et al.): (n, length, latent_dim)."""
        return (n, self.shape[1], self.latent_dim)

    def forward(
        self,
        z: torch.Tensor,
        labels: torch.Tensor | None,
        noise_generator: torch.Generator | None = None,
    ) -> torch.Tensor:
        """Series (n, channels, length) from z (n, length, latent_dim); ``noise_generator`` is
        accepted and ignored."""
        if z.dim() != 3 or z.shape[2] != self.latent_dim:
            raise ValueError(
                f"z must be (n, length, {self.latent_dim}) as sample_latent returns, "
                f"got {tuple(z.shape)}"
            )
        if self.n_classes > 0 and labels is None:
            raise ValueError(f"this generator is conditional on {self.n_classes} classes")
        n, length = z.shape[0], z.shape[1]
        cond = one_hot(labels, self.n_classes, n, z).unsqueeze(1).expand(n, length, -1)
        hidden, _ = self.lstm(torch.cat([z, cond], dim=2))
        return torch.tanh(self.head(hidden)).transpose(1, 2).contiguous()
