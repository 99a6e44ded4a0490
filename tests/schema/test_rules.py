"""Public rules between columns in a table schema (issue 21.7): parsing, the JSON round trip and
one clear line for each bad rule (unknown column, type mismatch, a map outside the domain,
rules that contradict each other or the domain)."""

from __future__ import annotations

import json

import pytest

from dpforge.data.encoder import TableEncoder
from dpforge.errors import SchemaError
from dpforge.schema.rules import Condition, Depends, Forbid, Inequality
from dpforge.schema.table import Schema

LEVELS = {"basic": 1, "middle": 2, "high": 3}
DOCUMENT = {
    "label": "y",
    "columns": [
        {"name": "age", "type": "integer", "lower": 0, "upper": 100},
        {"name": "level", "type": "categorical", "categories": ["basic", "middle", "high"]},
        {"name": "years", "type": "integer", "lower": 1, "upper": 3},
        {"name": "status", "type": "categorical", "categories": ["single", "married"]},
        {"name": "start", "type": "continuous", "lower": 0, "upper": 10},
        {"name": "end", "type": "continuous", "lower": 0, "upper": 10},
        {"name": "id", "type": "drop"},
        {"name": "y", "type": "categorical", "categories": ["no", "yes"]},
    ],
    "rules": [
        {"kind": "depends", "determinant": "level", "dependent": "years", "map": LEVELS},
        {
            "kind": "forbid",
            "when": [
                {"column": "age", "op": "<", "value": 16},
                {"column": "status", "op": "==", "value": "married"},
            ],
        },
        {"kind": "inequality", "left": "start", "op": "<=", "right": "end"},
    ],
}


def edited(change) -> dict:
    document = json.loads(json.dumps(DOCUMENT))
    change(document)
    return document


def message(document) -> str:
    with pytest.raises(SchemaError) as caught:
        Schema.from_dict(document)
    text = str(caught.value)
    assert "\n" not in text
    return text


def test_rules_are_parsed_and_round_trip_through_json():
    schema = Schema.from_dict(DOCUMENT)
    assert schema.rules == (
        Depends("level", "years", tuple(LEVELS.items())),
        Forbid((Condition("age", "<", 16), Condition("status", "==", "married"))),
        Inequality("start", "<=", "end"),
    )
    again = Schema.from_dict(json.loads(schema.to_json()))
    assert again == schema
    assert json.loads(schema.to_json())["rules"] == DOCUMENT["rules"]
    assert "rules" not in json.loads(Schema(schema.columns, label="y").to_json())


