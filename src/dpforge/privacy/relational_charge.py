"""One charge for a related tables' run: the whole plan in the budget file before any release.

A related tables' fit runs one table fit per part (the parent with its child counts, each child
joined with its parent), each at its share of the budget. The data set's budget file must see
ONE run, charged before the first part's first release, whatever happens after:

0. :func:`part_epsilon` gives every part the same share, ``epsilon / parts`` at ``delta /
   parts`` (basic composition);
1. :func:`planned_bound` composes, per part, the bound a single-table fit reserves before its
   plan is known (:func:`dpforge.pipeline.plan.release_bound` at the part's share), each entry
   named with its table and the unit (the parent with all its rows);
2. :class:`PartsCharge` reserves that plan through the one charging path
   (:func:`~dpforge.privacy.budget.charge_before_release`) and is then passed to every part's
   fit as its budget: a part's own reservation is already in the plan, so it adds nothing, and
   its settlement (what ran and what is planned, or what ran when it stops on a DP outcome)
   replaces its bound in the file at once, as a single-table fit's does before its training;
3. once every part settled, the run's charge is settled with the composed ledger. A part that
   stopped without settling (a crash, Ctrl-C) leaves its bound and the later parts' charged:
   never less than what ran, and never a second charge.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from dpforge.privacy.budget import RunCharge, charge_before_release, settle_charge
from dpforge.privacy.ledger import PrivacyLedger

__all__ = ["PartsCharge", "part_epsilon", "planned_bound"]


def part_epsilon(epsilon: float, parts: int) -> float:
    """Each part's epsilon (at ``delta / parts``): ``epsilon / parts``, a public rule, the same
    share for every part, valid whatever each part releases (basic composition: the parts'
    epsilons and deltas add up to the run's). A tighter split that composed the parts as
    Gaussians overspent once the parts record discrete Gaussian and zCDP events (the composed
    ledger reported 3.07-3.12 for a target of 3)."""
    return epsilon if not math.isfinite(epsilon) else epsilon / parts


def planned_bound(parts: dict[str, PrivacyLedger], unit: str) -> PrivacyLedger:
    """The run's plan: each part's bound (table name -> ledger), its entries named with the
    table and ``unit``."""
    plan = PrivacyLedger()
    for table, bound in parts.items():
        for entry in bound.entries:
            plan.record(f"'{table}': {entry.name}; {unit}", entry.event, entry.extra_delta)
    return plan


class PartsCharge:
    """The budget of every part's fit (a :class:`~dpforge.privacy.budget.RunCharge`): the run
    is charged once, before any release, with every part's bound (:meth:`charge`); each part's
    settlement replaces its bound in the file as soon as it is known (before the part's
    training steps run), and the run is settled with the parts that ran (:meth:`settle_run`).

    ``bounds``: each part's bound by table name, in the order the parts run.
    """

    def __init__(
        self, budget: RunCharge | None, unit: str, bounds: dict[str, PrivacyLedger]
    ) -> None:
        self.budget, self.unit, self.bounds = budget, unit, bounds
        self.run: Any = None
        self.started: list[str] = []
        self.settled: dict[str, PrivacyLedger] = {}

    @property
    def plan(self) -> PrivacyLedger:
        """What the file holds for the run: each settled part's ledger, else its bound."""
        return planned_bound({n: self.settled.get(n, b) for n, b in self.bounds.items()}, self.unit)

    def charge(
        self,
        epsilon: float,
        delta: float,
        description: str,
        checkpoint: Path | None = None,
        resume_of: str | None = None,
    ) -> None:
        """Reserve the whole plan before the first release (refused beyond the total); a
        resumed run (``resume_of``: the id its checkpoint recorded) finds its record and adds
        nothing."""
        self.run = charge_before_release(
            self.budget, epsilon=epsilon, delta=delta, description=description,
            bound=self.plan, checkpoint=checkpoint, resume_of=resume_of,
        )  # fmt: skip

    @property
    def run_id(self) -> str | None:
        """The run's id in the budget file (None without one)."""
        return getattr(self.run, "run_id", None)

    def start(self, table: str) -> None:
        """The part of ``table`` fits next."""
        self.started.append(table)

    def reserve(
        self,
        *,
        epsilon: float,
        delta: float,
        description: str,
        bound: PrivacyLedger | None = None,
        checkpoint: str | Path | None = None,
        resume_of: str | None = None,
    ) -> str:
        """A part's reservation: already in the plan (its arguments add nothing); the part's
        name is its record."""
        return self.started[-1]

    def settle(self, run: Any, ledger: PrivacyLedger, *, check_total: bool = False) -> None:
        """The part ``run`` ran and planned ``ledger``: it replaces the part's bound."""
        self.settled[run] = PrivacyLedger(ledger.entries)
        self.run = settle_charge(self.budget, self.run, self.plan) or self.run

    def composed(self) -> PrivacyLedger:
        """The settled parts' ledgers in one, each entry named with its table and the unit."""
        return planned_bound(self.settled, self.unit)

    def settle_run(self) -> None:
        """Settle the run with the parts that ran, once every started part settled (a part
        stopped by a DP outcome settles what it released; the parts after it never ran);
        otherwise (a crash) the file keeps the bounds of the parts not settled."""
        if self.run is not None and set(self.started) == set(self.settled):
            settle_charge(self.budget, self.run, self.composed())
