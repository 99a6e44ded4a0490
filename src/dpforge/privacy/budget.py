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
SHA-256 of the data file's bytes (of every file, for a folder): when a data set without a
budget file of its own is a renamed copy of one with a budget file in the same folder, that
budget file is used. Copies elsewhere cannot be recognised: point every copy at one file with
``--budget PATH`` (``DataBudget(path)`` in Python). The hash and the ledgers come from the
private data and stay in this private file; nothing here prints them.

Write-ahead: a fit RESERVES its whole target (ε, δ) before its first release (metadata
estimates included), under a file lock (the ``filelock`` package, lock file
``<budget file>.lock``), and the file is replaced atomically. Once its releases have run and its
discriminator steps are planned, the reservation is SETTLED: replaced by the run's ledger (what
ran and what is planned; never more than the reservation). A run that stops on a DP outcome
("no category is frequent enough") is settled with the events it recorded; a run that is
killed keeps its whole reservation. A reservation counts as its (ε, δ) by basic composition
with the accountant's ε of all settled events: a run can waste budget, never hide it. A run
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
import os
import uuid
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Protocol

from filelock import FileLock, Timeout

from dpforge.errors import ModelFileError, PrivacyError
from dpforge.privacy.accounting import validate_delta
from dpforge.privacy.budget_paths import BUDGET_SUFFIX, budget_path_for, data_sha256
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
    "data_sha256",
]

LOCK_TIMEOUT_S = 600.0


class RunCharge(Protocol):
    """What ``Synthesizer.fit(data, budget=...)`` calls: :class:`DataBudget` (the budget file),
    or the tuning search's per-trial check. ``reserve`` comes before the run's first release;
    ``settle`` once its releases ran and its discriminator steps are planned (with that ledger),
    or when it stops on a DP outcome (with the events recorded so far)."""

    def reserve(
        self,
        *,
        epsilon: float,
        delta: float,
        description: str,
        checkpoint: str | Path | None = None,
        resume_of: str | None = None,
    ) -> Any: ...

    def settle(self, run: Any, ledger: PrivacyLedger) -> Any: ...


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
        that records the same SHA-256 (``data`` is a renamed copy); else the first, to be
        created by the first run or by :meth:`set_total`.
        """
        digest = data_sha256(data)
        own = budget_path_for(data)
        if own.exists():
            return cls(own, digest)
        for other in sorted(own.parent.glob("*" + BUDGET_SUFFIX)):
            try:
                recorded = _read(other).get("data_sha256")
            except ModelFileError:
                continue
            if recorded == digest:
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
                "folder); give a writable place with --budget PATH, or [privacy] "
                "record_budget = false to train without one"
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

    def charge(
        self,
        ledger: PrivacyLedger,
        *,
        epsilon: float,
        delta: float,
        description: str,
        checkpoint: str | Path | None = None,
    ) -> BudgetedRun:
        """Add a run whose complete ``ledger`` is known before it reads any record (the tuning
        search's events); refuse it if it would overspend. Every call is a new run.

        Raises:
            BudgetExceededError: with the declared total, the composed ε of the runs so far
                and of this run added to them; the file is left unchanged.
        """
        return self._add(PrivacyLedger(ledger.entries), epsilon, delta, description, checkpoint)

    def reserve(
        self,
        *,
        epsilon: float,
        delta: float,
        description: str,
        checkpoint: str | Path | None = None,
        resume_of: str | None = None,
    ) -> BudgetedRun:
        """Reserve a run's whole target (ε, δ) before its first release (see the module notes).

        ``resume_of``: the budget run id a checkpoint recorded; when the file holds that run,
        the run is resumed and nothing is added.

        Raises:
            BudgetExceededError: the reservation would take the data set past its total.
        """
        if resume_of is not None:
            earlier = [r for r in self.status().runs if r.run_id == resume_of]
            if earlier:
                return earlier[0]
        return self._add(PrivacyLedger(), epsilon, delta, description, checkpoint, reserved=True)

    def settle(self, run: BudgetedRun, ledger: PrivacyLedger) -> BudgetedRun:
        """Replace ``run``'s reservation (or earlier settlement) by ``ledger``: the events that
        ran and those planned. ``ledger`` must stay within the run's own target, which the
        pipeline's plan guarantees; the run keeps its place in the file. An empty ``ledger``
        (the run was refused before its first release) removes the run."""
        with self._locked():
            state = self._load()
            for i, item in enumerate(state["runs"]):
                if item.get("id") != run.run_id:
                    continue
                settled = replace(run, ledger=PrivacyLedger(ledger.entries), reserved=False)
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

        def write(tmp: Path) -> None:
            tmp.write_text(text)
            os.chmod(tmp, 0o600)

        try:
            atomic_write(self.path, write, overwrite=True)
            os.chmod(self.path, 0o600)  # private: it holds the data's hash and every ledger
        except OSError as exc:
            raise PrivacyError(
                f"cannot write the budget file {self.path} ({exc.strerror or exc}); give a "
                "writable place with --budget PATH, or [privacy] record_budget = false to train "
                "without one"
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
                "writable place with --budget PATH, or [privacy] record_budget = false to train "
                "without one"
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
