"""DP-CGAN (Torkzadehmahani et al. 2019), Algorithm 1 with its corrections.

Where the privacy barrier sits: the discriminator's update. Per step, a Poisson sample of real
records (rate q = B/N) and B generated rows go through the discriminator; each row's gradient
(real-data loss for a real row, fake-data loss for a generated row) is clipped to C on its own;
Gaussian noise N(0, sigma^2 C^2) is added ONCE to the sum; the sum is divided by the expected
batch size B, never by the realised one. Generated rows depend on no record, so clipping them is
the paper's choice and their gradients need no noise (the one noise draw covers the real part).

The generator sees the data only through the noisy discriminator (post-processing), draws its
labels from the label prior (never from the real batch) and is trained with Adam.

Microbatches (m < B): real rows are assigned uniformly at random to m microbatches and each
microbatch MEAN gradient is clipped to C. Adding or removing one record changes one clipped mean
by up to 2C (not C, as TF-Privacy's microbatching assumes), so the noise std is 2 sigma C and the
DP event stays Gaussian(sigma).

With a privacy unit (user-level DP-SGD) whole persons are Poisson-sampled at rate q and each
person's real-data gradient, summed over their at most k rows, is clipped to C as one unit
(microbatches are refused then): one person moves the sum by at most C, and the event is the
same with q over persons.

One discriminator step is one ``PoissonSampledDpEvent(q, GaussianDpEvent(sigma))``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch.nn import functional as F

from dpforge.distributed import ONE_PROCESS
from dpforge.errors import PrivacyError
from dpforge.methods.base import GanConfig, GanMethod, StepStats, check_common_config
from dpforge.privacy.clipping import ClippedGradients, clipped_gradient_sum
from dpforge.privacy.noise import add_gaussian_noise
from dpforge.privacy.sampling import PersonBatch


@dataclass(frozen=True)
class DPCGANConfig(GanConfig):
    """Hyperparameters of DP-CGAN; defaults follow the paper's "vanilla" settings."""

    microbatches: int | None = None
    latent_dim: int = 100
    d_lr_start: float = 0.15
    d_lr_end: float = 0.052
    d_lr_decay_steps: int = 1000
    # Non-private discriminator steps on the declared PUBLIC images (as real) against the
    # anchored generator's samples (as fake) before the DP-SGD refinement: free, reads no
    # private record (dpforge.methods.public_start); needs public_data and a refinement.
    public_warm_start_steps: int = 0

    def validate(self) -> None:
        check_common_config(self)
        if self.microbatches is not None and self.microbatches < 1:
            raise PrivacyError(f"microbatches must be >= 1, got {self.microbatches}")
        steps = self.public_warm_start_steps
        if isinstance(steps, bool) or not isinstance(steps, int) or steps < 0:
            raise PrivacyError(
                f"public_warm_start_steps must be a whole number >= 0, got {steps!r}"
            )


