"""What every private GAN method shares: networks, label prior, generated batches.

A method subclass says only where the privacy barrier sits (its ``discriminator_step``), what
the generator minimises (``generator_loss``) and which DP event its steps are
(``step_event``). Training-loop plumbing lives in ``dpforge.training``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import dp_accounting
import torch

from dpforge.distributed import ONE_PROCESS, GradientReducer
from dpforge.errors import PrivacyError
from dpforge.kinds.generator import GeneratorConfig, KindGenerator
from dpforge.kinds.networks import family_of
from dpforge.nets.families import Layout, Networks, build_networks
from dpforge.nets.init import initialise
from dpforge.nets.mlp import one_hot
from dpforge.privacy.accounting import dpsgd_event
from dpforge.privacy.person import refuse_per_row_sgd
from dpforge.privacy.sampling import PersonBatch, PersonPoissonSampler, PoissonSampler
from dpforge.statistics.anchor import stratified_labels


@dataclass(frozen=True)
class StepStats:
    """What one discriminator step did (for progress display and tests)."""

    d_loss: float
    real_batch_size: int
    clipped_fraction: float


@dataclass(frozen=True)
class GanConfig:
    """Fields every method has; a method's config subclasses it and may change defaults."""

    batch_size: int = 64
    clip_norm: float = 1.0
    d_steps: int = 1
    adaptive_d_steps: bool = False
    adaptive_threshold: float = 0.6
    adaptive_increment: int = 5
    max_d_steps: int = 50
    latent_dim: int = 64
    generator_hidden: tuple[int, ...] = (128,)
    discriminator_hidden: tuple[int, ...] = (128,)
    g_lr: float = 2e-4
    g_beta1: float = 0.5
    gumbel_tau: float = 0.2
    ema_decay: float = 0.0  # > 0: release an exponential moving average of G's weights
    # Network families (dpforge.nets.families): "auto" picks the data type's default.
    generator_net: str = "auto"
    discriminator_net: str = "auto"
    generator_channels: tuple[int, ...] = (64, 32)
    discriminator_channels: tuple[int, ...] = (32, 64)
    discriminator_norm: str = "none"  # "group": GroupNorm (per example, so clipping-safe)

    def validate(self) -> None:
        check_common_config(self)


def check_common_config(config: Any) -> None:
    """Checks every method config shares: batch size, clip norm, steps ratio."""
    if config.batch_size < 1:
        raise PrivacyError(f"batch size must be >= 1, got {config.batch_size}")
    if not config.clip_norm > 0:
        raise PrivacyError(f"clip norm C must be > 0 (math.inf for none), got {config.clip_norm}")
    if config.d_steps < 1:
        raise PrivacyError(f"d_steps must be >= 1, got {config.d_steps}")
    if not 0.0 <= config.ema_decay < 1.0:
        raise PrivacyError(f"ema_decay must be in [0, 1), got {config.ema_decay}")
    if config.discriminator_norm not in ("none", "group"):
        raise PrivacyError(
            f"discriminator_norm must be 'none' or 'group', got '{config.discriminator_norm}' "
            "(BatchNorm mixes examples and is never used under per-example clipping)"
        )
    if config.max_d_steps < config.d_steps:
        raise PrivacyError(
            f"max_d_steps ({config.max_d_steps}) must be >= d_steps ({config.d_steps})"
        )


