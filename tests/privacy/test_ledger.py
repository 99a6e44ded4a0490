"""The privacy ledger: composition, extra δ, and safe JSON round trips."""

from __future__ import annotations

import copy
import json
import math

import dp_accounting
import pytest
from dp_accounting import dp_event

from dpforge.errors import PrivacyError
from dpforge.privacy.accounting import dpsgd_event, epsilon
from dpforge.privacy.calibration import noise_for_epsilon
from dpforge.privacy.discrete_gaussian import DiscreteGaussianDpEvent
from dpforge.privacy.ledger import (
    EVENT_TYPES,
    LedgerEntry,
    PrivacyLedger,
    event_from_dict,
    event_to_dict,
)

DELTA = 1e-5
TRAINING = dpsgd_event(32 / 3772, 1.15, 5894)  # the pinned thyroid run: PLD ε ≈ 2.97
BOUNDS = dp_accounting.SelfComposedDpEvent(dp_accounting.GaussianDpEvent(20.0), 2)

# one instance of every allow-listed event type, including nested and non-finite fields
ALL_EVENTS = [
    dp_event.NoOpDpEvent(),
    dp_event.NonPrivateDpEvent(),
    dp_event.GaussianDpEvent(1.5),
    dp_event.LaplaceDpEvent(2),
    dp_event.DiscreteLaplaceDpEvent(0.5, 3),
    dp_event.RandomizedResponseDpEvent(0.25, 4),
    dp_event.ZCDpEvent(0.1),
    dp_event.ZCDpEvent(0.1, 0.02),
    dp_event.MixtureOfGaussiansDpEvent(1.0, [0.0, 1.0], [0.3, 0.7]),
    dp_event.SelfComposedDpEvent(dp_event.GaussianDpEvent(1.0), 7),
    dp_event.ComposedDpEvent([dp_event.GaussianDpEvent(1.0), dp_event.LaplaceDpEvent(1.0)]),
    dp_event.ComposedDpEvent([]),
    dp_event.PoissonSampledDpEvent(0.01, dp_event.GaussianDpEvent(1.0)),
    dp_event.SampledWithReplacementDpEvent(100, 10, dp_event.GaussianDpEvent(1.0)),
    dp_event.SampledWithoutReplacementDpEvent(100, 10, dp_event.GaussianDpEvent(1.0)),
    dp_event.SingleEpochTreeAggregationDpEvent(1.0, 5),
    dp_event.SingleEpochTreeAggregationDpEvent(1.0, [5, 6]),
    dp_event.RepeatAndSelectDpEvent(dp_event.GaussianDpEvent(1.0), 3.0, math.inf),
    dp_event.TruncatedSubsampledGaussianDpEvent(1000, 0.01, 20, 1.0),
    DiscreteGaussianDpEvent(2.5, 3),
    dp_event.SelfComposedDpEvent(DiscreteGaussianDpEvent(7.25), 6),
]


def _ledger() -> PrivacyLedger:
    ledger = PrivacyLedger()
    ledger.record("metadata: bounds of column 'age'", BOUNDS)
    ledger.record("metadata: categories of 'job'", dp_accounting.GaussianDpEvent(30.0), 1e-7)
    ledger.record("dpcgan: discriminator steps", TRAINING)
    return ledger


def test_empty_ledger_spends_nothing() -> None:
    ledger = PrivacyLedger()
    assert len(ledger) == 0 and ledger.entries == ()
    assert ledger.event() == dp_accounting.NoOpDpEvent()
    assert ledger.extra_delta() == 0.0
    assert ledger.epsilon(DELTA) == 0.0
    assert ledger.report(DELTA).epsilon == 0.0


def test_ledger_composes_entries_in_order() -> None:
    ledger = _ledger()
    assert [e.name for e in ledger.entries][-1] == "dpcgan: discriminator steps"
    assert isinstance(ledger.entries, tuple)
    assert ledger.entries[1] == LedgerEntry(
        "metadata: categories of 'job'", dp_accounting.GaussianDpEvent(30.0), 1e-7
    )
    expected = dp_accounting.ComposedDpEvent(
        [BOUNDS, dp_accounting.GaussianDpEvent(30.0), TRAINING]
    )
    assert ledger.event() == expected


def test_ledger_epsilon_uses_delta_minus_extra_delta() -> None:
    ledger = _ledger()
    assert ledger.extra_delta() == pytest.approx(1e-7)
    eps = ledger.epsilon(DELTA)
    assert eps == epsilon(ledger.event(), DELTA - 1e-7)
    assert ledger.epsilon(DELTA, "rdp") == epsilon(ledger.event(), DELTA - 1e-7, "rdp")
    report = ledger.report(DELTA)
    assert report.epsilon_pld == eps and report.extra_delta == pytest.approx(1e-7)
    assert report.delta == DELTA