class DPCGAN(GanMethod):
    """DP-CGAN: private discriminator (DP-SGD), generator by Adam through it."""

    name = "dpcgan"

    def make_d_optimizer(self) -> torch.optim.Optimizer:
        return torch.optim.SGD(self.discriminator.parameters(), lr=self.config.d_lr_start)

    @property
    def noise_std(self) -> float:
        """Std of the noise added to the sum of clipped gradients (sensitivity times sigma)."""
        if not self.is_private:
            return 0.0
        sensitivity = self.config.clip_norm * (1 if self.config.microbatches is None else 2)
        return self.noise_multiplier * sensitivity

    def prepare(self, n_records, plan, generator, reducer=ONE_PROCESS, persons=None) -> None:
        """Set up sampling; refuse microbatches the processes cannot split before any step."""
        super().prepare(n_records, plan, generator, reducer, persons)
        self.local_microbatches()

    def set_d_learning_rate(self, step: int) -> None:
        """The paper's schedule: linear from d_lr_start to d_lr_end over d_lr_decay_steps."""
        c = self.config
        frac = min(1.0, step / c.d_lr_decay_steps) if c.d_lr_decay_steps > 0 else 1.0
        for group in self.d_optimizer.param_groups:
            group["lr"] = c.d_lr_start + frac * (c.d_lr_end - c.d_lr_start)

    def discriminator_step(
        self,
        real_rows: torch.Tensor,
        real_labels: torch.Tensor | None,
        step: int,
        generator: torch.Generator,
        persons: PersonBatch | None = None,
    ) -> StepStats:
        """One private discriminator update on a Poisson-sampled real batch (of whole persons
        when ``persons`` is given: each person's summed real-data gradient is clipped to C).

        On several processes (``self.reducer``) the real rows are this rank's sample and the
        generated rows its share of the step's B; the clipped sums are all-reduced once, and
        every rank adds the same noise draw from the shared ``generator``.
        """
        batch = self.config.batch_size
        with torch.no_grad():
            fake_rows, fake_labels = self.generate(batch, generator, training=True)
        fake_rows, fake_labels = self.share_of(fake_rows, fake_labels)
        clipped = self._clipped_sum(
            real_rows, real_labels, fake_rows, fake_labels, generator, persons
        )
        summed = self.reducer.sum(clipped.grads)
        noisy = add_gaussian_noise(summed, self.noise_std, generator)
        self.set_d_learning_rate(step)
        # Divide by the expected number of clipped units: B rows, or m microbatches.
        self.apply_d_gradients(noisy, self.config.microbatches or batch)
        clip = self.config.clip_norm
        norms = clipped.norms
        clipped_fraction = float((norms > clip).float().mean()) if clip < math.inf else 0.0
        loss = float(clipped.losses.mean()) if clipped.losses.numel() else math.nan
        return StepStats(loss, real_rows.shape[0], clipped_fraction)

    def _clipped_sum(self, real_rows, real_labels, fake_rows, fake_labels, generator, persons):
        """Sum of the clipped gradients of this rank's real rows (target 1) and generated rows
        (target 0); per example, per microbatch mean, or per person (sum over their rows)."""
        inputs = torch.cat(
            [self.d_input(real_rows, real_labels), self.d_input(fake_rows, fake_labels)]
        )
        n_real, n_fake = real_rows.shape[0], fake_rows.shape[0]
        if n_real + n_fake == 0:  # a rank whose share is empty (several processes only)
            return ClippedGradients(self.zero_gradients(), inputs.new_zeros(0), inputs.new_zeros(0))
        targets = torch.cat([inputs.new_ones(n_real), inputs.new_zeros(n_fake)])

        def per_example_loss(logits: torch.Tensor) -> torch.Tensor:
            return F.binary_cross_entropy_with_logits(logits[:, 0], targets, reduction="none")

        if persons is not None:
            groups, num_groups = self._person_groups(persons, n_fake, inputs.device)
        else:
            groups = self._microbatch_groups(
                n_real, n_fake, self.record_generator(generator), inputs.device
            )
            m = self.local_microbatches()
            num_groups = None if m is None else 2 * m
        return clipped_gradient_sum(
            self.discriminator,
            inputs,
            per_example_loss,
            self.config.clip_norm,
            groups,
            num_groups=num_groups,
            group_mean=persons is None,
        )

    def _person_groups(self, persons: PersonBatch, n_fake: int, device) -> tuple[torch.Tensor, int]:
        """Clipping units with a privacy unit: each person's real rows are one unit (their
        summed gradient clipped to C, no mean); each generated row is a unit of its own, as
        without a privacy unit. The unit ids and their number."""
        fake = persons.count + torch.arange(n_fake, device=device)
        groups = torch.cat([persons.persons.to(device), fake])
        return groups, persons.count + n_fake

    def local_microbatches(self) -> int | None:
        """Microbatches of this rank: m in one process, m / world_size on each of several
        (each rank clips whole microbatches of its own rows; m units in all)."""
        m = self.config.microbatches
        if m is None or self.reducer.world_size == 1:
            return m
        if m % self.reducer.world_size:
            raise PrivacyError(
                f"microbatches ({m}) must be a multiple of the number of processes "
                f"({self.reducer.world_size}): each process clips whole microbatches"
            )
        return m // self.reducer.world_size

    def _microbatch_groups(self, n_real: int, n_fake: int, generator, device):
        """None for per-example clipping; else random microbatch ids, real and fake apart."""
        m = self.local_microbatches()
        if m is None:
            return None
        real = torch.randint(0, m, (n_real,), generator=generator, device=device)
        fake = m + torch.randint(0, m, (n_fake,), generator=generator, device=device)
        return torch.cat([real, fake])

    def generator_loss(self, logits: torch.Tensor) -> torch.Tensor:
        """Non-saturating GAN loss: -log D(G(z))."""
        return F.binary_cross_entropy_with_logits(logits, torch.ones_like(logits))
