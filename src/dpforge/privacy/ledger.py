"""The privacy ledger: the one record of every access a run made to private data.

Each entry is a dp-accounting :class:`~dp_accounting.DpEvent` with a human-readable name; the ε
we print is the accountant's ε of the composition of all entries. A ledger is saved with the
model as plain JSON (:meth:`PrivacyLedger.to_dict`). Loading it builds events only from an
explicit allow-list of dp-accounting classes, so a model file can never name a class to
instantiate or code to run.
"""

from __future__ import annotations

import math
import numbers
import typing
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import attr
import dp_accounting
from dp_accounting import dp_event

from dpforge.errors import PrivacyError
from dpforge.privacy.accounting import (
    PrivacyReport,
    epsilon,
    privacy_report,
    reporting_accountant,
    validate_delta,
)
from dpforge.privacy.discrete_gaussian import DiscreteGaussianDpEvent

__all__ = ["EVENT_TYPES", "LedgerEntry", "PrivacyLedger", "event_from_dict", "event_to_dict"]

LEDGER_FORMAT = "dpforge.privacy_ledger"
LEDGER_VERSION = 1
MAX_EVENT_DEPTH = 64

EVENT_TYPES: dict[str, type[dp_accounting.DpEvent]] = {
    cls.__name__: cls
    for cls in (
        dp_event.NoOpDpEvent,
        dp_event.NonPrivateDpEvent,
        dp_event.GaussianDpEvent,
        dp_event.LaplaceDpEvent,
        dp_event.DiscreteLaplaceDpEvent,
        dp_event.RandomizedResponseDpEvent,
        dp_event.ZCDpEvent,
        dp_event.MixtureOfGaussiansDpEvent,
        dp_event.SelfComposedDpEvent,
        dp_event.ComposedDpEvent,
        dp_event.PoissonSampledDpEvent,
        dp_event.SampledWithReplacementDpEvent,
        dp_event.SampledWithoutReplacementDpEvent,
        dp_event.SingleEpochTreeAggregationDpEvent,
        dp_event.RepeatAndSelectDpEvent,
        dp_event.TruncatedSubsampledGaussianDpEvent,
        DiscreteGaussianDpEvent,  # dpforge's own: dp-accounting has the PLD but no event
    )
}
"""The event classes a ledger may hold (dp-accounting's and dpforge's discrete Gaussian), by
the name used in saved ledgers."""

_NON_FINITE = {"inf": math.inf, "-inf": -math.inf}


# --------------------------------------------------------------------------- events <-> dicts


def event_to_dict(event: dp_accounting.DpEvent) -> dict[str, Any]:
    """JSON-safe dict ``{"type": class name, field: value, ...}`` of an allow-listed event."""
    return _encode_event(event, 0)


def _encode_event(event: Any, depth: int) -> dict[str, Any]:
    cls = type(event)
    if EVENT_TYPES.get(cls.__name__) is not cls:
        raise PrivacyError(
            f"event type {cls.__name__} cannot be recorded in a ledger; "
            f"use one of {', '.join(sorted(EVENT_TYPES))}"
        )
    if depth > MAX_EVENT_DEPTH:
        raise PrivacyError(f"event nesting is deeper than {MAX_EVENT_DEPTH}; flatten the event")
    encoded: dict[str, Any] = {"type": cls.__name__}
    for field in attr.fields(cls):
        encoded[field.name] = _encode_value(getattr(event, field.name), depth + 1)
    return encoded


def _encode_value(value: Any, depth: int) -> Any:
    if isinstance(value, dp_accounting.DpEvent):
        return _encode_event(value, depth)
    if isinstance(value, bool):
        raise PrivacyError(f"event field value {value!r} is a bool; dp-accounting expects numbers")
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        value = float(value)
        if math.isnan(value):
            raise PrivacyError("event field value is NaN; record events with real parameters")
        return value if math.isfinite(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, Sequence) and not isinstance(value, str):
        return [_encode_value(item, depth) for item in value]
    raise PrivacyError(f"event field value {value!r} cannot be saved in a ledger")


