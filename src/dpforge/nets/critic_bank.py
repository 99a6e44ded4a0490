"""m MLP critics of one shape held as stacked weights, so that all of them train in one step.

GS-WGAN's amplification needs many critics (one of m is picked, hidden, per answer), and a
loop over m small networks is slow on a GPU (one kernel launch per layer per critic). Here
critic k is the slice k of every stacked parameter: the same network as
:func:`~dpforge.nets.mlp.flat_mlp_critic` (Linear, LeakyReLU(0.2), ..., Linear), computed for
all critics at once with batched matrix products. The slices are disjoint, so the gradient of a
sum of per-critic losses gives each critic the gradient of its own loss, and Adam (elementwise)
over the stack is m independent Adams: critic k depends only on its own batches.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence

import torch
from torch import nn
from torch.nn import functional as F

SLOPE = 0.2  # flat_mlp_critic's LeakyReLU slope


class CriticBank(nn.Module):
    """``m`` critics R^in_dim -> R with the hidden widths ``hidden``, as stacked weights."""

    def __init__(self, m: int, in_dim: int, hidden: Sequence[int]) -> None:
        super().__init__()
        dims = [int(in_dim), *(int(h) for h in hidden), 1]
        self.m = int(m)
        self.weights = nn.ParameterList(
            nn.Parameter(torch.zeros(self.m, a, b)) for a, b in zip(dims, dims[1:], strict=False)
        )
        self.biases = nn.ParameterList(nn.Parameter(torch.zeros(self.m, 1, b)) for b in dims[1:])

    def initialise(self, generator: torch.Generator) -> None:
        """Each critic in turn as :func:`dpforge.nets.init.initialise` draws a
        flat_mlp_critic's layers (weights U(±1/sqrt(fan in)) on the CPU, biases zero)."""
        with torch.no_grad():
            for k in range(self.m):
                for w, b in zip(self.weights, self.biases, strict=True):
                    fan_in, out = w.shape[1], w.shape[2]
                    bound = 1.0 / math.sqrt(fan_in)
                    draw = torch.empty(out, fan_in).uniform_(-bound, bound, generator=generator)
                    w[k].copy_(draw.T)
                    b[k].zero_()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Every critic on its own rows: x (m, n, in_dim) -> scores (m, n)."""
        last = len(self.weights) - 1
        for i, (w, b) in enumerate(zip(self.weights, self.biases, strict=True)):
            x = torch.baddbmm(b, x, w)
            if i < last:
                x = F.leaky_relu(x, SLOPE)
        return x[..., 0]

    def one(self, k: int, x: torch.Tensor) -> torch.Tensor:
        """Critic k alone: x (n, in_dim) -> scores (n, 1), as a flat_mlp_critic returns them."""
        last = len(self.weights) - 1
        for i, (w, b) in enumerate(zip(self.weights, self.biases, strict=True)):
            x = torch.addmm(b[k], x, w[k])
            if i < last:
                x = F.leaky_relu(x, SLOPE)
        return x

    def __len__(self) -> int:
        return self.m

    def __getitem__(self, k: int) -> BankCritic:
        if not 0 <= k < self.m:
            raise IndexError(f"critic {k} of a bank of {self.m}")
        return BankCritic(self, k)

    def __iter__(self) -> Iterator[BankCritic]:
        return (BankCritic(self, k) for k in range(self.m))


class BankCritic:
    """Critic k of a bank, callable as a network (a view: no parameters of its own)."""

    def __init__(self, bank: CriticBank, k: int) -> None:
        self.bank, self.k = bank, k

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return self.bank.one(self.k, x)
