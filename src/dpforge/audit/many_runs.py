"""Many short runs, a distinguishing test and Clopper-Pearson intervals: a lower bound on ε.

The auditor runs the DP-SGD aggregation of the package (sampler, per-example clipping, noise:
:func:`~dpforge.audit.parts.package_parts`) many times on a data set D of N crafted records and
as many times on D plus one canary record, and counts how often an event of the output occurs
on each side. If the step is (ε, δ)-DP, P[E | D + canary] <= e^ε P[E | D] + δ for every event E
(and the same with the two sides swapped); with both probabilities bounded by exact
Clopper-Pearson intervals, an event that breaks this inequality refutes ε.

Records are gradients (white box): the model is ``nn.Linear(2, 1, bias=False)`` with loss
``w·x``, so the per-example gradient of record x is x itself and goes through the package's
real ghost-norm clipping. The N records are (-C, 0); the canary has norm ``canary_norm``·C (a
correct implementation clips it to C) and direction (cos θ, sin θ) with a small θ: along the
first coordinate it adds to a sum whose size every other record fixes, along the second it is
alone. This design is where the three classic mistakes show: no noise (the second coordinate
is exactly zero without the canary), clipping the batch mean instead of each example (the
canary keeps its full norm), and fixed-size shuffled batches under a Poisson accountant (the
canary pushes another record out of its batch, so the first coordinate moves by 2C, not C).

Events are fixed before any run (a grid of thresholds on two statistics, both directions) and
the confidence is split over them (Bonferroni), so the best bound holds at the stated level.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np
import torch
from torch import nn

from dpforge.audit.bound import distinguishing_bound
from dpforge.audit.parts import DpSgdParts, package_parts
from dpforge.audit.result import AuditResult
from dpforge.errors import PrivacyError
from dpforge.privacy.accounting import dpsgd_event, epsilon

__all__ = ["ManyRunsConfig", "many_runs_audit"]

CANARY_ANGLE = 0.1  # radians between the canary and the other records' direction


@dataclass(frozen=True)
class ManyRunsConfig:
    """A many-runs audit of the DP-SGD step: ``runs`` runs per side of ``steps`` steps."""

    runs: int = 20_000
    records: int = 100
    sample_rate: float = 1.0
    steps: int = 1
    noise_multiplier: float = 1.0
    clip_norm: float = 1.0
    canary_norm: float = 4.0
    delta: float = 1e-3
    confidence: float = 0.95

    def validate(self) -> None:
        checks = {
            "runs": self.runs >= 100,
            "records": self.records >= 2,
            "sample_rate": 0.0 < self.sample_rate <= 1.0,
            "steps": 1 <= self.steps <= 10_000,
            "noise_multiplier": 0.0 < self.noise_multiplier < 1e4,
            "clip_norm": 0.0 < self.clip_norm < 1e6,
            "canary_norm": 0.0 < self.canary_norm < 1e6,
            "delta": 0.0 < self.delta < 1.0,
            "confidence": 0.0 < self.confidence < 1.0,
        }
        bad = [name for name, ok in checks.items() if not ok]
        if bad:
            values = ", ".join(f"{name}={getattr(self, name)!r}" for name in bad)
            raise PrivacyError(f"many-runs audit settings out of range: {values}")


def _records(config: ManyRunsConfig, with_canary: bool) -> torch.Tensor:
    others = torch.zeros(config.records, 2, dtype=torch.float64)
    others[:, 0] = -config.clip_norm
    if not with_canary:
        return others
    norm = config.canary_norm * config.clip_norm
    canary = torch.tensor([[norm * math.cos(CANARY_ANGLE), norm * math.sin(CANARY_ANGLE)]],
                          dtype=torch.float64)  # fmt: skip
    return torch.cat([others, canary])


def _one_run(
    model: nn.Sequential,
    records: torch.Tensor,
    config: ManyRunsConfig,
    parts: DpSgdParts,
    generator: torch.Generator,
) -> np.ndarray:
    """The noisy sums of one run's steps, shape (steps, 2). The model's weights never change
    (the gradient of ``w·x`` is ``x`` whatever w is), so one model serves every run."""
    sampler = parts.sampler(records.shape[0], config.sample_rate)
    std = config.noise_multiplier * config.clip_norm
    no_canaries = torch.zeros(0, 2, dtype=torch.float64)
    out = np.empty((config.steps, 2))
    for step in range(config.steps):
        batch = records[sampler.sample(generator)]
        if batch.shape[0] == 0:
            grads = [torch.zeros_like(p) for p in model.parameters()]
        else:
            grads = parts.clip_sum(model, batch, lambda o: o[:, 0], config.clip_norm, no_canaries)
        noisy = parts.noise(grads, std, generator)
        out[step] = noisy[0].detach().reshape(-1).numpy()
    return out


def _statistics(sums: np.ndarray, config: ManyRunsConfig) -> dict[str, np.ndarray]:
    """Per run, in noise standard deviations: the first coordinate centred on what the other
    records are expected to add, and the second; summed over steps and their per-step maxima."""
    std = config.noise_multiplier * config.clip_norm
    expected = -config.sample_rate * config.records * config.clip_norm
    first = (sums[:, :, 0] - expected) / std
    second = sums[:, :, 1] / std
    root = math.sqrt(config.steps)
    stats = {"first, summed": first.sum(1) / root, "second, summed": second.sum(1) / root}
    if config.steps > 1:
        stats.update({"first, max step": first.max(1), "second, max step": second.max(1)})
    return stats


def _side(config: ManyRunsConfig, parts: DpSgdParts, with_canary: bool, seed: int):
    generator = torch.Generator().manual_seed(seed)
    records = _records(config, with_canary)
    model = nn.Sequential(nn.Linear(2, 1, bias=False)).double()
    sums = np.stack(
        [_one_run(model, records, config, parts, generator) for _ in range(config.runs)]
    )
    return _statistics(sums, config)


def many_runs_audit(
    config: ManyRunsConfig, generator: np.random.Generator, parts: DpSgdParts | None = None
) -> AuditResult:
    """Run the audit; the claimed ε is the accountant's for q, σ and the steps at ``delta``."""
    config.validate()
    parts = parts or package_parts()
    seeds = generator.integers(2**62, size=2)
    with_canary = _side(config, parts, True, int(seeds[0]))
    without = _side(config, parts, False, int(seeds[1]))
    best, best_event, n_events = distinguishing_bound(
        with_canary, without, config.delta, config.confidence
    )
    claimed = epsilon(
        dpsgd_event(config.sample_rate, config.noise_multiplier, config.steps), config.delta
    )
    return AuditResult(
        kind="many-runs",
        parts=parts.name,
        claimed_epsilon=claimed,
        lower_bound=best,
        delta=config.delta,
        confidence=config.confidence,
        details={"config": asdict(config), "best_event": best_event, "events": n_events},
    )
