"""The generator a kind fits to its releases, owned by the fit and not by any refiner.

A fit without refinement builds this and nothing more: no discriminator, no GAN config, no
optimiser for either. A refiner (:mod:`dpforge.methods`) is handed it when the plan has
discriminator steps, and trains it further; loading a model folder rebuilds only it.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, fields
from typing import Any

import torch

from dpforge.errors import PrivacyError
from dpforge.kinds.networks import family_of
from dpforge.nets.families import Layout, build_generator
from dpforge.nets.init import initialise


@dataclass(frozen=True)
class GeneratorConfig:
    """What builds a generator (the fields of every method's config that name it; the
    defaults are DP-CGAN's, the generator every earlier default fit built)."""

    latent_dim: int = 100
    generator_hidden: tuple[int, ...] = (128,)
    gumbel_tau: float = 0.2
    generator_net: str = "auto"  # the family: "auto" picks the data type's default
    generator_channels: tuple[int, ...] = (64, 32)

    @classmethod
    def of(cls, config: Any) -> GeneratorConfig:
        """The generator's part of ``config`` (a method's config, or a mapping of its fields:
        a model.json's ``config`` of any version)."""
        values = config if isinstance(config, dict) else vars(config)
        names = [f.name for f in fields(cls)]
        chosen = {n: values[n] for n in names if n in values}
        return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in chosen.items()})

    def validate(self) -> None:
        """Sizes a generator can be built with."""
        if self.latent_dim < 1:
            raise PrivacyError(f"latent_dim must be >= 1, got {self.latent_dim}")
        widths = (*self.generator_hidden, *self.generator_channels)
        if not widths or min(widths) < 1:
            raise PrivacyError(
                "generator widths (generator_hidden, generator_channels) must be >= 1"
            )
        if not self.gumbel_tau > 0:
            raise PrivacyError(f"gumbel_tau must be > 0, got {self.gumbel_tau}")


class KindGenerator:
    """The kind's generator for one run: the network, the label prior it draws labels from,
    and the anchor loss a refiner keeps while it trains (set by the anchoring's fit)."""

    def __init__(
        self,
        config: GeneratorConfig,
        layout: Layout,
        n_classes: int,
        label_prior: torch.Tensor | None,
        device: torch.device | str = "cpu",
    ) -> None:
        self.config = config
        self.layout = layout
        self.n_classes = n_classes
        self.label_prior = label_prior
        self.device = device
        self.generator = build_generator(layout, family_of(layout), config, n_classes).to(device)
        # (AnchorLoss, weight) a refiner adds to its generator loss (post-processing of the
        # releases, free), and the rows of the batch it is computed on (None: the refiner's).
        self.anchor: tuple[Any, float] | None = None
        self.anchor_batch: int | None = None
        # The run's stream 2 once the generator is initialised from it: a refiner's
        # discriminators are initialised from where it stands (as when they were built first).
        self.init_stream: torch.Generator | None = None

    def initialise(self, stream: torch.Generator) -> None:
        """Initialise the generator from ``stream`` and keep the stream for a refiner."""
        initialise(self.generator, stream)
        self.init_stream = stream

    def average(self) -> torch.nn.Module:
        """A frozen copy of the generator as it stands (a refiner's weight average starts here)."""
        return copy.deepcopy(self.generator).requires_grad_(False)