def test_a_dependent_is_not_modelled():
    """The dependent has no head in the generator: it is decoded from its determinant."""
    schema = Schema.from_dict(DOCUMENT)
    assert "years" not in [c.name for c in schema.generated_columns]
    assert "years" in [c.name for c in schema.feature_columns]
    assert "years" not in [s.column for s in TableEncoder(schema, n_bins=8).spans]


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            lambda d: d["rules"][0].update(determinant="levle"),
            'rule 1 (depends): the schema has no column "levle" (did you mean "level"?)',
        ),
        (
            lambda d: d["rules"][1]["when"][0].update(column="id"),
            'column "id" is an identifier (drop)',
        ),
        (
            lambda d: d["rules"][1]["when"][1].update(op="<"),
            '"<" compares numbers, but "status" is categorical',
        ),
        (
            lambda d: d["rules"][1]["when"][0].update(value="old"),
            'column "age" is integer: give a number, not "old"',
        ),
        (
            lambda d: d["rules"][1]["when"][1].update(value="maried"),
            '"maried" is not a category of "status" (did you mean "married"?)',
        ),
        (
            lambda d: d["rules"][1]["when"][0].update(op="in"),
            '"in" on "age" needs a non-empty list',
        ),
        (
            lambda d: d["rules"][2].update(right="status"),
            'column "status" is categorical; an inequality needs ordered numbers',
        ),
        (lambda d: d["rules"][2].update(op="<"), "'<' needs two integer columns"),
        (
            lambda d: d["rules"][0]["map"].update(high=4),
            'map["high"]: 4 is outside the bounds of "years" [1, 3]',
        ),
        (lambda d: d["rules"][0]["map"].update(high=2.5), '"years" is integer; 2.5 is not whole'),
        (lambda d: d["rules"][0]["map"].pop("high"), 'the map gives no value for "high"'),
        (
            lambda d: d["rules"][0]["map"].update(tertiary=3),
            'map key "tertiary" is not a category of "level"',
        ),
        (
            lambda d: d["rules"][0].update(dependent="y", map={k: "no" for k in LEVELS}),
            'the label "y" cannot be a dependent',
        ),
    ],
)
def test_a_bad_rule_gets_one_line_naming_rule_column_and_value(change, expected):
    assert expected in message(edited(change))


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        (
            {"kind": "depends", "determinant": "status", "dependent": "years",
             "map": {"single": 1, "married": 2}},
            'rules 1 and 4 both set "years"',
        ),
        (
            {"kind": "forbid", "when": [{"column": "years", "op": ">=", "value": 1}]},
            "every row matches forbid years >= 1",
        ),
        (
            {"kind": "forbid", "when": [{"column": "status", "op": "in",
                                         "value": ["single", "married"]}]},
            "every row matches",
        ),
        (
            {"kind": "inequality", "left": "end", "op": "<=", "right": "start"},
            "the inequality rules form a cycle (start <= end <= start)",
        ),
        (
            {"kind": "inequality", "left": "years", "op": "<=", "right": "age"},
            '"years" is set by dependency rule 1, so an inequality on it could not be repaired',
        ),
        (
            {"kind": "inequality", "left": "age", "op": "<", "right": "age"},
            'compares "age" with itself',
        ),
    ],
)  # fmt: skip
def test_contradictory_rules_are_refused(extra, expected):
    assert expected in message(edited(lambda d: d["rules"].append(extra)))


def test_an_inequality_no_value_can_meet_is_refused():
    def change(d):
        d["columns"][5].update(lower=0, upper=1)
        d["columns"][4].update(lower=5, upper=10)

    assert "no value can meet start <= end" in message(edited(change))


def test_a_condition_on_a_dependent_that_no_category_meets_is_allowed():
    """years >= 3 is the same as level == high: a forbidden combination, not a contradiction."""
    extra = {"kind": "forbid", "when": [{"column": "years", "op": ">=", "value": 3}]}
    assert len(Schema.from_dict(edited(lambda d: d["rules"].append(extra))).rules) == 4


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (lambda d: d["rules"].append({"kind": "order"}), '$.rules[3].kind is text ("order")'),
        (
            lambda d: d["rules"][0].update(mapping={}),
            '$.rules[0] has an unknown key "mapping" (did you mean "map"?)',
        ),
        (
            lambda d: d["rules"][2].update(op=">="),
            '$.rules[2].op is text (">="); allowed: "<=" or "<"',
        ),
        (lambda d: d["rules"][1].update(when=[]), "$.rules[1].when has 0 item(s)"),
    ],
)
def test_rules_that_break_the_declared_format_name_the_json_path(change, expected):
    assert expected in message(edited(change))


def test_a_rule_naming_values_needs_the_columns_domain_declared():
    def change(d):
        d["columns"][3]["categories"] = None

    assert 'column "status" has no declared categories' in message(edited(change))


def dated(d):
    d["columns"][4] = {"name": "start", "type": "date", "min": "2020-01-01", "max": "2020-12-31"}
    d["columns"][5] = {"name": "end", "type": "date", "min": "2020-01-01", "max": "2020-12-31"}


def test_dates_may_meet_in_an_inequality_only():
    """Two date columns of one resolution: an inequality on their time axis; a date in a
    condition, or against a number, is refused."""
    assert Schema.from_dict(edited(dated)).rules[2] == Inequality("start", "<=", "end")

    def in_condition(d):
        dated(d)
        d["rules"][1]["when"][0]["column"] = "start"

    assert 'column "start" is a date; a date or datetime column may appear only in an ' in (
        message(edited(in_condition))
    )

    def against_number(d):
        dated(d)
        d["rules"][2]["right"] = "age"

    assert "must be two date columns with the same resolution" in message(edited(against_number))
