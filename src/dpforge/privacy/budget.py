"""A privacy budget per data set, across runs: the budget file.

A steward who fits ten configurations on the same data has released ten models, and has spent
the privacy of all ten. The ledger of one run (:mod:`dpforge.privacy.ledger`) cannot see that;
the budget file can. It is a small private JSON file that belongs to one data set and holds

* the declared total (ε, δ) that all releases from the data set together may spend (optional:
  without one, runs are recorded and the composed ε is shown, but nothing is refused);
* every run that trained on the data: when it started, what it asked for, and its complete
  ledger of dp-accounting events (serialized as :meth:`PrivacyLedger.to_dict` does).

The ε shown for the data set is the accountant's ε of the composition of ALL events of all runs
(PLD when it can analyse them, else RDP), never a sum of the runs' ε's.

Where it lives: next to the data, named after it, ``adult.csv`` → ``adult.csv.dpforge-budget.json``
(a folder of images ``digits/`` → ``digits.dpforge-budget.json`` beside it). It also records a
fingerprint of the records (:func:`records_fingerprint`: the multiset of rows, whatever the
file's bytes, order or name): when a data set without a budget file of its own holds the same
records as one with a budget file in the same folder, that budget file is used. Copies
elsewhere, or with one record changed, cannot be recognised (``docs/budget.md``): point every
copy at one file with ``--budget PATH`` (``DataBudget(path)`` in Python). The fingerprint and
the ledgers come from the private data and stay in this private file; nothing prints them.

Write-ahead, through ONE path for every entry point (:func:`charge_before_release`, then
:func:`settle_charge`): a run RESERVES its whole target before its first release (metadata
estimates included), under a file lock (the ``filelock`` package, lock file
``<budget file>.lock``), and the file is replaced atomically. The reservation holds a bound:
events that dominate whatever the run releases before it settles (a fit: one Gaussian at its
target, :func:`gaussian_bound`). Once its releases have run and its discriminator steps are
planned, the reservation is SETTLED: replaced by the run's ledger (what ran and what is
planned). A run that stops on a DP outcome ("no category is frequent enough") is settled with
the events it recorded; a run that is killed keeps its reservation. All events of all runs are
composed and read at the declared total's δ; a reservation without a bound counts as its
(ε, δ) by basic composition. A run can waste budget, never hide it. A run
that would take the data set past its declared total is refused before it reads a record,
with nothing written. A run resumed from a checkpoint is recognised by the budget run id its
checkpoint records (never by a folder name) and is not charged twice.

Layout: this module holds the file itself (:class:`DataBudget`, its lock and its writes); the
file's location and the data's fingerprint are in :mod:`~dpforge.privacy.budget_paths`, its
records in :mod:`~dpforge.privacy.budget_records`, and reading, composing and refusing in
:mod:`~dpforge.privacy.budget_state`. Every public name is importable from this module.
"""

from __future__ import annotations

import json
import math
import os
import uuid
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Protocol

import dp_accounting
from filelock import FileLock, Timeout

from dpforge.errors import ModelFileError, PrivacyError
from dpforge.privacy.accounting import validate_delta
from dpforge.privacy.budget_paths import (
    BUDGET_SUFFIX,
    budget_path_for,
    data_sha256,
    records_fingerprint,
)
from dpforge.privacy.budget_records import BudgetedRun, BudgetStatus
from dpforge.privacy.budget_state import (  # BUDGET_FORMAT, BUDGET_VERSION: re-exported
    BUDGET_FORMAT,  # noqa: F401
    BUDGET_VERSION,  # noqa: F401
    BudgetExceededError,
    _check_total_epsilon,
    _empty,
    _read,
    _refuse_overspend,
    _runs,
    _status,
)
from dpforge.privacy.ledger import PrivacyLedger
from dpforge.storage import atomic_write

__all__ = [
    "BUDGET_SUFFIX",
    "BudgetExceededError",
    "BudgetStatus",
    "BudgetedRun",
    "RunCharge",
    "DataBudget",
    "charge_before_release",
    "data_sha256",
    "gaussian_bound",
    "records_fingerprint",
    "settle_charge",
]

