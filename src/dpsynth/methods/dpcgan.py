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

One discriminator step is one ``PoissonSampledDpEvent(q, GaussianDpEvent(sigma))``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import dp_accounting
import torch
from torch.nn import functional as F

from dpsynth.data.encoder import Span
from dpsynth.errors import PrivacyError
from dpsynth.nets.mlp import Generator, make_discriminator, one_hot
from dpsynth.privacy.accounting import dpsgd_event
from dpsynth.privacy.clipping import clipped_gradient_sum
from dpsynth.privacy.noise import add_gaussian_noise


@dataclass(frozen=True)
class DPCGANConfig:
    """Hyperparameters of DP-CGAN; defaults follow the paper's "vanilla" settings."""

    batch_size: int = 64
    clip_norm: float = 1.0
    microbatches: int | None = None
    d_steps: int = 1
    latent_dim: int = 100
    generator_hidden: tuple[int, ...] = (128,)
    discriminator_hidden: tuple[int, ...] = (128,)
    d_lr_start: float = 0.15
    d_lr_end: float = 0.052
    d_lr_decay_steps: int = 1000
    g_lr: float = 2e-4
    g_beta1: float = 0.5
    gumbel_tau: float = 0.2

    def validate(self) -> None:
        if self.batch_size < 1:
            raise PrivacyError(f"batch size must be >= 1, got {self.batch_size}")
        if not self.clip_norm > 0:
            raise PrivacyError(f"clip norm C must be > 0 (math.inf for none), got {self.clip_norm}")
        if self.microbatches is not None and self.microbatches < 1:
            raise PrivacyError(f"microbatches must be >= 1, got {self.microbatches}")
        if self.d_steps < 1:
            raise PrivacyError(f"d_steps must be >= 1, got {self.d_steps}")


@dataclass(frozen=True)
class StepStats:
    """What one discriminator step did (for progress display and tests)."""

    d_loss: float
    real_batch_size: int
    clipped_fraction: float


class DPCGAN:
    """The networks, optimizers and one private discriminator step / generator step."""

    name = "dpcgan"

    def __init__(
        self,
        config: DPCGANConfig,
        spans: tuple[Span, ...],
        n_classes: int,
        label_prior: torch.Tensor | None,
        noise_multiplier: float,
        device: torch.device | str = "cpu",
    ) -> None:
        config.validate()
        if noise_multiplier < 0:
            raise PrivacyError(f"noise multiplier must be >= 0, got {noise_multiplier}")
        self.config = config
        self.noise_multiplier = float(noise_multiplier)
        self.n_classes = n_classes
        self.label_prior = label_prior
        data_dim = spans[-1].stop if spans else 0
        self.generator = Generator(
            config.latent_dim, n_classes, spans, config.generator_hidden, config.gumbel_tau
        ).to(device)
        self.discriminator = make_discriminator(
            data_dim, n_classes, config.discriminator_hidden
        ).to(device)
        self.d_optimizer = torch.optim.SGD(self.discriminator.parameters(), lr=config.d_lr_start)
        self.g_optimizer = torch.optim.Adam(
            self.generator.parameters(), lr=config.g_lr, betas=(config.g_beta1, 0.999)
        )

    # -- privacy --------------------------------------------------------------------------
    @property
    def is_private(self) -> bool:
        return self.noise_multiplier > 0 and math.isfinite(self.config.clip_norm)

    @property
    def noise_std(self) -> float:
        """Std of the noise added to the sum of clipped gradients (sensitivity times sigma)."""
        if not self.is_private:
            return 0.0
        sensitivity = self.config.clip_norm * (1 if self.config.microbatches is None else 2)
        return self.noise_multiplier * sensitivity

    def step_event(self, sample_rate: float, steps: int) -> dp_accounting.DpEvent:
        """The DP event of ``steps`` discriminator steps; non-private unless sigma > 0, C < inf."""
        if not self.is_private:
            return dp_accounting.NonPrivateDpEvent() if steps else dp_accounting.NoOpDpEvent()
        return dpsgd_event(sample_rate, self.noise_multiplier, steps)

    # -- training ------------------------------------------------------------------------------
    def sample_labels(self, n: int, generator: torch.Generator) -> torch.Tensor | None:
        """Labels for generated rows, drawn from the (public or DP) label prior."""
        if self.n_classes == 0:
            return None
        return torch.multinomial(self.label_prior, n, replacement=True, generator=generator)

    def generate(self, n: int, generator: torch.Generator, *, training: bool):
        labels = self.sample_labels(n, generator)
        z = self.generator.sample_latent(n, generator)
        rows = self.generator(z, labels, generator if training else None)
        return rows, labels

    def _d_input(self, rows: torch.Tensor, labels: torch.Tensor | None) -> torch.Tensor:
        return torch.cat([rows, one_hot(labels, self.n_classes, rows.shape[0], rows)], dim=1)

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
    ) -> StepStats:
        """One private discriminator update on a Poisson-sampled real batch."""
        batch = self.config.batch_size
        with torch.no_grad():
            fake_rows, fake_labels = self.generate(batch, generator, training=True)
        inputs = torch.cat(
            [self._d_input(real_rows, real_labels), self._d_input(fake_rows, fake_labels)]
        )
        n_real = real_rows.shape[0]
        targets = torch.cat([inputs.new_ones(n_real), inputs.new_zeros(batch)])

        def per_example_loss(logits: torch.Tensor) -> torch.Tensor:
            return F.binary_cross_entropy_with_logits(logits[:, 0], targets, reduction="none")

        groups = self._microbatch_groups(n_real, batch, generator, inputs.device)
        clipped = clipped_gradient_sum(
            self.discriminator, inputs, per_example_loss, self.config.clip_norm, groups
        )
        noisy = add_gaussian_noise(clipped.grads, self.noise_std, generator)
        self._apply_d_update(noisy, step)
        clip = self.config.clip_norm
        return StepStats(
            d_loss=float(clipped.losses.mean()),
            real_batch_size=n_real,
            clipped_fraction=float((clipped.norms > clip).float().mean())
            if clip < math.inf
            else 0.0,
        )

    def _microbatch_groups(self, n_real: int, n_fake: int, generator, device):
        """None for per-example clipping; else random microbatch ids, real and fake apart."""
        m = self.config.microbatches
        if m is None:
            return None
        real = torch.randint(0, m, (n_real,), generator=generator, device=device)
        fake = m + torch.randint(0, m, (n_fake,), generator=generator, device=device)
        return torch.cat([real, fake])

    def _apply_d_update(self, summed: list[torch.Tensor], step: int) -> None:
        # Divide by the expected number of clipped units (B rows, or m microbatches), a public
        # constant: the realised batch size depends on the data.
        units = (
            self.config.batch_size if self.config.microbatches is None else self.config.microbatches
        )
        for param, grad in zip(self.discriminator.parameters(), summed, strict=True):
            param.grad = grad / units
        self.set_d_learning_rate(step)
        self.d_optimizer.step()

    def generator_step(self, generator: torch.Generator) -> float:
        """One Adam step of G against the current (privately trained) discriminator."""
        rows, labels = self.generate(self.config.batch_size, generator, training=True)
        logits = self.discriminator(self._d_input(rows, labels))
        loss = F.binary_cross_entropy_with_logits(logits[:, 0], torch.ones_like(logits[:, 0]))
        params = list(self.generator.parameters())
        for param, grad in zip(params, torch.autograd.grad(loss, params), strict=True):
            param.grad = grad
        self.g_optimizer.step()
        return float(loss.detach())
