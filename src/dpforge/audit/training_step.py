"""Many-runs audit of the private discriminator step exactly as training calls it.

Each run builds nothing new: it calls the method's own ``train_step`` (Poisson sampler,
``discriminator_step``, the real ghost-norm clipping of :mod:`dpforge.privacy.clipping` or, for
DP-WGAN's gradient penalty, :mod:`dpforge.privacy.ghost_penalty`, the noise of
:mod:`dpforge.privacy.noise`) on a few plain records, with and without one canary record. The
auditor reads the released quantity itself, the noisy gradient sum handed to
``apply_d_gradients`` (the discriminator is not updated, so every run starts from the same
weights), and projects it, minus the other rows' exact contribution, onto the canary's exact
clipped contribution Δ (both from the same step run without noise), in units of the claimed
noise standard deviation (σC per example, 2σC with microbatches, whose mean gradients move by
up to 2C). A correct step gives a shift of at most 1/σ, the Gaussian mechanism its
``PoissonSampledDpEvent(1, GaussianDpEvent(σ))`` claims (q = 1: every record in the batch).

Two things are pinned so that one number carries the canary's effect: the generated rows are a
constant row (they depend on no record; the generator is not what is audited), and no
generator step runs. The canary is a record with large values (its gradient is clipped, as a
correct step must); with microbatches (one microbatch) a "partner" record pointing the other
way shares its microbatch, so that adding the canary flips the clipped mean: the 2C case.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
import torch
from torch.nn import functional as F

from dpforge.audit.bound import distinguishing_bound
from dpforge.audit.result import AuditResult
from dpforge.data.encoder import TableEncoder
from dpforge.errors import PrivacyError
from dpforge.methods.dpcgan import DPCGAN, DPCGANConfig
from dpforge.methods.dpwgan import DPWGAN, DPWGANConfig
from dpforge.nets.init import initialise
from dpforge.privacy.accounting import dpsgd_event, epsilon
from dpforge.schema.table import Column, Schema
from dpforge.training import TrainingPlan, TrainingState

__all__ = ["STEP_PATHS", "StepAuditConfig", "step_audit"]

METHODS = {"dpcgan": (DPCGAN, DPCGANConfig), "dpwgan": (DPWGAN, DPWGANConfig)}
CANARY_SCALE, PARTNER_SCALE, FAKE_VALUE = 20.0, 3.0, 0.1
NO_GENERATOR_STEP = 10**9  # d_steps: the generator never steps during the audit
# The paths a fit's discriminator step takes, by name (``dpforge audit --release``, the bench):
# per example, one microbatch (with its partner record), DP-WGAN's gradient penalty.
STEP_PATHS = {
    "dpcgan-step": {"method": "dpcgan"},
    "dpcgan-microbatch-step": {"method": "dpcgan", "microbatches": 1},
    "dpwgan-step": {"method": "dpwgan", "others": 0},
}


@dataclass(frozen=True)
class StepAuditConfig:
    """A many-runs audit of one method's discriminator step (``runs`` runs per side)."""

    method: str = "dpcgan"
    runs: int = 2000
    noise_multiplier: float = 1.0
    others: int = 8  # plain records besides the canary (per-example clipping)
    microbatches: int | None = None  # dpcgan only: 1 (one microbatch with a partner record)
    batch_size: int = 16  # generated rows per step
    delta: float = 1e-2
    confidence: float = 0.95

    def validate(self) -> None:
        checks = {
            "method": self.method in METHODS,
            "runs": 100 <= self.runs <= 10_000_000,
            "noise_multiplier": 0.0 < self.noise_multiplier < 1e4,
            "others": 0 <= self.others <= 10_000,
            "microbatches": self.microbatches in (None, 1)
            and (self.microbatches is None or self.method == "dpcgan"),
            "batch_size": 1 <= self.batch_size <= 10_000,
            "delta": 0.0 < self.delta < 1.0,
            "confidence": 0.0 < self.confidence < 1.0,
        }
        bad = [name for name, ok in checks.items() if not ok]
        if bad:
            values = ", ".join(f"{name}={getattr(self, name)!r}" for name in bad)
            raise PrivacyError(f"training-step audit settings out of range: {values}")


