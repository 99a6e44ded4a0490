"""The result of an audit: the claimed ε next to the empirical lower bound."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from dpforge.privacy.accounting import format_epsilon

__all__ = ["AuditResult"]


@dataclass(frozen=True)
class AuditResult:
    """An empirical lower bound on ε next to the accountant's ε for the same run.

    ``lower_bound`` holds with probability ``confidence`` whatever the implementation does; a
    lower bound ABOVE ``claimed_epsilon`` means the implementation audited does not have the
    privacy the accountant claims (an implementation bug, or an accountant that does not
    describe it). A bound below the claim proves nothing about the claim's tightness.
    """

    kind: str
    parts: str
    claimed_epsilon: float
    lower_bound: float
    delta: float
    confidence: float
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def violated(self) -> bool:
        """True when the lower bound exceeds the claimed ε."""
        return self.lower_bound > self.claimed_epsilon

    def summary(self) -> str:
        """One line: the bound, the claim, and the verdict."""
        verdict = "VIOLATED: the claimed ε is wrong" if self.violated else "consistent"
        return (
            f"{self.kind} audit of {self.parts}: empirical ε >= {self.lower_bound:.3f} "
            f"({self.confidence:.0%} confidence) vs claimed ε = "
            f"{format_epsilon(self.claimed_epsilon, 3)} at δ = {self.delta:g}: {verdict}"
        )

    def to_dict(self) -> dict[str, Any]:
        claimed = self.claimed_epsilon if math.isfinite(self.claimed_epsilon) else "inf"
        return {
            "kind": self.kind,
            "parts": self.parts,
            "claimed_epsilon": claimed,
            "lower_bound": self.lower_bound,
            "violated": self.violated,
            "delta": self.delta,
            "confidence": self.confidence,
            "details": self.details,
        }
