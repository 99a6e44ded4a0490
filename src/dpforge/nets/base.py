"""What every generator shares: its latent size, its number of classes, and latent noise drawn
only from the generator the run passes in (never torch's global random state)."""

from __future__ import annotations

import torch
from torch import nn


class LatentGenerator(nn.Module):
    """Base class of dpforge's generators; subclasses define ``forward(z, labels, ...)``."""

    def __init__(self, latent_dim: int, n_classes: int) -> None:
        super().__init__()
        self.latent_dim = latent_dim
        self.n_classes = n_classes

    def latent_shape(self, n: int) -> tuple[int, ...]:
        """The shape of the noise for ``n`` records: one latent vector per record."""
        return (n, self.latent_dim)

    def sample_latent(self, n: int, generator: torch.Generator) -> torch.Tensor:
        """Standard normal noise on the module's device and dtype, from ``generator`` only."""
        param = next(self.parameters())
        shape = self.latent_shape(n)
        return torch.randn(shape, generator=generator, device=param.device, dtype=param.dtype)
