"""The Poisson sampler keeps each record with probability exactly q (float64 uniforms)."""

from __future__ import annotations

import torch

from dpforge.privacy.noise import make_generator
from dpforge.privacy.sampling import PoissonSampler


def test_sampler_compares_float64_uniforms_with_q():
    """A float32 uniform takes 2^24 values: u < q would keep records at ceil(q 2^24) / 2^24."""
    q = 1e-4 + 3e-9  # not a multiple of 2^-24
    sampler = PoissonSampler(200_000, q)
    drawn = sampler.sample(make_generator(7))
    uniforms = torch.rand(200_000, generator=make_generator(7), dtype=torch.float64)
    assert torch.equal(drawn, torch.nonzero(uniforms < q).flatten())


def test_no_records_left_gives_empty_batches():
    """Every record may be dropped (all of its categories unreleased): no failure, no count."""
    assert PoissonSampler(0, 0.1).sample(make_generator(0)).numel() == 0