def event_from_dict(data: Any) -> dp_accounting.DpEvent:
    """The event that :func:`event_to_dict` encoded; PrivacyError for anything else.

    Only classes in :data:`EVENT_TYPES` are built, with exactly their declared fields, each
    checked against the field's declared type (event, int, float, or a list of those).
    """
    return _decode_event(data, 0)


def _decode_event(data: Any, depth: int) -> dp_accounting.DpEvent:
    if depth > MAX_EVENT_DEPTH:
        raise PrivacyError(f"saved event is nested deeper than {MAX_EVENT_DEPTH}; file is corrupt")
    if not isinstance(data, dict) or not isinstance(data.get("type"), str):
        raise PrivacyError(f"saved event {_short(data)} is not a dict with a 'type'")
    name = data["type"]
    cls = EVENT_TYPES.get(name)
    if cls is None:
        raise PrivacyError(
            f"saved event type {name!r} is not an allowed dp-accounting event; "
            "the ledger is corrupt or from an incompatible version"
        )
    fields = {f.name: f for f in attr.fields(cls)}
    given = set(data) - {"type"}
    if given - set(fields):
        raise PrivacyError(f"saved {name} has unknown fields {sorted(given - set(fields))}")
    missing = [n for n, f in fields.items() if n not in given and f.default is attr.NOTHING]
    if missing:
        raise PrivacyError(f"saved {name} lacks the fields {missing}")
    values = {n: _decode_value(data[n], fields[n].type, f"{name}.{n}", depth) for n in given}
    return cls(**values)


def _decode_value(value: Any, annotation: Any, where: str, depth: int) -> Any:
    """Decode ``value`` as ``annotation`` (an attrs field type of a dp-accounting event)."""
    origin = typing.get_origin(annotation)
    if origin is typing.Union:
        for option in typing.get_args(annotation):
            try:
                return _decode_value(value, option, where, depth)
            except PrivacyError:
                continue
        raise PrivacyError(f"saved {where}={_short(value)} matches none of its types")
    if origin in (list, Sequence):
        if not isinstance(value, list):
            raise PrivacyError(f"saved {where}={_short(value)} should be a list")
        (item_type,) = typing.get_args(annotation) or (Any,)
        return [_decode_value(item, item_type, where, depth) for item in value]
    if annotation is dp_accounting.DpEvent:
        return _decode_event(value, depth + 1)
    if annotation is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise PrivacyError(f"saved {where}={_short(value)} should be a whole number")
        return value
    if annotation is float:
        return _decode_float(value, where)
    raise PrivacyError(f"saved {where} has a type ({annotation}) that a ledger cannot hold")


def _decode_float(value: Any, where: str) -> float:
    if isinstance(value, str) and value in _NON_FINITE:
        return _NON_FINITE[value]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
        raise PrivacyError(f"saved {where}={_short(value)} should be a number")
    return float(value)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


# --------------------------------------------------------------------------- ledger


