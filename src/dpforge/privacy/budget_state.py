"""The budget file's JSON state (:mod:`dpforge.privacy.budget`): the empty file, reading and
checking it, composing its runs' ledgers with the accountant (a reservation counts by basic
composition) and refusing a run that would take the data set past its declared total.
"""

from __future__ import annotations

import json
import math
import numbers
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from dpforge.errors import ModelFileError, PrivacyError
from dpforge.privacy.accounting import PrivacyReport, format_epsilon, validate_delta
from dpforge.privacy.budget_records import BudgetedRun, BudgetStatus
from dpforge.privacy.ledger import PrivacyLedger

BUDGET_FORMAT = "dpforge.data_budget"
BUDGET_VERSION = 1


class BudgetExceededError(PrivacyError):
    """A run would take its data set past the declared total budget; it was not started."""


# --------------------------------------------------------------------------- helpers


def _empty(digest: str | None) -> dict[str, Any]:
    return {
        "format": BUDGET_FORMAT,
        "version": BUDGET_VERSION,
        "data_sha256": digest,
        "total": None,
        "runs": [],
    }


def _read(path: Path) -> dict[str, Any]:
    """The file's JSON, checked at the top level (runs are checked by :func:`_runs`)."""
    try:
        state = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ModelFileError(f"{path} is not a readable dpforge budget file ({exc})") from None
    if not isinstance(state, dict) or state.get("format") != BUDGET_FORMAT:
        raise ModelFileError(
            f"{path} is not a dpforge budget file (no format '{BUDGET_FORMAT}'); dpforge never "
            "overwrites a file it did not write: move it away or choose --budget PATH"
        )
    if state.get("version") != BUDGET_VERSION:
        raise ModelFileError(
            f"{path} has budget file version {state.get('version')!r}; this dpforge reads "
            f"version {BUDGET_VERSION}: upgrade dpforge"
        )
    if set(state) != {"format", "version", "data_sha256", "total", "runs"}:
        raise ModelFileError(f"{path}: unexpected keys {sorted(state)}; the file is corrupt")
    if not isinstance(state["runs"], list):
        raise ModelFileError(f"{path}: 'runs' must be a list; the file is corrupt")
    _total(state, path)
    return state


def _total(state: dict[str, Any], path: Path) -> tuple[float | None, float | None]:
    total = state.get("total")
    if total is None:
        return None, None
    if not isinstance(total, dict) or set(total) != {"epsilon", "delta"}:
        raise ModelFileError(f'{path}: \'total\' must be null or {{"epsilon", "delta"}}')
    try:
        return _check_total_epsilon(total["epsilon"]), validate_delta(total["delta"])
    except PrivacyError as exc:
        raise ModelFileError(f"{path}: total: {exc}") from None


def _check_total_epsilon(epsilon: Any) -> float:
    bad = isinstance(epsilon, bool) or not isinstance(epsilon, numbers.Real)
    if bad or not (0.0 < float(epsilon) < math.inf):
        raise PrivacyError(f"total epsilon={epsilon!r} must be a finite number > 0")
    return float(epsilon)


def _runs(state: dict[str, Any], path: Path) -> list[BudgetedRun]:
    return [BudgetedRun.from_dict(item, f"{path} run {i + 1}") for i, item in
            enumerate(state["runs"])]  # fmt: skip


def _composed(runs: Iterable[BudgetedRun], delta: float | None) -> PrivacyReport | None:
    """The accountant's ε, at ``delta`` (default: Σ run δ), of every run's events composed: a
    settled run's ledger, and a reservation's bound (events that dominate what it may release
    before it settles). A reservation without a bound (older files, or a caller that knew none)
    counts as its whole (ε, δ) by basic composition: its δ is taken from ``delta`` and its ε
    added."""
    runs = list(runs)
    if not runs:
        return None
    if delta is None:
        delta = min(math.fsum(run.delta for run in runs), 0.5)
    held = [run for run in runs if run.reserved and not len(run.ledger)]
    reserved_eps = math.fsum(run.epsilon for run in held)
    reserved_delta = math.fsum(run.delta for run in held)
    ledger = PrivacyLedger(entry for run in runs if run not in held for entry in run.ledger.entries)
    if not len(ledger):
        return PrivacyReport(reserved_eps, reserved_eps, delta)
    report = ledger.report(delta - reserved_delta)
    return PrivacyReport(
        _plus(report.epsilon_pld, reserved_eps), _plus(report.epsilon_rdp, reserved_eps),
        delta, report.extra_delta,
    )  # fmt: skip


def _plus(epsilon: float | None, reserved: float) -> float | None:
    return None if epsilon is None else epsilon + reserved


def _status(path: Path, state: dict[str, Any]) -> BudgetStatus:
    eps, delta = _total(state, path)
    runs = tuple(_runs(state, path))
    try:
        spent = _composed(runs, delta)
    except PrivacyError as exc:
        raise PrivacyError(
            f"{path}: the runs recorded cannot be composed at δ = {delta}: {exc}"
        ) from None
    return BudgetStatus(path, eps, delta, runs, spent)


def _refuse_overspend(
    state: dict[str, Any], runs: list[BudgetedRun], run: BudgetedRun, path: Path
) -> None:
    eps, delta = _total(state, path)
    if eps is None:
        return
    try:
        after = _composed([*runs, run], delta)
    except PrivacyError:
        after = None
    if after is not None and after.epsilon <= eps:
        return
    before = _composed(runs, delta) if runs else None
    so_far = "nothing so far" if before is None else f"ε = {_eps(before)} so far"
    with_run = "more δ than the total" if after is None else f"ε = {_eps(after)}"
    raise BudgetExceededError(
        f"refused before training: this run would take the data set's spend to {with_run} "
        f"(composed over {len(runs) + 1} runs at the total's δ; {so_far}), beyond the declared "
        f"total ε = {eps:g} at δ = {delta:g} in {path}. {_advice([*runs, run], delta)}"
    )


def _advice(runs: list[BudgetedRun], delta: float) -> str:
    """Which of ε or δ binds, and what to do about it (issue 46.2: the refusal said "lower
    --epsilon" when only δ was short)."""
    outside = math.fsum(run.ledger.extra_delta() for run in runs)
    held = [run for run in runs if run.reserved and not len(run.ledger)]
    held_delta = math.fsum(run.delta for run in held)
    if outside + held_delta < delta:
        return (
            "ε binds: lower --epsilon, or raise the total with 'dpforge budget set' if the "
            "data's owner agrees"
        )
    parts = []
    if outside:
        parts.append(
            f"δ = {outside:.3g} paid outside the accountant (categories released by a DP "
            "threshold: declare them in the schema)"
        )
    if held:
        parts.append(
            f"δ = {held_delta:.3g} held by {len(held)} unfinished run(s) counted at their "
            "whole target (a run still going, or killed before its plan)"
        )
    return (
        f"δ binds, not ε: {' and '.join(parts)} leave nothing of the total δ; raise the total "
        "δ with 'dpforge budget set' if the data's owner agrees"
    )


def _eps(report: PrivacyReport) -> str:
    return format_epsilon(report.epsilon)