def test_metadata_spends_privacy_on_top_of_training() -> None:
    ledger = _ledger()
    training_only = epsilon(TRAINING, DELTA)
    assert training_only == pytest.approx(2.97, abs=0.01)
    assert ledger.epsilon(DELTA) > training_only


def test_delta_not_above_extra_delta_is_refused() -> None:
    ledger = PrivacyLedger()
    ledger.record("metadata: thresholded histogram", dp_accounting.GaussianDpEvent(5.0), 1e-5)
    with pytest.raises(PrivacyError, match="does not exceed the 1e-05 already paid"):
        ledger.epsilon(1e-5)
    with pytest.raises(PrivacyError, match="does not exceed"):
        ledger.report(5e-6)
    assert math.isfinite(ledger.epsilon(2e-5))


def test_non_private_entry_makes_epsilon_infinite() -> None:
    ledger = _ledger()
    ledger.record("metadata: bounds read from the data", dp_accounting.NonPrivateDpEvent())
    assert ledger.epsilon(DELTA) == math.inf
    assert ledger.epsilon(DELTA, "rdp") == math.inf
    assert not ledger.report(DELTA).is_private


@pytest.mark.parametrize(
    ("name", "event", "extra", "fragment"),
    [
        ("", dp_accounting.NoOpDpEvent(), 0.0, "name '' must be a non-empty string"),
        (3, dp_accounting.NoOpDpEvent(), 0.0, "name 3"),
        ("x", "gaussian", 0.0, "is not a dp_accounting.DpEvent"),
        ("x", dp_event.UnsupportedDpEvent(), 0.0, "UnsupportedDpEvent cannot be recorded"),
        ("x", dp_accounting.NoOpDpEvent(), -1e-9, "extra_delta=-1e-09"),
        ("x", dp_accounting.NoOpDpEvent(), 1.0, "extra_delta=1.0"),
        ("x", dp_accounting.NoOpDpEvent(), True, "extra_delta=True"),
        ("x", dp_accounting.GaussianDpEvent(math.nan), 0.0, "NaN"),
    ],
)
def test_record_rejects_bad_entries(name, event, extra, fragment: str) -> None:
    ledger = PrivacyLedger()
    with pytest.raises(PrivacyError) as err:
        ledger.record(name, event, extra)
    assert fragment in str(err.value) and "\n" not in str(err.value)
    assert len(ledger) == 0


def test_record_rejects_subclasses_of_allowed_events() -> None:
    class Sneaky(dp_event.GaussianDpEvent):
        pass

    with pytest.raises(PrivacyError, match="cannot be recorded"):
        PrivacyLedger().record("x", Sneaky(1.0))


# --------------------------------------------------------------------------- serialisation


def _json_round_trip(data: dict) -> dict:
    return json.loads(json.dumps(data, allow_nan=False))


def test_every_allowed_event_type_is_covered() -> None:
    assert {type(e).__name__ for e in ALL_EVENTS} == set(EVENT_TYPES)


@pytest.mark.parametrize("event", ALL_EVENTS, ids=lambda e: type(e).__name__)
def test_event_round_trip(event: dp_accounting.DpEvent) -> None:
    data = _json_round_trip(event_to_dict(event))
    assert data["type"] == type(event).__name__
    assert event_from_dict(data) == event


def test_ledger_json_round_trip_gives_the_same_epsilon() -> None:
    ledger = _ledger()
    data = _json_round_trip(ledger.to_dict())
    assert data["format"] == "dpforge.privacy_ledger" and data["version"] == 1
    loaded = PrivacyLedger.from_dict(data)
    assert loaded.entries == ledger.entries
    assert loaded.epsilon(DELTA) == ledger.epsilon(DELTA)
    assert loaded.report(DELTA) == ledger.report(DELTA)
    assert loaded.to_dict() == ledger.to_dict()


def test_saved_format_is_plain_and_readable() -> None:
    ledger = PrivacyLedger()
    ledger.record("steps", dpsgd_event(0.01, 1.0, 3))
    assert ledger.to_dict()["entries"] == [
        {
            "name": "steps",
            "event": {
                "type": "SelfComposedDpEvent",
                "event": {
                    "type": "PoissonSampledDpEvent",
                    "sampling_probability": 0.01,
                    "event": {"type": "GaussianDpEvent", "noise_multiplier": 1.0},
                },
                "count": 3,
            },
            "extra_delta": 0.0,
        }
    ]