class GanMethod:
    """A refiner: the discriminator and the optimizers that train the kind's generator
    (:class:`KindGenerator`, handed to it); the private step is the subclass's."""

    name = "gan"
    # The generator's loss is post-processing (generated rows through the privately trained
    # discriminator) and may be shown in progress output; never the discriminator's.
    g_loss_is_public = True
    # The ranks' seam (dpforge.distributed): identity in one process, set by ``prepare``.
    reducer: GradientReducer = ONE_PROCESS
    rank_generator: torch.Generator | None = None

    def __init__(
        self,
        config: Any,
        layout: Layout,
        n_classes: int,
        label_prior: torch.Tensor | None,
        noise_multiplier: float,
        device: torch.device | str = "cpu",
        generator: KindGenerator | None = None,
    ) -> None:
        """``generator``: the kind's fitted generator to refine (None: a fresh one built from
        ``config``'s generator fields, for the discriminator alone and the method tests)."""
        config.validate()
        if noise_multiplier < 0:
            raise PrivacyError(f"noise multiplier must be >= 0, got {noise_multiplier}")
        if generator is None:
            spec = GeneratorConfig.of(config)
            generator = KindGenerator(spec, layout, n_classes, label_prior, device)
        self.model = generator
        self.config = config
        self.noise_multiplier = float(noise_multiplier)
        self.networks: Networks = build_networks(layout, family_of(layout), config, n_classes)
        self.discriminator = self.networks.make_discriminator().to(device)
        self.d_optimizer = self.make_d_optimizer()
        self.generator_average = generator.average()
        self.g_optimizer = torch.optim.Adam(
            self.generator.parameters(), lr=config.g_lr, betas=(config.g_beta1, 0.999)
        )

    @classmethod
    def refining(cls, model: KindGenerator, config: Any, noise_multiplier: float) -> GanMethod:
        """The refiner of the kind's fitted generator ``model``, its discriminators initialised
        from the run's stream where the generator's initialisation left it."""
        method = cls(
            config, model.layout, model.n_classes, model.label_prior, noise_multiplier,
            model.device, generator=model,
        )  # fmt: skip
        if model.init_stream is not None:
            for module in method.discriminators():
                initialise(module, model.init_stream)
        return method

    # -- the kind's generator, refined in place ---------------------------------------------
    @property
    def generator(self) -> torch.nn.Module:
        return self.model.generator

    @property
    def n_classes(self) -> int:
        return self.model.n_classes

    @property
    def label_prior(self) -> torch.Tensor | None:
        return self.model.label_prior

    @label_prior.setter
    def label_prior(self, value: torch.Tensor | None) -> None:
        self.model.label_prior = value

    @property
    def anchor(self) -> tuple[Any, float] | None:
        """(AnchorLoss, weight) the generator also matches (the kind's anchoring sets it)."""
        return self.model.anchor

    @anchor.setter
    def anchor(self, value: tuple[Any, float] | None) -> None:
        self.model.anchor = value

    @property
    def anchor_batch(self) -> int | None:
        return self.model.anchor_batch

    @anchor_batch.setter
    def anchor_batch(self, value: int | None) -> None:
        self.model.anchor_batch = value

    def make_d_optimizer(self) -> torch.optim.Optimizer:
        raise NotImplementedError

    # -- privacy --------------------------------------------------------------------------
    @property
    def is_private(self) -> bool:
        return self.noise_multiplier > 0 and math.isfinite(self.config.clip_norm)

    @staticmethod
    def resolve_config(config: Any, n_records: int) -> Any:
        """The config with anything that depends on the data set's size fixed (public N)."""
        return config

    @staticmethod
    def sample_rate(config: Any, n_records: int) -> float:
        """The probability that a given record takes part in one private step: q = B/N."""
        return config.batch_size / n_records

    @staticmethod
    def training_event(
        config: Any, sample_rate: float, noise_multiplier: float, steps: int
    ) -> dp_accounting.DpEvent:
        """The DP event of ``steps`` private steps at this noise (used to plan the budget)."""
        return dpsgd_event(sample_rate, noise_multiplier, steps)

    def step_event(self, sample_rate: float, steps: int) -> dp_accounting.DpEvent:
        """The DP event of the ``steps`` the run did (non-private when sigma = 0 or C = inf)."""
        return self.event_of(self.config, self.noise_multiplier, sample_rate, steps)

    @classmethod
    def event_of(
        cls, config: Any, noise_multiplier: float, sample_rate: float, steps: int
    ) -> dp_accounting.DpEvent:
        """:meth:`step_event` of a refiner with ``config`` and noise, before one is built (the
        planned ledger)."""
        if not (noise_multiplier > 0 and math.isfinite(config.clip_norm)):
            return dp_accounting.NonPrivateDpEvent() if steps else dp_accounting.NoOpDpEvent()
        return cls.training_event(config, sample_rate, noise_multiplier, steps)

    # -- generated batches -----------------------------------------------------------------
    def sample_labels(self, n: int, generator: torch.Generator) -> torch.Tensor | None:
        """Labels for generated rows, drawn from the (public or DP) label prior on the random
        generator's device (a CUDA run's generator cannot draw from a prior kept on the CPU)."""
        if self.n_classes == 0:
            return None
        prior = self.label_prior.to(generator.device)
        if n == 0:
            return torch.zeros(0, dtype=torch.long, device=prior.device)
        return torch.multinomial(prior, n, replacement=True, generator=generator)

    def generate(self, n: int, generator: torch.Generator, *, training: bool):
        labels = self.sample_labels(n, generator)
        z = self.generator.sample_latent(n, generator)
        rows = self.generator(z, labels, generator if training else None)
        return rows, labels

    def condition(self, labels: torch.Tensor | None, like: torch.Tensor) -> torch.Tensor:
        """One-hot labels (n, K) in ``like``'s dtype; (n, 0) for an unconditional model."""
        return one_hot(labels, self.n_classes, like.shape[0], like)

    def d_input(self, rows: torch.Tensor, labels: torch.Tensor | None) -> torch.Tensor:
        """The discriminator's input: the records with their labels joined in (row-wise
        concatenation, or constant label channels for convolutional critics)."""
        return self.networks.d_input(rows, self.condition(labels, rows))

    # -- steps ---------------------------------------------------------------------------------
    def prepare(
        self,
        n_records: int,
        plan: Any,
        generator: torch.Generator,
        reducer: GradientReducer = ONE_PROCESS,
        persons: torch.Tensor | None = None,
    ) -> None:
        """Set up sampling before the first step (or after a resume).

        ``n_records`` are this rank's records (all of them in one process); they are sampled at
        the plan's GLOBAL rate q, so the union over the ranks is a Poisson sample at rate q.
        ``persons`` (a privacy unit: each row's person code) samples whole persons at rate q
        instead, and the step clips each person's summed gradient (user-level DP-SGD).
        """
        self.reducer = reducer
        self.rank_generator = reducer.record_generator(generator)
        if persons is None:
            self.sampler = PoissonSampler(n_records, plan.sample_rate)
            return
        refuse_per_row_sgd(self.name, self.config, reducer.world_size)
        self.sampler = PersonPoissonSampler(persons, plan.sample_rate)

    def record_generator(self, generator: torch.Generator) -> torch.Generator:
        """The generator for draws whose count depends on this rank's real batch (sampling,
        microbatch ids, WGAN-GP partners): the run's own in one process, the rank's own on
        several (``generator`` must stay identical across ranks)."""
        if self.reducer.world_size == 1 or self.rank_generator is None:
            return generator
        return self.rank_generator

    def train_step(self, features, labels, state, generator: torch.Generator) -> None:
        """One private step (a discriminator step on a Poisson sample), and a generator step
        after every n_D of them. ``state`` is the loop's TrainingState, updated in place."""
        index, persons = self.draw_batch(generator)
        batch_labels = None if labels is None else labels[index]
        per_person = () if persons is None else (persons,)  # per record: the plain call
        stats = self.discriminator_step(
            features[index], batch_labels, state.step, generator, *per_person
        )
        state.d_loss = stats.d_loss
        state.step += 1
        state.d_since_g += 1
        if state.d_since_g >= (state.d_steps or self.config.d_steps):
            state.g_loss = self.generator_step(generator)
            state.d_since_g = 0
            state.d_steps = self.next_d_steps(state.d_steps or self.config.d_steps, generator)

    def draw_batch(self, generator: torch.Generator) -> tuple[torch.Tensor, PersonBatch | None]:
        """The rows of one Poisson sample, and (a privacy unit) the persons they belong to."""
        drawn = self.sampler.sample(self.record_generator(generator))
        if isinstance(drawn, PersonBatch):
            return drawn.rows, drawn
        return drawn, None

    def discriminator_step(
        self,
        real_rows: torch.Tensor,
        real_labels: torch.Tensor | None,
        step: int,
        generator: torch.Generator,
        persons: PersonBatch | None = None,
    ) -> StepStats:
        """One private discriminator update; ``persons`` (a privacy unit) says whose rows the
        real rows are: each person's summed gradient is then clipped to C."""
        raise NotImplementedError

    def generator_loss(self, logits: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def generator_step(self, generator: torch.Generator) -> float:
        """One Adam step of G against the current (privately trained) discriminator."""
        rows, labels = self.generate(self.config.batch_size, generator, training=True)
        loss = self.generator_loss(self.discriminator(self.d_input(rows, labels))[:, 0])
        if self.anchor is not None:
            loss = loss + self.anchor_loss(generator)
        params = list(self.generator.parameters())
        for param, grad in zip(params, torch.autograd.grad(loss, params), strict=True):
            param.grad = grad
        self.g_optimizer.step()
        self.update_average()
        return float(loss.detach())

    def anchor_loss(self, generator: torch.Generator) -> torch.Tensor:
        """The weighted marginal-anchor loss of a fresh, label-stratified generated batch."""
        anchor, weight = self.anchor
        n = self.anchor_batch or self.config.batch_size
        device = next(self.generator.parameters()).device
        labels = stratified_labels(n, self.n_classes, device)
        z = self.generator.sample_latent(n, generator)
        return weight * anchor(self.generator(z, labels), labels)

    @torch.no_grad()
    def update_average(self) -> None:
        """Move the averaged generator towards the current one (post-processing: free)."""
        decay = self.config.ema_decay
        for avg, cur in zip(
            self.generator_average.parameters(), self.generator.parameters(), strict=True
        ):
            avg.lerp_(cur, 1.0 - decay)

    def released_generator(self) -> torch.nn.Module:
        """The generator to release: the weight average when ema_decay > 0."""
        return self.generator_average if self.config.ema_decay > 0 else self.generator

    def next_d_steps(self, d_steps: int, generator: torch.Generator) -> int:
        """Discriminator steps before the next generator step (fixed unless adaptive).

        The adaptive rule of Bie, Kamath & Zhang (2023): when the discriminator tells fresh
        generated rows from real ones no better than ``adaptive_threshold``, it needs more steps,
        so n_D grows by ``adaptive_increment`` up to ``max_d_steps``. The check uses generated
        rows only (no record), and the total number of private steps is the plan's whatever
        n_D is, so it costs no privacy.
        """
        c = self.config
        if not c.adaptive_d_steps or d_steps >= c.max_d_steps:
            return d_steps
        if self.fake_detection_rate(generator) >= c.adaptive_threshold:
            return d_steps
        return min(c.max_d_steps, d_steps + c.adaptive_increment)

    def fake_detection_rate(self, generator: torch.Generator) -> float:
        """Share of fresh generated rows the discriminator calls fake (a score below 0)."""
        with torch.no_grad():
            rows, labels = self.generate(self.config.batch_size, generator, training=True)
            scores = self.discriminator(self.d_input(rows, labels))[:, 0]
        return float((scores < 0).float().mean())

    def share_of(
        self, rows: torch.Tensor, labels: torch.Tensor | None
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """This rank's share of a step's generated rows (all of them in one process): every
        rank draws the same rows, each clips and sums its own share once."""
        part = self.reducer.share(rows.shape[0])
        return rows[part], None if labels is None else labels[part]

    def zero_gradients(self) -> list[torch.Tensor]:
        """A clipped sum over no example (a rank whose share of a step is empty)."""
        return [torch.zeros_like(p) for p in self.discriminator.parameters()]

    def apply_d_gradients(self, summed: list[torch.Tensor], units: float) -> None:
        """Set the discriminator's gradients to ``summed / units`` and take an optimizer step.

        ``units`` is a public constant (the expected batch size): dividing by the realised
        batch size would make the step depend on the data outside the clipped sum.
        """
        for param, grad in zip(self.discriminator.parameters(), summed, strict=True):
            param.grad = grad / units
        self.d_optimizer.step()

    def trained_networks(self) -> list[torch.nn.Module]:
        """The networks whose weights training starts from (initialised by the run's seed, in
        this order)."""
        return [self.generator, *self.discriminators()]

    def discriminators(self) -> list[torch.nn.Module]:
        """The networks the refiner trains besides the generator (initialised by the run's
        seed after it)."""
        return [self.discriminator]

    def state_parts(self) -> dict[str, Any]:
        """Everything a checkpoint must restore (networks and optimizers)."""
        return {
            "generator": self.generator,
            "generator_average": self.generator_average,
            "discriminator": self.discriminator,
            "g_optimizer": self.g_optimizer,
            "d_optimizer": self.d_optimizer,
        }
