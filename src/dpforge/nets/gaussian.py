"""A class-conditional Gaussian in a linear subspace: the generator of moment anchoring.

``G(z, y) = clamp(scale * (offset + basis @ (mean_y + factor_y @ z)), -1, 1)`` with ``z`` of
dimension ``rank`` (the latent size). Its parameters are set in closed form from the DP
releases of :mod:`dpforge.statistics.moments` (post-processing), and they are ordinary
parameters: a private discriminator may refine them like any other generator's.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import torch
from torch import nn

from dpforge.nets.base import LatentGenerator


class SubspaceGaussianGenerator(LatentGenerator):
    """Records of ``shape`` from a per-class Gaussian on a ``rank``-dimensional subspace."""

    def __init__(self, latent_dim: int, n_classes: int, shape: Sequence[int]) -> None:
        super().__init__(latent_dim, n_classes)
        self.shape = tuple(int(s) for s in shape)
        dim, k = math.prod(self.shape), max(1, n_classes)
        self.scale = math.sqrt(dim)  # records were divided by sqrt(d) for the release
        self.basis = nn.Parameter(torch.zeros(dim, latent_dim))
        self.offset = nn.Parameter(torch.zeros(dim))
        self.means = nn.Parameter(torch.zeros(k, latent_dim))
        self.factors = nn.Parameter(torch.zeros(k, latent_dim, latent_dim))
        self.reset_release()

    def reset_release(self) -> None:
        """Before any release: a zero basis (every record at the offset, 0) and unit factors."""
        with torch.no_grad():
            for param in (self.basis, self.offset, self.means):
                param.zero_()
            self.factors.copy_(torch.eye(self.latent_dim).expand_as(self.factors))

    def set_release(
        self, basis: np.ndarray, mean: np.ndarray, means: np.ndarray, factors: np.ndarray
    ) -> None:
        """Take the released subspace (basis, mean of scaled records) and per-class Gaussians.

        A subspace of ``r`` below the latent size fills the first ``r`` latent coordinates; the
        rest get zero basis columns (they do not move the records).
        """
        r = basis.shape[1]
        if r > self.latent_dim:
            raise ValueError(f"a subspace of rank {r} exceeds the latent size {self.latent_dim}")
        basis_t = torch.as_tensor(basis, dtype=self.basis.dtype)
        mean_t = torch.as_tensor(mean, dtype=self.offset.dtype)
        with torch.no_grad():
            self.basis.zero_()
            self.basis[:, :r] = basis_t
            self.offset.copy_(mean_t - basis_t @ (basis_t.T @ mean_t))  # mean outside the span
            self.means.zero_()
            self.means[:, :r] = torch.as_tensor(means, dtype=self.means.dtype)
            self.factors.copy_(torch.eye(self.latent_dim).expand_as(self.factors))
            self.factors[:, :r, :r] = torch.as_tensor(factors, dtype=self.factors.dtype)

    def forward(
        self,
        z: torch.Tensor,
        labels: torch.Tensor | None,
        noise_generator: torch.Generator | None = None,
    ) -> torch.Tensor:
        if labels is None:
            labels = torch.zeros(z.shape[0], dtype=torch.long, device=z.device)
        coords = self.means[labels] + torch.einsum("nij,nj->ni", self.factors[labels], z)
        flat = self.scale * (self.offset + coords @ self.basis.T)
        return flat.clamp(-1.0, 1.0).view(z.shape[0], *self.shape)
