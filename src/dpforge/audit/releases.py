"""Many-runs audit of the releases a run makes outside DP-SGD's discriminator step.

The default fit spends most of its budget before any discriminator step: table marginals and
the fine histograms that place numeric cells (tables), per-class moments in a principal
subspace (images), mean embeddings (series), and DP metadata such as the label prior. Each is a
Gaussian mechanism whose correctness rests on a sensitivity derived by hand. This audit runs
the package's real measurement function ``runs`` times with a canary record and ``runs`` times
without (:data:`RELEASES`: :mod:`~dpforge.audit.release_targets` for the anchoring, the moments,
the embeddings and the label prior; :mod:`~dpforge.audit.release_targets_more` for the pair
selection, the bounds, categories, code histograms, date ranges and the k-rows-per-person
scaling; :mod:`~dpforge.audit.release_targets_paths` for the record count, a federated site's
answer and GS-WGAN's sanitizer), reduces each release to one statistic, and
turns how often fixed events occur on each side into a lower bound on ε with exact
Clopper-Pearson intervals (:func:`~dpforge.audit.bound.distinguishing_bound`). The claimed ε
is the accountant's for the event the run records for that release.

A bound above the claim proves the release (or its accounting) wrong: noise smaller than
claimed, or a sensitivity larger than derived. The records are crafted (public, not a user's
data), so the figures may be shared.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from dpforge.audit.bound import distinguishing_bound
from dpforge.audit.release_targets import TARGETS
from dpforge.audit.release_targets_more import MORE_TARGETS
from dpforge.audit.release_targets_paths import PATH_TARGETS
from dpforge.audit.result import AuditResult
from dpforge.errors import PrivacyError
from dpforge.privacy.accounting import epsilon, reporting_accountant

__all__ = ["RELEASES", "ReleaseAuditConfig", "release_audit"]

RELEASES = {**TARGETS, **MORE_TARGETS, **PATH_TARGETS}  # every release a run makes, by name


@dataclass(frozen=True)
class ReleaseAuditConfig:
    """A many-runs audit of one release (``target``: a key of ``RELEASES``)."""

    target: str = "marginals"
    runs: int = 2000
    records: int = 50
    noise_multiplier: float = 1.0
    delta: float = 1e-2
    confidence: float = 0.95

    def validate(self) -> None:
        checks = {
            "target": self.target in RELEASES,
            "runs": 100 <= self.runs <= 10_000_000,
            "records": 2 <= self.records <= 1_000_000,
            "noise_multiplier": 0.0 < self.noise_multiplier < 1e4,
            "delta": 0.0 < self.delta < 1.0,
            "confidence": 0.0 < self.confidence < 1.0,
        }
        bad = [name for name, ok in checks.items() if not ok]
        if bad:
            values = ", ".join(f"{name}={getattr(self, name)!r}" for name in bad)
            raise PrivacyError(
                f"release audit settings out of range: {values} (targets: {', '.join(RELEASES)})"
            )


def release_audit(
    config: ReleaseAuditConfig, rng: np.random.Generator, parts: str = "dpforge"
) -> AuditResult:
    """Run the audit; ``parts`` names what ran (``dpforge``, or a planted defect's name)."""
    config.validate()
    target = RELEASES[config.target](config.noise_multiplier, config.records)
    inside = np.array([target.statistic(True, rng) for _ in range(config.runs)])
    outside = np.array([target.statistic(False, rng) for _ in range(config.runs)])
    samples = ({target.name: inside}, {target.name: outside})
    bound, event, n_events = distinguishing_bound(
        *samples, config.delta, config.confidence, target.thresholds
    )
    return AuditResult(
        kind="release",
        parts=parts,
        claimed_epsilon=epsilon(target.event, config.delta, reporting_accountant(target.event)),
        lower_bound=bound,
        delta=config.delta,
        confidence=config.confidence,
        details={
            "config": asdict(config),
            "release": target.name,
            "best_event": event,
            "events": n_events,
            "mean_shift": float(inside.mean() - outside.mean()),
        },
    )