LOCK_TIMEOUT_S = 600.0


class RunCharge(Protocol):
    """What :func:`charge_before_release` and :func:`settle_charge` call: :class:`DataBudget`
    (the budget file), or the tuning search's per-trial check. ``reserve`` comes before the
    run's first release; ``settle`` once its releases ran and its discriminator steps are
    planned (with that ledger), or when it stops on a DP outcome (with the events so far)."""

    def reserve(
        self,
        *,
        epsilon: float,
        delta: float,
        description: str,
        bound: PrivacyLedger | None = None,
        checkpoint: str | Path | None = None,
        resume_of: str | None = None,
    ) -> Any: ...

    def settle(self, run: Any, ledger: PrivacyLedger, *, check_total: bool = False) -> Any: ...


# --------------------------------------------------------------------------- the one path


def charge_before_release(
    budget: RunCharge | None,
    *,
    epsilon: float,
    delta: float,
    description: str,
    bound: PrivacyLedger | None = None,
    checkpoint: str | Path | None = None,
    resume_of: str | None = None,
) -> Any:
    """THE charging path of every entry point (fit, tune, federated runs, anything new; design
    rule 13): call it before the run's first release, then :func:`settle_charge`.

    Args:
        budget: the data set's :class:`DataBudget` (or the search's per-trial check); None
            charges nothing (``--no-budget-file``) and returns None.
        epsilon, delta: the run's own target; ``description``: what runs, as ``budget show``
            lists it (e.g. "marginal anchoring, target ε 1, δ 1e-05").
        bound: events that dominate every release the run makes before it settles (e.g.
            :func:`gaussian_bound`); the file composes them with the other runs' events at the
            declared total δ. None: the reservation counts as its whole (ε, δ) by basic
            composition, which spends its δ outright (two runs at the total's δ cannot both
            fit), so pass a bound when one is known. A run whose whole ledger is known before
            it starts passes that ledger as ``bound`` and settles it with the same ledger.
        checkpoint: the run's checkpoint folder, recorded (never used to recognise a resume).
        resume_of: the budget run id a checkpoint recorded: the run is found, nothing added.

    Returns:
        The run's record in the file, to pass to :func:`settle_charge`; None without a budget.

    Raises:
        BudgetExceededError: the run would take the data set past its declared total; the
            file is unchanged and the run must release nothing.
    """
    if budget is None:
        return None
    return budget.reserve(
        epsilon=epsilon,
        delta=delta,
        description=description,
        bound=bound,
        checkpoint=checkpoint,
        resume_of=resume_of,
    )


def settle_charge(
    budget: RunCharge | None, run: Any, ledger: PrivacyLedger, *, check_total: bool = False
) -> Any:
    """Replace the reservation ``run`` by ``ledger`` (what ran and what is planned, or what ran
    when the run stops on a DP outcome). ``check_total``: the ledger may exceed the
    reservation (a search whose event is known once its first trial is planned), so the total
    is checked again; refused, the reservation stays and BudgetExceededError is raised."""
    if budget is None:
        return None
    return budget.settle(run, ledger, check_total=check_total)


def gaussian_bound(epsilon: float, delta: float, extra_delta: float = 0.0) -> PrivacyLedger:
    """One Gaussian mechanism whose ε at ``delta`` is ``epsilon``, plus ``extra_delta``: it
    dominates every composition of Gaussian mechanisms (``GaussianDpEvent``, their
    self-compositions) whose own ε at ``delta`` is at most ``epsilon``, whatever the δ it is
    read at. Why: such a composition is exactly μ-GDP with μ = sqrt(Σ 1/σ_i²), its ε at a fixed
    δ grows with μ, so its μ is at most this Gaussian's. ``extra_delta`` pays δ spent outside
    events (thresholded category lists). For ε = ∞: a non-private event."""
    from dpforge.privacy.calibration import noise_for_target

    ledger = PrivacyLedger()
    name = "reserved: at most this until the run's plan is known"
    if not math.isfinite(epsilon):
        ledger.record(name, dp_accounting.NonPrivateDpEvent())
        return ledger
    sigma = noise_for_target(dp_accounting.GaussianDpEvent, epsilon, delta)
    ledger.record(name, dp_accounting.GaussianDpEvent(sigma), extra_delta=extra_delta)
    return ledger


