"""The fit stage: the generator fitted to the noisy measurements (post-processing, free).

The generator lives in the method object, whose discriminator (if the plan has steps) refines
it next; the kind's anchoring fits it (:mod:`dpforge.kinds`). Nothing here reads records.
"""

from __future__ import annotations

import math
from dataclasses import asdict

import torch

from dpforge.methods import METHODS
from dpforge.methods.base import GanMethod
from dpforge.pipeline.run import RunSettings, RunSetup


def build_method(run: RunSettings, setup: RunSetup) -> GanMethod:
    """The generator and, for refinement, the private discriminator, with the planned noise."""
    method_cls, _ = METHODS[run.method]
    options = run.config
    if not math.isfinite(run.epsilon):
        options = type(options)(**{**asdict(options), "clip_norm": math.inf})
    prior = setup.label_prior
    prior_t = None if prior is None else torch.as_tensor(prior, dtype=torch.float32)
    encoder = setup.encoder
    sigma = setup.plan.noise_multiplier
    return method_cls(options, encoder.layout, encoder.n_classes, prior_t, sigma, run.device)


def fit(run: RunSettings, setup: RunSetup, method: GanMethod, resumed: bool) -> None:
    """Fit the generator to the measurements (a resumed run takes it from its checkpoint)."""
    run.anchoring.fit(run, setup, method, resumed)
