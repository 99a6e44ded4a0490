"""The one-run audit (Steinke, Nasr & Jagielski, NeurIPS 2023) of DP-CGAN's private discriminator.

One training run of the discriminator's DP-SGD on a real table, with m gradient canaries:

1. each canary is a "Dirac" gradient, ``canary_norm``·C on one coordinate of the
   discriminator's parameters (distinct coordinates, drawn at random), so canaries are
   orthogonal to each other; a correct implementation clips each to C like any example. The
   coordinates are first-layer weights of extra input columns that are always zero, so no real
   or generated row moves them: the discriminator is the package's MLP with those columns
   added (DP-SGD's guarantee holds for any network, so the audit may choose one where the
   canaries are not drowned by the data's own gradients);
2. a fair coin per canary decides whether it is in the data set; included canaries are records
   like the real ones: the sampler draws them at every step with the same rate q;
3. every step is DP-CGAN's discriminator step (real rows of the Poisson batch and generated
   rows, binary cross-entropy, per-example clipping to C, noise N(0, σ²C²) once on the sum,
   division by the expected batch size, the SGD update) with the canaries' clipped gradients
   added to the clipped sum before the noise. The generator is not trained (its steps are
   post-processing and change nothing the auditor looks at); its rows still enter each step;
4. the auditor sees the noisy sums (what DP-SGD's accounting releases) and scores each canary
   by the sum over steps of its coordinate; it guesses "in" for the highest scores (and "out"
   for the lowest), and :mod:`dpforge.audit.bound` turns the number of right guesses into a
   lower bound on ε.

The step is assembled here from the method's own pieces and the package's DP-SGD parts
(:mod:`dpforge.audit.parts`) rather than by calling ``DPCGAN.discriminator_step``, because
canaries must enter between the clipping and the noise, and the canaries are clipped by
:func:`~dpforge.privacy.clipping.clip_factors`, outside the ghost-norm path that clips real
rows. So this audit checks a copy of the step, not the code that trains (issue 20.7): the
audit of the step as training calls it is :mod:`dpforge.audit.training_step`, and the
anchoring releases are audited by :mod:`dpforge.audit.releases`. The run is a throw-away audit
model: nothing of it is saved.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd
import torch
from torch.nn import functional as F

from dpforge.audit.bound import best_lower_bound
from dpforge.audit.parts import DpSgdParts, package_parts
from dpforge.audit.result import AuditResult
from dpforge.data.encoder import TableEncoder
from dpforge.data.tables import validate_table
from dpforge.errors import PrivacyError
from dpforge.methods.dpcgan import DPCGAN, DPCGANConfig
from dpforge.nets.init import initialise
from dpforge.nets.mlp import mlp
from dpforge.privacy.accounting import dpsgd_event, epsilon
from dpforge.schema.table import Schema

__all__ = ["OneRunConfig", "one_run_audit"]


@dataclass(frozen=True)
class OneRunConfig:
    """Settings of a one-run audit (the DP-SGD settings are those of the run audited)."""

    canaries: int = 1000
    noise_multiplier: float = 1.5
    sample_rate: float = 0.1  # expected batch size B = q N (rounded)
    steps: int = 50
    clip_norm: float = 1.0
    canary_norm: float = 16.0  # in units of C; a correct implementation clips it to C
    learning_rate: float = 0.05
    delta: float = 1e-5
    confidence: float = 0.95
    guess_counts: tuple[int, ...] = (25, 50, 100, 200, 400)

    def validate(self) -> None:
        checks = {
            "canaries": 10 <= self.canaries <= 100_000,
            "noise_multiplier": 0.0 < self.noise_multiplier < 1e4,
            "sample_rate": 0.0 < self.sample_rate <= 1.0,
            "steps": 1 <= self.steps <= 100_000,
            "clip_norm": 0.0 < self.clip_norm < 1e6,
            "canary_norm": 0.0 < self.canary_norm < 1e6,
            "learning_rate": 0.0 < self.learning_rate < 1e3,
            "delta": 0.0 < self.delta < 1.0,
            "confidence": 0.0 < self.confidence < 1.0,
            "guess_counts": bool(self.guess_counts) and min(self.guess_counts) >= 1,
        }
        bad = [name for name, ok in checks.items() if not ok]
        if bad:
            values = ", ".join(f"{name}={getattr(self, name)!r}" for name in bad)
            raise PrivacyError(f"one-run audit settings out of range: {values}")


@dataclass
class _Run:
    """The audited run's state: method, encoded records, canaries."""

    method: DPCGAN
    features: torch.Tensor
    labels: torch.Tensor | None
    coordinates: torch.Tensor  # (m,) parameter coordinate of each canary
    included: torch.Tensor  # (m,) bool
    canary_rows: torch.Tensor  # (k, P): the flat gradients of the included canaries
    padding: int  # zero input columns whose first-layer weights hold the canaries