def _saved() -> dict:
    return _json_round_trip(_ledger().to_dict())


def _with_event(event_dict: dict) -> dict:
    data = _saved()
    data["entries"][0]["event"] = event_dict
    return data


@pytest.mark.parametrize(
    ("event_dict", "fragment"),
    [
        ({"type": "os.system", "command": "rm -rf /"}, "'os.system' is not an allowed"),
        ({"type": "UnsupportedDpEvent"}, "'UnsupportedDpEvent' is not an allowed"),
        ({"type": "PLDAccountant"}, "'PLDAccountant' is not an allowed"),
        ({"type": "dp_accounting.dp_event.GaussianDpEvent", "noise_multiplier": 1.0}, "not an"),
        ({"noise_multiplier": 1.0}, "is not a dict with a 'type'"),
        ("GaussianDpEvent", "is not a dict with a 'type'"),
        ({"type": "GaussianDpEvent"}, "lacks the fields ['noise_multiplier']"),
        ({"type": "GaussianDpEvent", "noise_multiplier": 1.0, "x": 1}, "unknown fields ['x']"),
        ({"type": "GaussianDpEvent", "noise_multiplier": "1.0"}, "should be a number"),
        ({"type": "GaussianDpEvent", "noise_multiplier": True}, "should be a number"),
        ({"type": "GaussianDpEvent", "noise_multiplier": None}, "should be a number"),
        (
            {"type": "SelfComposedDpEvent", "event": {"type": "NoOpDpEvent"}, "count": 2.5},
            "count=2.5 should be a whole number",
        ),
        (
            {"type": "SelfComposedDpEvent", "event": {"type": "Evil"}, "count": 2},
            "'Evil' is not an allowed",
        ),
        ({"type": "ComposedDpEvent", "events": {"type": "NoOpDpEvent"}}, "should be a list"),
        (
            {
                "type": "SingleEpochTreeAggregationDpEvent",
                "noise_multiplier": 1.0,
                "step_counts": "5",
            },
            "matches none of its types",
        ),
    ],
)
def test_from_dict_rejects_bad_events(event_dict: object, fragment: str) -> None:
    with pytest.raises(PrivacyError) as err:
        PrivacyLedger.from_dict(_with_event(event_dict))
    assert fragment in str(err.value) and "\n" not in str(err.value)


def test_from_dict_rejects_deep_nesting() -> None:
    event: dict = {"type": "NoOpDpEvent"}
    for _ in range(100):
        event = {"type": "SelfComposedDpEvent", "event": event, "count": 1}
    with pytest.raises(PrivacyError, match="nested deeper than 64"):
        event_from_dict(event)


@pytest.mark.parametrize(
    ("mutate", "fragment"),
    [
        (lambda d: d.update(format="pickle"), "is not a dpforge.privacy_ledger dict"),
        (lambda d: d.update(version=2), "version 2 is not supported"),
        (lambda d: d.update(entries={}), "no 'entries' list"),
        (lambda d: d["entries"][0].pop("extra_delta"), "needs exactly 'name', 'event'"),
        (lambda d: d["entries"][0].update(code="print()"), "needs exactly 'name', 'event'"),
        (lambda d: d["entries"][0].update(extra_delta=-1), "extra_delta=-1"),
        (lambda d: d["entries"][0].update(name=""), "name '' must be"),
    ],
)
def test_from_dict_rejects_bad_ledgers(mutate, fragment: str) -> None:
    data = copy.deepcopy(_saved())
    mutate(data)
    with pytest.raises(PrivacyError) as err:
        PrivacyLedger.from_dict(data)
    assert fragment in str(err.value)


def test_from_dict_rejects_non_dict() -> None:
    with pytest.raises(PrivacyError, match="is not a dpforge.privacy_ledger dict"):
        PrivacyLedger.from_dict([1, 2])


def test_training_calibrated_on_the_ledger_never_exceeds_the_target() -> None:
    """The synthesizer's flow: metadata first, then σ calibrated on what is left, then record."""
    ledger = PrivacyLedger()
    ledger.record("metadata: bounds", BOUNDS)
    ledger.record("metadata: categories", dp_accounting.GaussianDpEvent(30.0), 1e-7)
    target, q, steps = 1.0, 0.01, 1_000
    sigma = noise_for_epsilon(
        target, DELTA - ledger.extra_delta(), q, steps, base_event=ledger.event()
    )
    ledger.record("dpcgan: discriminator steps", dpsgd_event(q, sigma, steps))
    assert target * 0.99 <= ledger.epsilon(DELTA) <= target
    assert ledger.report(DELTA).epsilon == ledger.epsilon(DELTA)
