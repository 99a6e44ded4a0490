"""GS-WGAN (Chen et al. 2020): sanitize the gradient that flows from the critic into G.

Where the privacy barrier sits: the gradient of the generator loss with respect to each
generated sample, dL_G/dG(z). The records are assigned to K disjoint subsets (each record to a
subset drawn independently and uniformly, which makes adding or removing a record change one
subset), one WGAN-GP critic each. Critics train WITHOUT noise on their own subset and are never
released. Every private step picks one critic uniformly at random, generates B samples; each
sample's upstream gradient through the picked critic is clipped to C and Gaussian noise of std
2 sigma C (sensitivity 2C: a changed critic can turn a clipped gradient into its opposite) is
added, and only this sanitized gradient is back-propagated through G.

How critics train (``critic_training``), so that the pick of a critic is independent of
everything and each critic depends on its own subset only (the argument is in
``dpforge.privacy.gswgan_accounting``):

* ``"frozen"`` (default): every critic trains ``warm_start_steps`` steps on its own subset
  before the first private step, against the initial generator (which depends on no record),
  and is frozen afterwards: a fixed function of its subset and its own random draws.
* ``"all"``: after the warm start, EVERY critic takes ``d_steps`` steps on its own subset at
  every private step, whichever critic the step picks: K times the critic work of the paper's
  code, which trains only the picked critic. That made the critics' weights depend on the
  hidden history of picks, which the subsampling argument does not cover (issue 13.3).

One step is ``SampledWithoutReplacementDpEvent(K, 1, SelfComposed(Gaussian(sigma), B))``: the
B sanitized gradients share one subset choice, so they are composed inside the subsampling.
The paper's own analysis composes T*B subsampled releases instead and under-counts; see
``dpforge.privacy.gswgan_accounting`` for both numbers and ``docs/gswgan.md`` for the finding.

``sanitize="batch"`` clips the step's B upstream gradients as ONE vector to C and adds the same
per-coordinate noise: one release per step, ``SampledWithoutReplacementDpEvent(K, 1,
Gaussian(sigma))``. B Gaussian releases at sigma are one Gaussian at sigma / sqrt(B), so at equal
epsilon the two options are the same DP event and differ only in how clipping shares the budget
between samples (each to C, or all together to C); ``docs/gswgan.md`` compares them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

import dp_accounting
import torch
from torch import nn

from dpforge.distributed import ONE_PROCESS, GradientReducer
from dpforge.errors import PrivacyError
from dpforge.methods.base import GanConfig, GanMethod, StepStats, check_common_config
from dpforge.privacy.clipping import clip_factors
from dpforge.privacy.gswgan_accounting import gswgan_event, gswgan_noise_std
from dpforge.privacy.person import refuse_per_row_sgd

RECORDS_PER_SUBSET = 64
CRITIC_TRAINING = ("frozen", "all")
SANITIZE = ("per_sample", "batch")


@dataclass(frozen=True)
class GSWGANConfig(GanConfig):
    """Hyperparameters of GS-WGAN. ``num_discriminators`` None: N // 64 (set at fit)."""

    batch_size: int = 32
    num_discriminators: int | None = None
    critic_training: str = "frozen"  # "frozen" after the warm start, or "all" every step
    # "per_sample" (the paper): each sample's upstream gradient clipped to C, B releases per
    # step; "batch": the step's B upstream gradients clipped to C as ONE vector, one release.
    sanitize: str = "per_sample"
    d_steps: int = 5  # with critic_training="all": steps of every critic per generator step
    warm_start_steps: int = 200
    gp_weight: float = 10.0
    d_lr: float = 1e-3
    d_beta1: float = 0.5
    generator_hidden: tuple[int, ...] = (128, 128)
    g_lr: float = 1e-3

    def validate(self) -> None:
        check_common_config(self)
        if self.num_discriminators is not None and self.num_discriminators < 1:
            raise PrivacyError(f"num_discriminators must be >= 1, got {self.num_discriminators}")
        if self.adaptive_d_steps:
            raise PrivacyError("adaptive_d_steps does not apply to gswgan")
        if self.warm_start_steps < 0:
            raise PrivacyError(f"warm_start_steps must be >= 0, got {self.warm_start_steps}")
        if self.sanitize not in SANITIZE:
            raise PrivacyError(f"sanitize must be one of {SANITIZE}, got '{self.sanitize}'")
        if self.critic_training not in CRITIC_TRAINING:
            raise PrivacyError(
                f"critic_training must be one of {CRITIC_TRAINING}, got '{self.critic_training}'"
            )
        if self.critic_training == "frozen" and self.warm_start_steps == 0:
            raise PrivacyError(
                "critic_training='frozen' needs warm_start_steps >= 1: frozen untrained critics "
                "teach the generator nothing"
            )

    def resolved(self, n_records: int) -> GSWGANConfig:
        """The config with K fixed for a data set of ``n_records`` (K is public: it depends on
        N only through the sample rate 1/K the accountant is told)."""
        if self.num_discriminators is not None:
            return self
        k = max(2, n_records // RECORDS_PER_SUBSET)
        return replace(self, num_discriminators=k)


def releases_per_step(config: GSWGANConfig) -> int:
    """Sanitized releases one step makes: B per-sample gradients, or one batch gradient."""
    return 1 if config.sanitize == "batch" else config.batch_size


class _Assignment:
    """Which subset each record belongs to (a private working state, saved in checkpoints)."""

    def __init__(self) -> None:
        self.subset = torch.zeros(0, dtype=torch.long)

    def state_dict(self) -> dict[str, torch.Tensor]:
        return {"subset": self.subset}

    def load_state_dict(self, state: dict[str, torch.Tensor]) -> None:
        self.subset = state["subset"]


class GSWGAN(GanMethod):
    """K non-private critics; the generator learns through sanitized sample gradients."""

    name = "gswgan"
    g_loss_is_public = False  # it is the score of a critic trained without noise

    def __init__(self, config: GSWGANConfig, *args: Any, **kwargs: Any) -> None:
        if config.num_discriminators is None:
            raise PrivacyError("GS-WGAN needs num_discriminators: call config.resolved(N)")
        super().__init__(config, *args, **kwargs)
        device = next(self.generator.parameters()).device
        self.critics = nn.ModuleList(
            self.networks.make_discriminator() for _ in range(config.num_discriminators)
        ).to(device)
        self.critic_optimizers = [
            torch.optim.Adam(c.parameters(), lr=config.d_lr, betas=(config.d_beta1, 0.9))
            for c in self.critics
        ]
        self.assignment = _Assignment()

    def make_d_optimizer(self) -> torch.optim.Optimizer:
        # The base class's single discriminator is unused; the critics have their own.
        return torch.optim.SGD(self.discriminator.parameters(), lr=0.0)

    # -- privacy ----------------------------------------------------------------------------
    @staticmethod
    def sample_rate(config: GSWGANConfig, n_records: int) -> float:
        """A record's subset is the queried one with probability 1/K."""
        return 1.0 / config.resolved(n_records).num_discriminators

    @staticmethod
    def training_event(
        config: GSWGANConfig, sample_rate: float, noise_multiplier: float, steps: int
    ) -> dp_accounting.DpEvent:
        k = round(1.0 / sample_rate)
        return gswgan_event(k, noise_multiplier, steps, batch_size=releases_per_step(config))

    @property
    def noise_std(self) -> float:
        if not self.is_private:
            return 0.0
        return gswgan_noise_std(self.noise_multiplier, self.config.clip_norm)

    # -- steps -------------------------------------------------------------------------------
    def prepare(
        self,
        n_records: int,
        plan: Any,
        generator: torch.Generator,
        reducer: GradientReducer = ONE_PROCESS,
        persons: torch.Tensor | None = None,
    ) -> None:
        """Assign every record to one of K subsets, independently and uniformly.

        One process only: a step's privacy barrier is ONE picked critic's sanitized gradient
        w.r.t. generated rows, not a sum over records that ranks could split and all-reduce
        (a federated GS-WGAN, one critic per site, is a different deployment).
        """
        if persons is not None:
            refuse_per_row_sgd(self.name, self.config, reducer.world_size)
        if reducer.world_size > 1:
            raise PrivacyError(
                "gswgan does not run on several processes (its private step is one critic's "
                "sanitized gradient, not a sum over records): use dpcgan or dpwgan, or one "
                "process"
            )
        if self.assignment.subset.numel() != n_records:
            k = self.config.num_discriminators
            self.assignment.subset = torch.randint(
                0, k, (n_records,), generator=generator, device=generator.device
            )

    @staticmethod
    def resolve_config(config: GSWGANConfig, n_records: int) -> GSWGANConfig:
        return config.resolved(n_records)

    def train_step(self, features, labels, state, generator: torch.Generator) -> None:
        """One sanitized G step through a critic picked uniformly at random.

        Critics never train depending on the pick: before the first step all of them train on
        their own subsets (the warm start); afterwards they are frozen, or (``"all"``) every
        one of them trains ``d_steps`` steps before the pick.
        """
        if state.step == 0 and self.config.warm_start_steps:
            self._train_every_critic(features, labels, self.config.warm_start_steps, generator)
        if self.config.critic_training == "all":
            state.d_loss = self._train_every_critic(
                features, labels, self.config.d_steps, generator
            )
        k = int(torch.randint(0, len(self.critics), (1,), generator=generator))
        state.g_loss = self._sanitized_generator_step(k, generator)
        state.step += 1

    def _train_every_critic(self, features, labels, steps: int, generator) -> float:
        """``steps`` non-private steps of EVERY critic on its own subset; the mean last loss.

        No critic's update depends on which critic a private step picks (nor on any subset but
        its own), which the subsampling argument needs; nothing of it is released.
        """
        losses = []
        for k in range(len(self.critics)):
            rows = torch.nonzero(self.assignment.subset == k).flatten()
            loss = math.nan
            for _ in range(steps):
                loss = self._critic_step(k, features, labels, rows, generator)
            losses.append(loss)
        finite = [x for x in losses if math.isfinite(x)]
        return sum(finite) / len(finite) if finite else math.nan

    def _critic_step(self, k: int, features, labels, rows, generator) -> float:
        """A plain (non-private) WGAN-GP step of critic k on a batch of its own subset."""
        if rows.numel() == 0:
            return math.nan
        pick = rows[torch.randint(0, rows.numel(), (self.config.batch_size,), generator=generator)]
        real = features[pick]
        real_labels = None if labels is None else labels[pick]
        with torch.no_grad():
            fake = self.generator(
                self.generator.sample_latent(len(pick), generator), real_labels, generator
            )
        critic = self.critics[k]
        mix_shape = (len(pick),) + (1,) * (real.dim() - 1)
        mix = torch.rand(mix_shape, generator=generator, device=real.device)
        hat = (mix * real + (1 - mix) * fake).requires_grad_(True)
        (slopes,) = torch.autograd.grad(
            critic(self.d_input(hat, real_labels)).sum(), hat, create_graph=True
        )
        penalty = ((slopes.flatten(1).norm(dim=1) - 1) ** 2).mean()
        loss = (
            critic(self.d_input(fake, real_labels)).mean()
            - critic(self.d_input(real, real_labels)).mean()
            + self.config.gp_weight * penalty
        )
        optimizer = self.critic_optimizers[k]
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        return float(loss.detach())

    def _sanitized_generator_step(self, k: int, generator: torch.Generator) -> float:
        """G step through critic k; only the clipped, noised sample gradients reach G."""
        rows, labels = self.generate(self.config.batch_size, generator, training=True)
        samples = rows.detach().requires_grad_(True)
        scores = self.critics[k](self.d_input(samples, labels))[:, 0]
        (upstream,) = torch.autograd.grad(-scores.sum(), samples)  # per sample: d(-D)/dx_i
        sanitized = self._sanitize(upstream, generator)
        self.g_optimizer.zero_grad(set_to_none=True)
        rows.backward(sanitized / self.config.batch_size)
        self.g_optimizer.step()
        self.update_average()
        return float(-scores.mean().detach())

    def _sanitize(self, upstream: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
        """Clip each sample's gradient (``sanitize="batch"``: the whole batch's, as one vector)
        to C, then add N(0, (2 sigma C)^2) to every coordinate."""
        clip = self.config.clip_norm
        if math.isfinite(clip):
            # Norms summed in float64; the factors' margin is that of upstream's dtype.
            units = upstream.reshape(1, -1) if self.config.sanitize == "batch" else upstream
            norms = units.flatten(1).double().norm(dim=1).to(upstream.dtype)
            factors = clip_factors(norms, clip)
            upstream = upstream * factors.view(-1, *([1] * (upstream.dim() - 1)))
        std = self.noise_std
        if std == 0.0:
            return upstream
        noise = torch.randn(upstream.shape, generator=generator, device=upstream.device)
        return upstream + std * noise

    def generator_step(self, generator: torch.Generator) -> float:  # pragma: no cover
        raise PrivacyError("GS-WGAN's generator only learns through _sanitized_generator_step")

    def discriminator_step(self, *args: Any, **kwargs: Any) -> StepStats:  # pragma: no cover
        raise PrivacyError("GS-WGAN's critics train in train_step, on their own subsets")

    def discriminators(self) -> list[nn.Module]:
        return list(self.critics)

    def state_parts(self) -> dict[str, Any]:
        parts = {
            "generator": self.generator,
            "g_optimizer": self.g_optimizer,
            "critics": self.critics,
            "assignment": self.assignment,
        }
        parts.update({f"critic_optimizer_{i}": o for i, o in enumerate(self.critic_optimizers)})
        return parts