# --------------------------------------------------------------------------- the file


class DataBudget:
    """The budget file of one data set (see the module docstring).

    ``DataBudget(path)`` opens (or will create) the budget file at ``path``;
    :meth:`for_data` finds the one that belongs to a data file.
    """

    def __init__(self, path: str | Path, data_sha256: str | None = None) -> None:
        self.path = Path(path)
        self.data_sha256 = data_sha256
        self._lock = FileLock(str(self.path) + ".lock", timeout=LOCK_TIMEOUT_S)

    def __repr__(self) -> str:
        return f"DataBudget({str(self.path)!r})"

    @classmethod
    def for_data(cls, data: str | Path) -> DataBudget:
        """The budget file of the data file or folder ``data``.

        ``<data>.dpforge-budget.json`` when it exists; else a budget file in the same folder
        that records the same records' fingerprint (``data`` is a renamed, re-saved or
        reordered copy: :func:`records_fingerprint`); else the first, to be created by the
        first run or by :meth:`set_total`.
        """
        digest = records_fingerprint(data)
        own = budget_path_for(data)
        if own.exists():
            return cls(own, digest)
        older: str | None = None  # files written before 43.8 recorded the bytes' SHA-256
        for other in sorted(own.parent.glob("*" + BUDGET_SUFFIX)):
            try:
                recorded = _read(other).get("data_sha256")
            except ModelFileError:
                continue
            if recorded != digest and recorded is not None:
                older = older or data_sha256(data)
            if recorded in (digest, older):
                return cls(other, digest)
        return cls(own, digest)

    # -- reading -------------------------------------------------------------------------
    def status(self) -> BudgetStatus:
        """The declared total, the runs and the composed spend (an empty status if no file)."""
        return _status(self.path, self._load())

    def _load(self) -> dict[str, Any]:
        if not self.path.exists():
            return _empty(self.data_sha256)
        return _read(self.path)

    # -- writing -------------------------------------------------------------------------
    def check_writable(self) -> None:
        """Fail now, before any work, if the budget file's folder cannot be written.

        Writes nothing (a run that stops on bad input leaves no file behind); the lock and the
        atomic write that follow at charge time can still fail, with the same advice.
        """
        folder = self.path.parent
        while not folder.exists() and folder != folder.parent:
            folder = folder.parent
        if not folder.is_dir() or not os.access(folder, os.W_OK | os.X_OK):
            raise PrivacyError(
                f"cannot write the budget file {self.path} ({folder} is not a writable "
                "folder); give a writable place with --budget PATH, or run without one "
                "([privacy] record_budget = false; --no-budget-file for federated runs)"
            )

    def set_total(self, epsilon: float, delta: float) -> BudgetStatus:
        """Declare the total (ε, δ) that all runs on this data set together may spend.

        Lowering it below what was already spent is allowed (the file then refuses every new
        run), so that a steward can always tighten a budget.
        """
        eps = _check_total_epsilon(epsilon)
        d = validate_delta(delta)
        with self._locked():
            state = self._load()
            state["total"] = {"epsilon": eps, "delta": d}
            _status(self.path, state)  # refuse a δ the runs' own δ-outside-events already exceed
            self._write(state)
            return _status(self.path, state)

    def reserve(
        self,
        *,
        epsilon: float,
        delta: float,
        description: str,
        bound: PrivacyLedger | None = None,
        checkpoint: str | Path | None = None,
        resume_of: str | None = None,
    ) -> BudgetedRun:
        """Reserve a run before its first release (call it through
        :func:`charge_before_release`): counted as ``bound``'s events, or without one as its
        whole target (ε, δ) by basic composition (see the module notes).

        ``resume_of``: the budget run id a checkpoint recorded; when the file holds that run,
        the run is resumed and nothing is added.

        Raises:
            BudgetExceededError: the reservation would take the data set past its total.
        """
        if resume_of is not None:
            earlier = [r for r in self.status().runs if r.run_id == resume_of]
            if earlier:
                return earlier[0]
        held = PrivacyLedger(() if bound is None else bound.entries)
        return self._add(held, epsilon, delta, description, checkpoint, reserved=True)

    def settle(
        self, run: BudgetedRun, ledger: PrivacyLedger, *, check_total: bool = False
    ) -> BudgetedRun:
        """Replace ``run``'s reservation (or earlier settlement) by ``ledger``: the events that
        ran and those planned. Without ``check_total``, ``ledger`` must stay within the run's
        own target, which the pipeline's plan guarantees; with it, the total is checked again
        and a refusal keeps the reservation. The run keeps its place in the file. An empty
        ``ledger`` (the run was refused before its first release) removes the run."""
        with self._locked():
            state = self._load()
            for i, item in enumerate(state["runs"]):
                if item.get("id") != run.run_id:
                    continue
                settled = replace(run, ledger=PrivacyLedger(ledger.entries), reserved=False)
                if check_total:
                    others = [r for r in _runs(state, self.path) if r.run_id != run.run_id]
                    _refuse_overspend(state, others, settled, self.path)
                if len(ledger):
                    state["runs"][i] = settled.to_dict()
                else:  # refused before any release: nothing was spent, nothing to keep
                    del state["runs"][i]
                self._write(state)
                return settled
        raise PrivacyError(
            f"{self.path} no longer holds run {run.run_id}, whose budget was reserved: it was "
            "edited or replaced while the run was going; nothing is released"
        )

    def _add(self, ledger, epsilon, delta, description, checkpoint, reserved=False):
        folder = None if checkpoint is None else str(Path(checkpoint).resolve())
        with self._locked():
            state = self._load()
            runs = _runs(state, self.path)
            run = BudgetedRun(
                run_id=uuid.uuid4().hex,
                started=datetime.now(timezone.utc).isoformat(timespec="seconds"),
                description=description,
                epsilon=float(epsilon),
                delta=float(delta),
                ledger=ledger,
                checkpoint=folder,
                data_sha256=self.data_sha256,
                reserved=reserved,
            )
            _refuse_overspend(state, runs, run, self.path)
            state["runs"].append(run.to_dict())
            if state.get("data_sha256") is None:
                state["data_sha256"] = self.data_sha256
            self._write(state)
            return run

    def _write(self, state: dict[str, Any]) -> None:
        text = json.dumps(state, indent=2)

        try:  # private (0600): it holds the data's fingerprint and every ledger
            atomic_write(self.path, lambda tmp: tmp.write_text(text), overwrite=True, private=True)
        except OSError as exc:
            raise PrivacyError(
                f"cannot write the budget file {self.path} ({exc.strerror or exc}); give a "
                "writable place with --budget PATH, or run without one ([privacy] "
                "record_budget = false; --no-budget-file for federated runs)"
            ) from None

    def _locked(self) -> Any:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._lock.acquire()
        except Timeout:
            raise PrivacyError(
                f"the budget file {self.path} stayed locked by another dpforge process for "
                f"{LOCK_TIMEOUT_S:g} s; wait for it to finish, or delete {self._lock.lock_file} "
                "if no dpforge process is running"
            ) from None
        except OSError as exc:
            raise PrivacyError(
                f"cannot lock the budget file {self.path} ({exc.strerror or exc}); give a "
                "writable place with --budget PATH, or run without one ([privacy] "
                "record_budget = false; --no-budget-file for federated runs)"
            ) from None
        return _Release(self._lock)


class _Release:
    """Context manager that releases an already acquired lock."""

    def __init__(self, lock: FileLock) -> None:
        self._lock = lock

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        self._lock.release()