class _Recorder:
    """Stands in for ``apply_d_gradients``: keeps the released noisy sum, updates nothing."""

    def __init__(self) -> None:
        self.released = np.zeros(0)

    def __call__(self, summed: list[torch.Tensor], units: float) -> None:
        self.released = torch.cat([g.detach().reshape(-1) for g in summed]).double().numpy()


def _method(config: StepAuditConfig):
    """The method as training builds it (small networks), with its rows and step pinned."""
    schema = Schema(tuple(Column(f"v{i}", "continuous", lower=-1.0, upper=1.0) for i in range(3)))
    layout = TableEncoder(schema).layout
    method_cls, config_cls = METHODS[config.method]
    extra = {"microbatches": config.microbatches} if config.method == "dpcgan" else {}
    options = config_cls(
        batch_size=config.batch_size, clip_norm=1.0, d_steps=1, latent_dim=4,
        generator_hidden=(8,), discriminator_hidden=(16,), **extra,
    )  # fmt: skip
    method = method_cls(options, layout, 0, None, config.noise_multiplier)
    for network in method.trained_networks():
        initialise(network, torch.Generator().manual_seed(0))
    width = layout.data_dim
    method.generate = lambda n, generator, training: (torch.full((n, width), FAKE_VALUE), None)
    method.apply_d_gradients = _Recorder()
    return method, width


def _records(method, width: int, config: StepAuditConfig) -> dict[bool, torch.Tensor]:
    """Rows without and with the canary; its sign makes its loss gradient large (dpcgan: the
    side the discriminator calls fake)."""
    v = torch.ones(1, width) / width**0.5
    with torch.no_grad():
        logits = method.discriminator(method.d_input(torch.cat([v, -v]) * CANARY_SCALE, None))
    sign = 1.0 if float(F.logsigmoid(logits[0, 0])) <= float(F.logsigmoid(logits[1, 0])) else -1.0
    canary = sign * CANARY_SCALE * v
    partner = -sign * PARTNER_SCALE * v
    others = partner if config.microbatches else torch.zeros(config.others, width)
    return {False: others, True: torch.cat([others, canary])}


def _release(method, rows: torch.Tensor, noise: float, generator: torch.Generator):
    """One private step as training runs it (q = 1); returns the released noisy sum."""
    method.noise_multiplier = noise
    method.prepare(rows.shape[0], TrainingPlan(1, 1.0, noise), generator)
    method.train_step(rows, None, TrainingState(d_steps=NO_GENERATOR_STEP), generator)
    return method.apply_d_gradients.released


def step_audit(
    config: StepAuditConfig, generator: torch.Generator, parts: str = "dpforge"
) -> AuditResult:
    """Run the audit; the claimed ε is the accountant's for one step at q = 1 and σ."""
    config.validate()
    method, width = _method(config)
    rows, sigma = _records(method, width, config), config.noise_multiplier
    base = _release(method, rows[False], 0.0, generator)
    delta = _release(method, rows[True], 0.0, generator) - base
    claimed_std = sigma * (2.0 if config.microbatches else 1.0)  # C = 1
    scale = claimed_std * float(np.linalg.norm(delta))
    sides = {}
    for side in (True, False):
        runs = [_release(method, rows[side], sigma, generator) for _ in range(config.runs)]
        sides[side] = (np.stack(runs) - base) @ delta / scale
    name = f"{config.method} step"
    bound, event, n_events = distinguishing_bound(
        {name: sides[True]}, {name: sides[False]}, config.delta, config.confidence
    )
    claimed = epsilon(dpsgd_event(1.0, sigma, 1), config.delta)
    details = {"config": asdict(config), "best_event": event, "events": n_events,
               "mean_shift": float(sides[True].mean() - sides[False].mean())}  # fmt: skip
    return AuditResult("training step", parts, claimed, bound, config.delta,
                       config.confidence, details)  # fmt: skip
