"""Gaussian noise for the sum of clipped gradients, and the generators that draw it.

Noise comes from a ``torch.Generator`` that the run owns. Without a seed it is seeded from the
operating system's entropy source (``secrets``), which is what a release run should use; a seed
makes runs reproducible for tests and benchmarks.
"""

from __future__ import annotations

import secrets

import torch


def make_generator(seed: int | None, device: str | torch.device = "cpu") -> torch.Generator:
    """A generator seeded with ``seed``, or with 63 bits from the OS when ``seed`` is None."""
    generator = torch.Generator(device=device)
    generator.manual_seed(secrets.randbits(63) if seed is None else int(seed))
    return generator


def add_gaussian_noise(
    grads: list[torch.Tensor], std: float, generator: torch.Generator
) -> list[torch.Tensor]:
    """Return ``g + N(0, std^2)`` for each tensor; ``std == 0`` returns the tensors unchanged."""
    if std == 0.0:
        return grads
    return [
        g + std * torch.randn(g.shape, generator=generator, device=g.device, dtype=g.dtype)
        for g in grads
    ]
