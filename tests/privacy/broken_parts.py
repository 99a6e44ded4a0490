"""Deliberately broken parts, for the audit tests and the audit bench only (never in the package).

The DP-SGD parts reproduce mistakes that published DP code bases made: no noise, clipping the
batch mean instead of each example, and shuffled fixed-size batches accounted as Poisson
sampling. The planted defects below break the real code paths of a fit (the anchoring releases,
the metadata estimates, the methods' discriminator steps) in two ways: the noise divided by 4,
and a sensitivity off by 2x (derived too small, or a record counted twice).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from unittest import mock

import torch

from dpforge.audit.parts import DpSgdParts, add_flat, clip_and_sum
from dpforge.audit.release_targets import metadata_estimates
from dpforge.methods import dpcgan, dpwgan
from dpforge.privacy.clipping import clip_factors, clipped_gradient_sum
from dpforge.privacy.noise import add_gaussian_noise
from dpforge.privacy.sampling import PoissonSampler
from dpforge.statistics import cells, features, moments, rounds


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


# ----------------------------------------------------------------------------- planted defects
# Defects planted on the paths a default fit really runs: each wraps the package's own function
# where its caller looks it up (a module attribute), for the length of a ``with planted(...)``.


@dataclass(frozen=True)
class Defect:
    """``make(real)`` returns the broken stand-in for ``owner.attribute``."""

    name: str
    owner: Any
    attribute: str
    make: Callable[[Any], Any]


@contextmanager
def planted(defect: Defect | None) -> Iterator[None]:
    """Run the block with ``defect`` in place (``None``: the package as it is)."""
    if defect is None:
        yield
        return
    real = getattr(defect.owner, defect.attribute)
    with mock.patch.object(defect.owner, defect.attribute, defect.make(real)):
        yield


NOISE_BY_4 = "noise ÷ 4"
SENSITIVITY_X2 = "sensitivity × 2"


def _noise_arg_divided(position: int, factor: float = 4.0):
    """Wrap ``real`` so that its positional argument ``position`` (a noise, or with a factor
    below 1 a clip norm multiplied) is divided by ``factor``."""

    def make(real):
        def broken(*args, **kwargs):
            args = list(args)
            args[position] = args[position] / factor
            return real(*args, **kwargs)

        return broken

    return make


def _halved(real):
    return lambda *args, **kwargs: real(*args, **kwargs) / 2.0


def _one_at_a_time(real):
    """Measure every marginal (histogram) alone: noise for sensitivity 1, not sqrt(k)."""

    def broken(blocks, chosen, noise, rng, total, *rest):
        return [m for one in chosen for m in real(blocks, [one], noise, rng, total, *rest)]

    return broken


def _columns_one_at_a_time(real):
    def broken(table, columns, noise, rng, *rest):
        return {k: v for c in columns for k, v in real(table, [c], noise, rng, *rest).items()}

    return broken


def _counted_twice(real):
    return lambda *args, **kwargs: 2.0 * real(*args, **kwargs)


RELEASE_DEFECTS = {
    "marginals": [
        Defect(NOISE_BY_4, rounds, "measure_marginals", _noise_arg_divided(2)),
        Defect(SENSITIVITY_X2, rounds, "measure_marginals", _one_at_a_time),
    ],
    "cells": [
        Defect(NOISE_BY_4, cells, "measure_fine_histograms", _noise_arg_divided(2)),
        Defect(SENSITIVITY_X2, cells, "measure_fine_histograms", _columns_one_at_a_time),
    ],
    "moments": [
        Defect(NOISE_BY_4, moments, "class_moments", _noise_arg_divided(4)),
        Defect(SENSITIVITY_X2, moments, "moment_sensitivity", _halved),
    ],
    "subspace": [
        Defect(NOISE_BY_4, moments, "principal_subspace", _noise_arg_divided(3)),
        Defect(SENSITIVITY_X2, moments, "moment_sensitivity", _halved),
    ],
    "embedding": [
        Defect(NOISE_BY_4, features, "measure_embedding", _noise_arg_divided(4)),
        Defect(SENSITIVITY_X2, features, "embedding_sensitivity", _halved),
    ],
    "label-prior": [
        Defect(NOISE_BY_4, metadata_estimates, "gaussian_histogram", _noise_arg_divided(1)),
        Defect(SENSITIVITY_X2, metadata_estimates, "_class_counts", _counted_twice),
    ],
}


def _tf_privacy_microbatch_noise(real):
    """TF-Privacy's microbatch noise: sigma C, where one record moves a clipped mean by 2C."""
    return property(lambda self: self.noise_multiplier * self.config.clip_norm)


STEP_DEFECTS = {
    "dpcgan-step": [
        Defect(NOISE_BY_4, dpcgan, "add_gaussian_noise", _noise_arg_divided(1)),
        Defect(SENSITIVITY_X2, dpcgan, "clipped_gradient_sum", _noise_arg_divided(3, 0.5)),
    ],
    "dpcgan-microbatch-step": [
        Defect(NOISE_BY_4, dpcgan, "add_gaussian_noise", _noise_arg_divided(1)),
        Defect(SENSITIVITY_X2, dpcgan.DPCGAN, "noise_std", _tf_privacy_microbatch_noise),
    ],
    "dpwgan-step": [
        Defect(NOISE_BY_4, dpwgan, "add_gaussian_noise", _noise_arg_divided(1)),
        Defect(
            SENSITIVITY_X2, dpwgan, "clipped_gradient_sum_with_penalty", _noise_arg_divided(6, 0.5)
        ),
    ],
}
