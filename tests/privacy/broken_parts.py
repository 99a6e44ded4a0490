"""Deliberately broken DP-SGD parts, for the audit tests only (never in the package).

Each reproduces a mistake that published DP code bases made: no noise, clipping the batch mean
instead of each example, and shuffled fixed-size batches accounted as Poisson sampling.
"""

from __future__ import annotations

import math

import torch

from dpforge.audit.parts import DpSgdParts, add_flat, clip_and_sum
from dpforge.privacy.clipping import clip_factors, clipped_gradient_sum
from dpforge.privacy.noise import add_gaussian_noise
from dpforge.privacy.sampling import PoissonSampler


def no_noise(grads, std, generator):
    return grads


def clip_batch_mean(model, inputs, per_example_loss, clip_norm, canaries):
    """Sum every gradient unclipped, clip the batch MEAN to C, scale back to a sum."""
    total = clipped_gradient_sum(model, inputs, per_example_loss, math.inf).grads
    if canaries.shape[0]:
        total = add_flat(total, canaries.sum(dim=0))
    n = inputs.shape[0] + canaries.shape[0]
    flat = torch.cat([g.reshape(-1) for g in total]) / n
    factor = clip_factors(flat.norm().reshape(1), clip_norm)[0]
    return [g * factor for g in total]


class ShuffledBatches:
    """Fixed-size batches from a shuffled permutation, reshuffled every epoch (drop last)."""

    def __init__(self, n_records: int, batch_size: int) -> None:
        self.n_records, self.batch_size = n_records, batch_size
        self._order: torch.Tensor | None = None
        self._next = 0

    def sample(self, generator: torch.Generator) -> torch.Tensor:
        if self._order is None or self._next + self.batch_size > self.n_records:
            self._order = torch.randperm(self.n_records, generator=generator)
            self._next = 0
        batch = self._order[self._next : self._next + self.batch_size]
        self._next += self.batch_size
        return batch


def shuffled(batch_size: int):
    """A sampler factory whose batch size is the user's setting, whatever the data's size."""
    return lambda n_records, sample_rate: ShuffledBatches(n_records, batch_size)


NO_NOISE = DpSgdParts(PoissonSampler, clip_and_sum, no_noise, "no noise")
BATCH_MEAN = DpSgdParts(PoissonSampler, clip_batch_mean, add_gaussian_noise, "batch-mean clip")


def shuffled_parts(batch_size: int) -> DpSgdParts:
    return DpSgdParts(shuffled(batch_size), clip_and_sum, add_gaussian_noise, "shuffled batches")