@dataclass(frozen=True)
class LedgerEntry:
    """One recorded access to private data.

    ``extra_delta`` is δ paid outside the event (e.g. the probability that a thresholded
    histogram releases a category held by one record); it adds to the accountant's δ.
    """

    name: str
    event: dp_accounting.DpEvent
    extra_delta: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe form."""
        return {
            "name": self.name,
            "event": event_to_dict(self.event),
            "extra_delta": self.extra_delta,
        }

    @classmethod
    def from_dict(cls, data: Any) -> LedgerEntry:
        """Inverse of :meth:`to_dict`, with every value checked."""
        if not isinstance(data, dict) or set(data) != {"name", "event", "extra_delta"}:
            raise PrivacyError(
                f"saved ledger entry {_short(data)} needs exactly 'name', 'event', 'extra_delta'"
            )
        return _make_entry(data["name"], event_from_dict(data["event"]), data["extra_delta"])


def _make_entry(name: Any, event: Any, extra_delta: Any) -> LedgerEntry:
    """A validated entry; PrivacyError names the bad value."""
    if not isinstance(name, str) or not name.strip():
        raise PrivacyError(f"ledger entry name {name!r} must be a non-empty string")
    if not isinstance(event, dp_accounting.DpEvent):
        raise PrivacyError(f"ledger entry {name!r}: {event!r} is not a dp_accounting.DpEvent")
    event_to_dict(event)  # refuse now what could not be saved later
    bad = isinstance(extra_delta, bool) or not isinstance(extra_delta, numbers.Real)
    if bad or not 0.0 <= float(extra_delta) < 1.0:
        raise PrivacyError(
            f"ledger entry {name!r}: extra_delta={extra_delta!r} must be a number in [0, 1)"
        )
    return LedgerEntry(name, event, float(extra_delta))


class PrivacyLedger:
    """Every DP event of a run, in order; ε is computed from the composition of all of them."""

    def __init__(self, entries: Iterable[LedgerEntry] = ()) -> None:
        self._entries: list[LedgerEntry] = []
        for entry in entries:
            self._entries.append(_make_entry(entry.name, entry.event, entry.extra_delta))

    def record(self, name: str, event: dp_accounting.DpEvent, extra_delta: float = 0.0) -> None:
        """Append one access to private data: ``event`` plus δ paid outside it."""
        self._entries.append(_make_entry(name, event, extra_delta))

    @property
    def entries(self) -> tuple[LedgerEntry, ...]:
        """The recorded entries, oldest first (read-only)."""
        return tuple(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        return f"PrivacyLedger({len(self._entries)} entries)"

    def event(self) -> dp_accounting.DpEvent:
        """The composition of all entries (``NoOpDpEvent`` when empty)."""
        if not self._entries:
            return dp_accounting.NoOpDpEvent()
        return dp_accounting.ComposedDpEvent([entry.event for entry in self._entries])

    def extra_delta(self) -> float:
        """δ paid outside the events, summed over entries (composition adds δ's)."""
        return math.fsum(entry.extra_delta for entry in self._entries)

    def _accountant_delta(self, delta: float) -> float:
        d, extra = validate_delta(delta), self.extra_delta()
        if d <= extra:
            raise PrivacyError(
                f"delta={delta} does not exceed the {extra:.3g} already paid outside the "
                "accountant by the recorded entries; choose a larger delta"
            )
        return d - extra

    def epsilon(self, delta: float, accountant: str | None = None) -> float:
        """ε of the whole run at total δ = ``delta`` (∞ if any access was non-private), by
        ``accountant``, or None: the one that reports it (PLD where it applies, else RDP)."""
        event = self.event()
        acc = accountant or reporting_accountant(event)
        return epsilon(event, self._accountant_delta(delta), acc)

    def report(self, delta: float) -> PrivacyReport:
        """ε under PLD (reported) and RDP at total δ = ``delta``."""
        self._accountant_delta(delta)
        return privacy_report(self.event(), delta, self.extra_delta())

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe form, for model files and checkpoints."""
        return {
            "format": LEDGER_FORMAT,
            "version": LEDGER_VERSION,
            "entries": [entry.to_dict() for entry in self._entries],
        }

    @classmethod
    def from_dict(cls, data: Any) -> PrivacyLedger:
        """Inverse of :meth:`to_dict`; builds only allow-listed events, checks every value."""
        if not isinstance(data, dict) or data.get("format") != LEDGER_FORMAT:
            raise PrivacyError(f"saved ledger {_short(data)} is not a {LEDGER_FORMAT} dict")
        if data.get("version") != LEDGER_VERSION:
            raise PrivacyError(
                f"saved ledger version {data.get('version')!r} is not supported "
                f"(this dpforge reads version {LEDGER_VERSION}); upgrade dpforge"
            )
        if not isinstance(data.get("entries"), list):
            raise PrivacyError("saved ledger has no 'entries' list; the file is corrupt")
        return cls(LedgerEntry.from_dict(item) for item in data["entries"])
