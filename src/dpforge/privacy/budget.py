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
"""

from __future__ import annotations

import hashlib
import json
import math
import numbers
import os
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Protocol

from filelock import FileLock, Timeout

from dpforge.errors import ModelFileError, PrivacyError
from dpforge.privacy.accounting import PrivacyReport, format_epsilon, validate_delta
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

BUDGET_FORMAT = "dpforge.data_budget"
BUDGET_VERSION = 1
BUDGET_SUFFIX = ".dpforge-budget.json"
LOCK_TIMEOUT_S = 600.0
_CHUNK = 1 << 20


class BudgetExceededError(PrivacyError):
    """A run would take its data set past the declared total budget; it was not started."""


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


def data_sha256(path: str | Path) -> str:
    """SHA-256 of a data file's bytes, or of every file in a data folder (names included).

    Derived from private data: keep it in private files only, never print it.
    """
    path = Path(path)
    digest = hashlib.sha256()
    if path.is_dir():
        for item in sorted(p for p in path.rglob("*") if p.is_file()):
            digest.update(item.relative_to(path).as_posix().encode() + b"\0")
            _hash_file(item, digest)
    elif path.is_file():
        _hash_file(path, digest)
    else:
        raise PrivacyError(f"{path} does not exist: give the data file the budget is about")
    return digest.hexdigest()


def _hash_file(path: Path, digest: Any) -> None:
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(_CHUNK), b""):
            digest.update(chunk)
    digest.update(b"\1")


def budget_path_for(data: str | Path) -> Path:
    """The budget file that belongs next to ``data``: ``<data>.dpforge-budget.json``."""
    data = Path(data)
    name = data.resolve().name if data.name in ("", ".", "..") else data.name
    return data.resolve().parent / (name + BUDGET_SUFFIX)


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
                "folder); give a writable place with --budget PATH, or --no-budget-file to "
                "train without one"
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
                "writable place with --budget PATH, or --no-budget-file to train without one"
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
                "writable place with --budget PATH, or --no-budget-file to train without one"
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
    """The accountant's ε of every settled run's events, at ``delta`` (default: Σ run δ) less
    the reservations' δ, plus the reservations' ε (basic composition)."""
    runs = list(runs)
    if not runs:
        return None
    if delta is None:
        delta = min(math.fsum(run.delta for run in runs), 0.5)
    held = [run for run in runs if run.reserved]
    reserved_eps = math.fsum(run.epsilon for run in held)
    reserved_delta = math.fsum(run.delta for run in held)
    ledger = PrivacyLedger(
        entry for run in runs if not run.reserved for entry in run.ledger.entries
    )
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
        f"(composed over {len(runs) + 1} runs; {so_far}), beyond the declared total "
        f"ε = {eps:g} at δ = {delta:g} in {path}. Lower --epsilon, or raise the total with "
        "'dpforge budget set' if the data's owner agrees"
    )


def _eps(report: PrivacyReport) -> str:
    return format_epsilon(report.epsilon)