def _build(table: pd.DataFrame, schema: Schema, config: OneRunConfig, gen: torch.Generator):
    encoder = TableEncoder(schema)
    features, labels = encoder.transform(validate_table(table, schema))
    options = DPCGANConfig(
        batch_size=_batch_size(config, len(features)),
        clip_norm=config.clip_norm,
        d_lr_start=config.learning_rate,
        d_lr_end=config.learning_rate,
    )
    n_classes = encoder.n_classes
    prior = torch.full((n_classes,), 1.0 / n_classes) if n_classes else None  # public: uniform
    method = DPCGAN(options, encoder.layout, n_classes, prior, config.noise_multiplier)
    width, in_dim = options.discriminator_hidden[0], encoder.layout.data_dim + n_classes
    padding = -(-config.canaries // width)  # enough zero columns for every canary
    method.discriminator = mlp(in_dim + padding, options.discriminator_hidden, 1)
    method.d_optimizer = method.make_d_optimizer()
    for network in method.trained_networks():
        initialise(network, gen)
    n_params = sum(p.numel() for p in method.discriminator.parameters())
    # first-layer weight (row r, column in_dim + c) is flat coordinate r (in_dim + padding) + c
    rows_, cols_ = torch.meshgrid(
        torch.arange(width), torch.arange(in_dim, in_dim + padding), indexing="ij"
    )
    quiet = (rows_ * (in_dim + padding) + cols_).reshape(-1)
    coordinates = quiet[torch.randperm(quiet.numel(), generator=gen)[: config.canaries]]
    included = torch.rand(config.canaries, generator=gen) < 0.5
    chosen = coordinates[included]
    rows = torch.zeros(int(chosen.numel()), n_params)
    rows[torch.arange(chosen.numel()), chosen] = config.canary_norm * config.clip_norm
    x = torch.as_tensor(features, dtype=torch.float32)
    y = None if labels is None else torch.as_tensor(labels)
    return _Run(method, x, y, coordinates, included, rows, padding)


def _batch_size(config: OneRunConfig, n_records: int) -> int:
    return max(1, round(config.sample_rate * n_records))


def _step(run: _Run, sampler, parts: DpSgdParts, config: OneRunConfig, gen) -> torch.Tensor:
    """One discriminator step with canaries; returns the flat noisy sum (what is released)."""
    method, n_real = run.method, run.features.shape[0]
    batch = method.config.batch_size
    index = sampler.sample(gen)
    real, canaries = index[index < n_real], index[index >= n_real] - n_real
    real_labels = None if run.labels is None else run.labels[real]
    with torch.no_grad():
        fake_rows, fake_labels = method.generate(batch, gen, training=True)
    inputs = torch.cat(
        [method.d_input(run.features[real], real_labels), method.d_input(fake_rows, fake_labels)]
    )
    inputs = torch.cat([inputs, inputs.new_zeros(inputs.shape[0], run.padding)], dim=1)
    targets = torch.cat([inputs.new_ones(real.numel()), inputs.new_zeros(batch)])

    def per_example_loss(logits: torch.Tensor) -> torch.Tensor:
        return F.binary_cross_entropy_with_logits(logits[:, 0], targets, reduction="none")

    grads = parts.clip_sum(
        method.discriminator, inputs, per_example_loss, config.clip_norm,
        run.canary_rows[canaries],
    )  # fmt: skip
    noisy = parts.noise(grads, config.noise_multiplier * config.clip_norm, gen)
    method.apply_d_gradients(noisy, batch)
    return torch.cat([g.detach().reshape(-1) for g in noisy])


def one_run_audit(
    table: pd.DataFrame,
    schema: Schema,
    config: OneRunConfig,
    generator: torch.Generator,
    parts: DpSgdParts | None = None,
) -> AuditResult:
    """Audit DP-CGAN's discriminator DP-SGD in one run on ``table`` (a complete ``schema``).

    The claimed ε is the accountant's for ``steps`` Poisson-sampled Gaussian steps at rate
    q = B/N (N real rows, B = ``sample_rate`` N rounded; canaries are sampled at rate q too).
    """
    config.validate()
    parts = parts or package_parts()
    run = _build(table, schema, config, generator)
    n_real = run.features.shape[0]
    q = run.method.config.batch_size / n_real
    sampler = parts.sampler(n_real + run.canary_rows.shape[0], q)
    scores = torch.zeros(config.canaries, dtype=torch.float64)
    for _ in range(config.steps):
        released = _step(run, sampler, parts, config, generator)
        scores += released[run.coordinates].double()
    rules = [(k, 0) for k in config.guess_counts if k <= config.canaries]
    rules += [(k, k) for k in config.guess_counts if 2 * k <= config.canaries]
    if not rules:
        raise PrivacyError(
            f"guess_counts {config.guess_counts} exceed the {config.canaries} canaries"
        )
    included = run.included.numpy()
    bound, guesses = best_lower_bound(
        scores.numpy(), included, rules, config.delta, config.confidence
    )
    claimed = epsilon(dpsgd_event(q, config.noise_multiplier, config.steps), config.delta)
    return AuditResult(
        kind="one-run",
        parts=parts.name,
        claimed_epsilon=claimed,
        lower_bound=bound,
        delta=config.delta,
        confidence=config.confidence,
        details={
            "config": asdict(config),
            "records": n_real,
            "sample_rate": q,
            "canaries_included": int(np.sum(included)),
            "guesses_in": guesses.positives,
            "guesses_out": guesses.negatives,
            "correct": guesses.correct,
            "rules": len(rules),
        },
    )
