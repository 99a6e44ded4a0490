"""Samplers whose behaviour is exactly what the accountant assumes.

Poisson sampling: every record joins a batch independently with probability q, so the batch
size is random. This is what ``PoissonSampledDpEvent`` describes; shuffled fixed-size batches
are not, and would make the printed epsilon wrong.
"""

from __future__ import annotations

import torch

from dpforge.errors import PrivacyError


class PoissonSampler:
    """Draws index batches of a data set of ``n_records`` with sampling rate ``sample_rate``."""

    def __init__(self, n_records: int, sample_rate: float) -> None:
        if n_records < 0:  # 0 is allowed: every batch is then empty
            raise PrivacyError(f"cannot sample from {n_records} records")
        if not 0.0 < sample_rate <= 1.0:
            raise PrivacyError(f"the sampling rate must be in (0, 1], got {sample_rate}")
        self.n_records = n_records
        self.sample_rate = sample_rate

    @property
    def expected_batch_size(self) -> float:
        return self.n_records * self.sample_rate

    def sample(self, generator: torch.Generator) -> torch.Tensor:
        """Indices of one batch (possibly empty), each record kept with probability q.

        The uniforms are float64: a float32 uniform takes 2^24 values, so ``u < q`` would keep a
        record with probability ceil(q 2^24) / 2^24, above q (by 1.7e-4 relative at q = 1e-4).
        """
        keep = torch.rand(
            self.n_records, generator=generator, device=generator.device, dtype=torch.float64
        )
        return torch.nonzero(keep < self.sample_rate, as_tuple=False).flatten()
