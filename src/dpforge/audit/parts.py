"""The parts of a DP-SGD step that an audit exercises, as the package implements them.

A DP-SGD step is: sample a batch (Poisson, rate q), clip every example's gradient to C and sum,
add N(0, σ²C²) once to the sum, divide by the expected batch size. The audits drive exactly the
package's functions for the first three (:class:`~dpforge.privacy.sampling.PoissonSampler`,
:func:`~dpforge.privacy.clipping.clipped_gradient_sum` and
:func:`~dpforge.privacy.clipping.clip_factors`, :func:`~dpforge.privacy.noise.add_gaussian_noise`)
through the small :class:`DpSgdParts` record, so that a test can swap one part for a broken
variant and check that the audit notices. The broken variants live in the tests only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn

from dpforge.privacy.clipping import clip_factors, clipped_gradient_sum
from dpforge.privacy.noise import add_gaussian_noise
from dpforge.privacy.sampling import PoissonSampler

__all__ = ["DpSgdParts", "clip_and_sum", "package_parts"]

PerExampleLoss = Callable[[torch.Tensor], torch.Tensor]


class BatchSampler:
    """What an audit needs of a sampler: ``sample(generator)`` -> indices of one batch."""

    def sample(self, generator: torch.Generator) -> torch.Tensor:  # pragma: no cover - protocol
        raise NotImplementedError


SamplerFactory = Callable[[int, float], BatchSampler]
ClipSum = Callable[[nn.Sequential, torch.Tensor, PerExampleLoss, float, torch.Tensor],
                   list[torch.Tensor]]  # fmt: skip
Noise = Callable[[list[torch.Tensor], float, torch.Generator], list[torch.Tensor]]


def clip_and_sum(
    model: nn.Sequential,
    inputs: torch.Tensor,
    per_example_loss: PerExampleLoss,
    clip_norm: float,
    canaries: torch.Tensor,
) -> list[torch.Tensor]:
    """Sum of per-example clipped gradients of ``inputs`` and of the gradient ``canaries``.

    ``canaries`` is a ``(k, P)`` matrix of flat per-example gradients inserted by an auditor
    (P = number of trainable parameters, in ``model.parameters()`` order): each is clipped to
    C with the package's :func:`clip_factors`, exactly as a real example's gradient is.
    """
    grads = clipped_gradient_sum(model, inputs, per_example_loss, clip_norm).grads
    if canaries.shape[0] == 0:
        return grads
    factors = clip_factors(canaries.norm(dim=1), clip_norm)
    return add_flat(grads, (canaries * factors[:, None]).sum(dim=0))


def add_flat(grads: list[torch.Tensor], flat: torch.Tensor) -> list[torch.Tensor]:
    """``grads`` plus a flat vector laid out in the same order."""
    out, start = [], 0
    for grad in grads:
        size = grad.numel()
        out.append(grad + flat[start : start + size].view_as(grad))
        start += size
    return out


@dataclass(frozen=True)
class DpSgdParts:
    """The sampler, the clipped sum and the noise of a DP-SGD step."""

    sampler: SamplerFactory
    clip_sum: ClipSum
    noise: Noise
    name: str = "dpforge"


def package_parts() -> DpSgdParts:
    """The package's own parts: what every dpforge training run uses."""
    return DpSgdParts(PoissonSampler, clip_and_sum, add_gaussian_noise, "dpforge")
