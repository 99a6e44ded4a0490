"""The records of the budget file (:mod:`dpforge.privacy.budget`): one run that trained on the
data set (:class:`BudgetedRun`) and the data set's state as shown to the steward
(:class:`BudgetStatus`).
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dpforge.errors import ModelFileError, PrivacyError
from dpforge.privacy.accounting import PrivacyReport, validate_delta
from dpforge.privacy.ledger import PrivacyLedger

# --------------------------------------------------------------------------- records


@dataclass(frozen=True, eq=False)
class BudgetedRun:
    """One run charged to the data set: its events and what it asked for.

    ``epsilon`` and ``delta`` are the run's own target (ε may be ``inf`` for a non-private
    baseline); ``checkpoint`` is the resolved checkpoint folder, which lets a resumed run
    find its charge instead of paying twice.
    """

    run_id: str
    started: str
    description: str
    epsilon: float
    delta: float
    ledger: PrivacyLedger
    checkpoint: str | None = None
    data_sha256: str | None = None
    reserved: bool = False  # True: counts as its whole (epsilon, delta) until settled

    def __eq__(self, other: object) -> bool:
        return isinstance(other, BudgetedRun) and self.to_dict() == other.to_dict()

    __hash__ = None  # type: ignore[assignment]

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.run_id,
            "started": self.started,
            "description": self.description,
            "epsilon": self.epsilon if math.isfinite(self.epsilon) else "inf",
            "delta": self.delta,
            "checkpoint": self.checkpoint,
            "data_sha256": self.data_sha256,
            "ledger": self.ledger.to_dict(),
            "reserved": self.reserved,
        }

    @classmethod
    def from_dict(cls, data: Any, where: str) -> BudgetedRun:
        keys = {"id", "started", "description", "epsilon", "delta", "checkpoint",
                "data_sha256", "ledger"}  # fmt: skip
        if isinstance(data, dict) and set(data) == keys:  # written before reservations
            data = {**data, "reserved": False}
        keys = keys | {"reserved"}
        if not isinstance(data, dict) or set(data) != keys:
            raise ModelFileError(f"{where}: a run record needs exactly the keys {sorted(keys)}")
        if not isinstance(data["reserved"], bool):
            raise ModelFileError(f"{where}: run 'reserved' must be true or false")
        for key in ("id", "started", "description"):
            if not isinstance(data[key], str):
                raise ModelFileError(f"{where}: run '{key}' must be text")
        for key in ("checkpoint", "data_sha256"):
            if data[key] is not None and not isinstance(data[key], str):
                raise ModelFileError(f"{where}: run '{key}' must be text or null")
        epsilon = math.inf if data["epsilon"] == "inf" else data["epsilon"]
        try:
            ledger = PrivacyLedger.from_dict(data["ledger"])
            delta = validate_delta(data["delta"])
        except PrivacyError as exc:
            raise ModelFileError(f"{where}: run {data['id']}: {exc}") from None
        if isinstance(epsilon, bool) or not isinstance(epsilon, numbers.Real) or not epsilon > 0:
            raise ModelFileError(f'{where}: run {data["id"]}: epsilon must be > 0 or "inf"')
        return cls(data["id"], data["started"], data["description"], float(epsilon), delta,
                   ledger, data["checkpoint"], data["data_sha256"], data["reserved"])  # fmt: skip


@dataclass(frozen=True)
class BudgetStatus:
    """What a budget file says now: the declared total, the runs, the composed spend.

    ``spent`` is the accountant's ε of all runs' events together, at the total's δ (or, with
    no total declared, at the sum of the runs' δ's); None when there are no runs yet.
    """

    path: Path
    total_epsilon: float | None
    total_delta: float | None
    runs: tuple[BudgetedRun, ...]
    spent: PrivacyReport | None

    @property
    def exhausted(self) -> bool:
        """True when a total is declared and the runs so far have spent all of it."""
        if self.total_epsilon is None or self.spent is None:
            return False
        return self.spent.epsilon >= self.total_epsilon

    def summary(self) -> str:
        """One line for the console: spent ε of the total, over how many runs."""
        if self.spent is None:
            used = "nothing spent yet"
        else:
            used = f"{self.spent.summary()} spent over {len(self.runs)} run(s)"
            held = sum(run.reserved for run in self.runs)
            if held:
                used += f" ({held} unfinished, counted at their whole target)"
        if self.total_epsilon is None:
            return f"{used}; no total declared (dpforge budget set DATA --epsilon E --delta D)"
        return f"{used}; declared total ε = {self.total_epsilon:g} at δ = {self.total_delta:g}"
