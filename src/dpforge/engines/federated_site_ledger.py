"""A federated site's own ledger and cap, across runs and restarts (design rule 12).

A site that trusts nobody bounds what ANY sequence of server queries learns about its records:
every answer's event is checked against the site's cap (epsilon, delta) over everything the
site ever answered, and written to the site's ledger file BEFORE the answer leaves. The file
(the node config's ``ledger``, ``--ledger`` on ``dpforge federated client``) is read at every
answer, so a new run, a restarted SuperNode or a new server starts from what was spent; it is
replaced atomically (a kill leaves the old or the new file, never a partial one), flushed to
disk, and private (0600). A cap without a ledger file would cover one run only, so a deployed
site refuses one (:func:`site_cap`).

A table site's file is a :class:`~dpforge.privacy.ledger.PrivacyLedger` document; an image
site's holds its answers by noise setting (:mod:`.federated_images_guard`).
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from dpforge.errors import DpforgeError, ModelFileError, PrivacyError
from dpforge.privacy.ledger import PrivacyLedger

__all__ = ["SiteLedger", "read_ledger_file", "site_cap", "within_cap", "write_ledger_file"]

CAP_SLACK = 1e-3  # the PLD accountant's discretisation


class SiteLedger(PrivacyLedger):
    """A site's ledger: with a ``cap`` (epsilon, delta) a release that would take it past the
    cap is refused before it runs; with a ``path`` every event is written there first."""

    def __init__(self, entries=(), cap: tuple[float, float] | None = None,
                 path: Path | None = None) -> None:  # fmt: skip
        super().__init__(entries)
        self.cap, self.path = cap, path

    @classmethod
    def opened(cls, path: Path, cap: tuple[float, float] | None) -> SiteLedger:
        """The ledger kept in ``path`` (empty before the site's first answer)."""
        document = read_ledger_file(path)
        entries = () if document is None else PrivacyLedger.from_dict(document).entries
        return cls(entries, cap, path)

    def record(self, name: str, event: Any, extra_delta: float = 0.0) -> None:
        if self.cap is None and self.path is None:
            super().record(name, event, extra_delta)
            return
        trial = PrivacyLedger(self.entries)
        trial.record(name, event, extra_delta)
        if self.cap is not None and not within_cap(trial, self.cap):
            raise PrivacyError(
                f"this site refuses '{name}': its own ledger would pass its cap "
                f"(epsilon {self.cap[0]:g}, delta {self.cap[1]:g}), counting every run it "
                "answered"
            )
        if self.path is not None:  # write-ahead: on disk before the answer is computed
            write_ledger_file(self.path, trial.to_dict())
        super().record(name, event, extra_delta)


def within_cap(ledger: PrivacyLedger, cap: tuple[float, float]) -> bool:
    """Whether ``ledger``'s epsilon at the cap's delta is within the cap's epsilon."""
    try:
        return ledger.epsilon(cap[1]) <= cap[0] * (1 + CAP_SLACK)
    except PrivacyError:  # the thresholds' delta alone passes the cap's
        return False


def site_cap(config: Any) -> tuple[float, float] | None:
    """The site's own (epsilon, delta) cap, if its node config sets one (both or neither,
    and a ledger file with them: a cap must count every run)."""
    given = [k for k in ("max-epsilon", "max-delta") if k in config]
    if not given:
        return None
    if len(given) == 1:
        raise DpforgeError("a site's node config sets max-epsilon and max-delta together")
    if not config.get("ledger"):
        raise DpforgeError(
            "a site's cap (max-epsilon) needs its ledger file (ledger, --ledger): without it the "
            "cap would count one run only"
        )
    return float(config["max-epsilon"]), float(config["max-delta"])


def read_ledger_file(path: Path) -> dict | None:
    """The site's ledger document (None when the file does not exist yet)."""
    path = Path(path)
    if not path.exists():
        return None
    try:
        document = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise ModelFileError(
            f"{path}: this site's ledger file cannot be read ({exc}); it records what the site "
            "answered: restore it rather than delete it"
        ) from None
    if not isinstance(document, dict):
        raise ModelFileError(f"{path}: not a site ledger file")
    return document


def write_ledger_file(path: Path, document: dict) -> None:
    """Replace ``path`` by ``document`` atomically: a private (0600) temporary file beside it,
    flushed to disk, renamed into place."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as handle:  # mkstemp: 0600 from the start
            handle.write(json.dumps(document, indent=2))
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    finally:
        Path(tmp).unlink(missing_ok=True)
