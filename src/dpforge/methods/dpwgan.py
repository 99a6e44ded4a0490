"""DP-WGAN-GP (Frigerio et al. 2019; Zhang et al. 2018; Schwabedal et al. 2020).

Where the privacy barrier sits: the critic's update. Per critic step, a Poisson sample of real
records (rate q = B/N) and B generated rows. Each real record i has its own loss

    l_i = -D(x_i) + lambda * (||grad_x D(x_hat_i)||_2 - 1)^2,  x_hat_i = u_i x_i + (1 - u_i) f_i,

with f_i a generated row drawn for it and u_i ~ U(0, 1): the gradient penalty touches the
record, so it is INSIDE the per-example clipped gradient. It is a second derivative: the
clipped sum comes from the ghost path of :mod:`dpforge.privacy.ghost_penalty` (exact, a few
times a plain step) for Linear/Conv/GroupNorm/LayerNorm critics, and from explicit per-example
gradients (torch.func, ~10-20x slower) for DPLSTM critics and with Bayesian accounting.
Each generated row j has the loss +D(f_j), clipped too (it depends on no record; clipping it
keeps the update's scale the paper's). Gaussian noise N(0, (sigma C_t)^2) is added once to the
sum, which is divided by the expected batch size B.

With a privacy unit (user-level DP-SGD) whole persons are Poisson-sampled at rate q, and the
gradient of a person's summed loss (score and penalty terms of their at most k rows) is
clipped to C as one unit: one person moves the sum by at most C, the event is the same with q
over persons.

Clipping decay: C_t = C * clip_decay^(t // clip_decay_every). Since the noise std is sigma C_t,
the noise-to-sensitivity ratio is sigma at every step and the DP event is unchanged.
The critic's optimizer is SGD or Adam (DP-Adam: Adam applied to the privatized gradient is
post-processing). n_critic = ``d_steps`` critic steps per generator step.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

import torch

from dpforge.distributed import ONE_PROCESS, GradientReducer
from dpforge.errors import PrivacyError
from dpforge.methods.base import GanConfig, GanMethod, StepStats, check_common_config
from dpforge.privacy.bayesian import MIN_PAIRS, BayesianAccountant, pair_distances
from dpforge.privacy.clipping import ClippedGradients, clipped_gradient_sum
from dpforge.privacy.ghost_penalty import clipped_gradient_sum_with_penalty, supports_penalty
from dpforge.privacy.noise import add_gaussian_noise
from dpforge.privacy.per_example import (
    clip_and_sum,
    flat_example_gradients,
    per_example_gradients,
)
from dpforge.privacy.sampling import PersonBatch

OPTIMIZERS = ("sgd", "adam")


@dataclass(frozen=True)
class DPWGANConfig(GanConfig):
    """Hyperparameters of DP-WGAN-GP."""

    clip_decay: float = 1.0
    clip_decay_every: int = 1000
    gp_weight: float = 10.0
    bayesian_accounting: bool = False
    bayesian_confidence: float = 0.95
    # Adult validation runs (bench/results/tables/adult_methods.md): n_critic 2 and batch 128 beat
    # the WGAN-GP habit of 5 and 64 under DP, since every critic step costs budget.
    batch_size: int = 128
    d_steps: int = 2
    optimizer: str = "adam"
    d_lr: float = 1e-3
    d_beta1: float = 0.5
    generator_hidden: tuple[int, ...] = (128, 128)
    g_lr: float = 1e-3

    def validate(self) -> None:
        check_common_config(self)
        if self.optimizer not in OPTIMIZERS:
            raise PrivacyError(f"optimizer must be one of {OPTIMIZERS}, got '{self.optimizer}'")
        if not 0 < self.clip_decay <= 1:
            raise PrivacyError(f"clip_decay must be in (0, 1], got {self.clip_decay}")
        if self.clip_decay_every < 1:
            raise PrivacyError(f"clip_decay_every must be >= 1, got {self.clip_decay_every}")
        if self.adaptive_d_steps:
            raise PrivacyError(
                "adaptive_d_steps reads the discriminator as a classifier (Bie et al.); a WGAN "
                "critic is not one: use dpcgan, or a fixed d_steps"
            )
        if self.gp_weight < 0:
            raise PrivacyError(f"gp_weight must be >= 0, got {self.gp_weight}")


class DPWGAN(GanMethod):
    """WGAN-GP with a DP-SGD / DP-Adam critic."""

    name = "dpwgan"
    bayesian: BayesianAccountant | None = None

    def make_d_optimizer(self) -> torch.optim.Optimizer:
        c = self.config
        params = self.discriminator.parameters()
        if c.optimizer == "adam":
            return torch.optim.Adam(params, lr=c.d_lr, betas=(c.d_beta1, 0.9))
        return torch.optim.SGD(params, lr=c.d_lr)

    def clip_norm_at(self, step: int) -> float:
        """The clipping bound after decay; the noise std follows it (sigma * C_t)."""
        c = self.config
        return c.clip_norm * c.clip_decay ** (step // c.clip_decay_every)

    def noise_std_at(self, step: int) -> float:
        return self.noise_multiplier * self.clip_norm_at(step) if self.is_private else 0.0

    def discriminator_step(
        self,
        real_rows: torch.Tensor,
        real_labels: torch.Tensor | None,
        step: int,
        generator: torch.Generator,
        persons: PersonBatch | None = None,
    ) -> StepStats:
        """One private critic update on a Poisson-sampled real batch (of whole persons when
        ``persons`` is given: each person's summed real loss gradient is clipped to C)."""
        batch, n_real = self.config.batch_size, real_rows.shape[0]
        clip = self.clip_norm_at(step)
        own = self.record_generator(generator)  # draws whose count depends on the real batch
        with torch.no_grad():
            fake_rows, fake_labels = self.generate(batch, generator, training=True)
            partners, _ = self.generate(n_real, own, training=True)
        real = self._real_part(real_rows, real_labels, partners, clip, own, persons)
        fake = self._fake_part(*self.share_of(fake_rows, fake_labels), clip)
        summed = [r + f for r, f in zip(real.grads, fake.grads, strict=True)]
        summed = self.reducer.sum(summed)  # over the ranks: one all-reduce (one process: as is)
        noisy = add_gaussian_noise(summed, self.noise_std_at(step), generator)
        self.apply_d_gradients(noisy, batch)
        norms = torch.cat([real.norms, fake.norms])
        clipped = float((norms > clip).float().mean()) if clip < math.inf else 0.0
        loss = (real.losses.sum() + fake.losses.sum()) / max(n_real + batch, 1)
        return StepStats(float(loss), n_real, clipped)

    def _fake_part(self, rows, labels, clip) -> ClippedGradients:
        """Clipped per-row gradients of +D(f) for this rank's share of the generated rows."""
        if rows.shape[0] == 0:  # a rank whose share is empty (several processes only)
            return ClippedGradients(self.zero_gradients(), rows.new_zeros(0), rows.new_zeros(0))
        return clipped_gradient_sum(
            self.discriminator, self.d_input(rows, labels), _fake_loss, clip
        )

    def _real_part(self, rows, labels, partners, clip, generator, persons=None):
        """Clipped per-record (or, ``persons`` given, per-person summed) gradients of -D(x)
        plus the gradient penalty on x_hat."""
        if rows.shape[0] == 0:
            zeros = [torch.zeros_like(p) for p in self.discriminator.parameters()]
            return ClippedGradients(zeros, rows.new_zeros(0), rows.new_zeros(0))
        cond = self.condition(labels, rows)
        real_in = self.networks.d_input(rows, cond)
        mix_shape = (rows.shape[0],) + (1,) * (rows.dim() - 1)
        mix = torch.rand(mix_shape, generator=generator, device=rows.device)
        hat_rows = mix * rows + (1 - mix) * partners
        groups = None if persons is None else persons.persons.to(rows.device)
        count = None if persons is None else persons.count
        if self.config.gp_weight == 0:
            return clipped_gradient_sum(
                self.discriminator, real_in, _real_loss, clip, groups,
                num_groups=count, group_mean=False,
            )  # fmt: skip
        if self.bayesian is None and supports_penalty(self.discriminator):
            return clipped_gradient_sum_with_penalty(
                self.discriminator,
                real_in,
                _real_loss,
                hat_rows,
                lambda x: self.networks.d_input(x, cond),
                self._penalty,
                clip,
                groups,
                count,
            )
        return self._real_part_torch_func(real_in, hat_rows, cond, clip, groups, count)

    def _penalty(self, slopes: torch.Tensor) -> torch.Tensor:
        """Per record: gp_weight * (||slope|| - 1)^2 (the slope w.r.t. the record only)."""
        norms = torch.sqrt(slopes.flatten(1).square().sum(1) + 1e-12)
        return self.config.gp_weight * (norms - 1.0) ** 2

    def _real_part_torch_func(self, real_in, hat_rows, cond, clip, groups=None, count=None):
        """The same clipped sum from explicit per-example gradients (torch.func): for critics
        the ghost path does not cover (DPLSTM), and for the Bayesian accountant, which needs
        the per-example gradients themselves."""
        join, penalty = self.networks.d_input, self._penalty

        def example_loss(forward, x_real, x_hat, y):
            score = forward(x_real.unsqueeze(0))[0, 0]
            # The penalty's slope is taken with respect to the record, not its label channels.
            slope = torch.func.grad(lambda x: forward(join(x[None], y[None]))[0, 0])(x_hat)
            return -score + penalty(slope[None])[0]

        grads, losses = per_example_gradients(
            self.discriminator, example_loss, (real_in, hat_rows, cond)
        )
        if self.bayesian is not None:
            self._observe_bayesian(grads, clip)
        return clip_and_sum(self.discriminator, grads, losses, clip, groups, count)

    # -- Bayesian accounting (Triastcyn & Faltings) -------------------------------------------
    def prepare(
        self,
        n_records: int,
        plan: Any,
        generator: torch.Generator,
        reducer: GradientReducer = ONE_PROCESS,
        persons: torch.Tensor | None = None,
    ) -> None:
        super().prepare(n_records, plan, generator, reducer, persons)
        c = self.config
        if c.bayesian_accounting and reducer.world_size > 1:
            raise PrivacyError(
                "the Bayesian bound reads every step's per-example gradients in one place; "
                "run dpwgan with bayesian_accounting on one process"
            )
        if c.bayesian_accounting and self.is_private and self.bayesian is None:
            self.bayesian = BayesianAccountant(
                self.noise_multiplier,
                plan.sample_rate,
                c.clip_norm,
                plan.steps,
                confidence=c.bayesian_confidence,
            )

    def _observe_bayesian(self, grads: dict[str, torch.Tensor], clip: float) -> None:
        """Feed this step's real per-example gradients, in disjoint pairs, to the Bayesian
        accountant; the time it takes is the extra cost of the Bayesian bound."""
        started = time.perf_counter()
        flat = flat_example_gradients(grads)
        if flat.shape[0] >= 2 * MIN_PAIRS:
            distances = pair_distances(flat, clip)
            self.bayesian.observe_step(distances, clip_norm=clip)
        self.bayesian.add_seconds(time.perf_counter() - started)

    def state_parts(self) -> dict[str, Any]:
        parts = super().state_parts()
        if self.bayesian is not None:
            parts["bayesian"] = self.bayesian
        return parts

    def generator_loss(self, scores: torch.Tensor) -> torch.Tensor:
        """The WGAN generator loss: -E[D(G(z))]."""
        return -scores.mean()


def _real_loss(scores: torch.Tensor) -> torch.Tensor:
    """Per record: minus the critic's score, which the critic pushes up."""
    return -scores[:, 0]


def _fake_loss(scores: torch.Tensor) -> torch.Tensor:
    """Per generated row: the critic's score, which the critic pushes down."""
    return scores[:, 0]
