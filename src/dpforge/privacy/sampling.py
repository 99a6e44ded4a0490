"""Samplers whose behaviour is exactly what the accountant assumes.

Poisson sampling: every record joins a batch independently with probability q, so the batch
size is random. This is what ``PoissonSampledDpEvent`` describes; shuffled fixed-size batches
are not, and would make the printed epsilon wrong. With a privacy unit the same holds for
persons: :class:`PersonPoissonSampler` draws each person with probability q.
"""

from __future__ import annotations

from dataclasses import dataclass

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


@dataclass(frozen=True)
class PersonBatch:
    """One batch of whole persons: the rows of every sampled person, and each row's person
    numbered ``0..count-1`` within the batch (the unit its gradient is clipped in)."""

    rows: torch.Tensor
    persons: torch.Tensor
    count: int


class PersonPoissonSampler:
    """Poisson sampling of PERSONS (user-level DP-SGD): each of the persons of ``person_of``
    joins a batch independently with probability q and brings all of their (at most k) rows.

    ``person_of`` gives each row's person as a code ``0..P-1`` (:mod:`dpforge.privacy.person`
    keeps at most k rows per person before). A neighbouring data set adds or removes one
    person, so one step is ``PoissonSampledDpEvent(q, GaussianDpEvent(sigma))`` with q over
    persons, exactly as per-record DP-SGD is with q over rows.
    """

    def __init__(self, person_of: torch.Tensor, sample_rate: float) -> None:
        if person_of.dim() != 1 or person_of.dtype != torch.int64:
            raise PrivacyError("person_of must be a 1-d int64 tensor of person codes")
        if person_of.numel() and int(person_of.min()) < 0:
            raise PrivacyError("person codes must be >= 0")
        self.person_of = person_of
        self.n_persons = int(person_of.max()) + 1 if person_of.numel() else 0
        self.persons = PoissonSampler(self.n_persons, sample_rate)

    @property
    def sample_rate(self) -> float:
        return self.persons.sample_rate

    @property
    def expected_batch_size(self) -> float:
        """Expected persons per batch (the clipped units)."""
        return self.persons.expected_batch_size

    def sample(self, generator: torch.Generator) -> PersonBatch:
        """The rows of the persons drawn (float64 uniforms, one per person)."""
        chosen = torch.zeros(self.n_persons, dtype=torch.bool, device=self.person_of.device)
        chosen[self.persons.sample(generator).to(self.person_of.device)] = True
        rows = torch.nonzero(chosen[self.person_of], as_tuple=False).flatten()
        present, persons = torch.unique(self.person_of[rows], return_inverse=True)
        return PersonBatch(rows, persons.flatten(), int(present.numel()))
