"""The fit stage: the kind's generator fitted to the noisy measurements (post-processing, free).

The generator belongs to the fit (:class:`dpforge.kinds.generator.KindGenerator`): no
discriminator, GAN config or optimiser is built here. The kind's anchoring fits it
(:mod:`dpforge.kinds`); a refiner is handed it afterwards, only when the plan has
discriminator steps (:mod:`dpforge.pipeline.refine`). Nothing here reads records.
"""

from __future__ import annotations

import torch

from dpforge.kinds.generator import GeneratorConfig, KindGenerator
from dpforge.pipeline.run import RunSettings, RunSetup


def build_generator(run: RunSettings, setup: RunSetup) -> KindGenerator:
    """The kind's generator for the run's config (untrained until the anchoring fits it)."""
    prior = setup.label_prior
    prior_t = None if prior is None else torch.as_tensor(prior, dtype=torch.float32)
    encoder = setup.encoder
    config = GeneratorConfig.of(run.config)
    return KindGenerator(config, encoder.layout, encoder.n_classes, prior_t, run.device)


def fit(run: RunSettings, setup: RunSetup, model: KindGenerator, resumed: bool) -> None:
    """Fit the generator to the measurements (a resumed refinement takes it from its
    checkpoint; the anchoring then only sets the loss the refiner keeps)."""
    run.anchoring.fit(run, setup, model, resumed)
