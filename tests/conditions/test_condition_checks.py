"""Conditions checked against the public schema, and read from ``--condition`` texts: every
bad condition is refused with a message that names the column, the value and the fix; no
model is needed (the checks read the schema only)."""

from __future__ import annotations

import datetime

import numpy as np
import pytest

from condition_tables import SCHEMA
from dpforge.conditions import conditions_from_texts, resolve_conditions
from dpforge.errors import DataError
from dpforge.schema.array import ArraySchema, Channel

IMAGES = ArraySchema("image", (1, 8, 8), (Channel("px", 0.0, 1.0),), "digit", ("0", "1", "2"))


def test_a_single_class_of_the_label_goes_to_the_generator_the_rest_to_rejection():
    resolved = resolve_conditions(
        SCHEMA, {"y": "yes", "sex": ["F"], "age": (30, None), "visit": ("2020-03-01", None)}
    )
    assert resolved.label == {"y": "yes"}
    assert [c.column.name for c in resolved.rows] == ["sex", "age", "visit"]
    sex, age, visit = resolved.rows
    assert sex.values == ("F",) and (age.lower, age.upper) == (30.0, None)
    assert visit.lower == 18322.0  # 2020-03-01 on the date axis (days since 1970)
    assert resolved.shown == "y=yes, sex=F, age=30.., visit=2020-03-01.."
    several = resolve_conditions(SCHEMA, {"y": ["no", "yes"]})
    assert several.label == {} and several.rows[0].values == ("no", "yes")
    unique = resolve_conditions(SCHEMA, {"region": np.array(["S", "N"]), "y": np.array(["no"])})
    assert unique.label == {"y": "no"} and unique.rows[0].values == ("S", "N")
    assert unique.shown == "y=no, region=S,N"


def test_dates_may_be_given_as_dates():
    text = resolve_conditions(SCHEMA, {"visit": ("2020-03-01", "2020-03-31")}).rows[0]
    dates = resolve_conditions(
        SCHEMA, {"visit": (datetime.date(2020, 3, 1), datetime.date(2020, 3, 31))}
    ).rows[0]
    assert (text.lower, text.upper) == (dates.lower, dates.upper) == (18322.0, 18352.0)


@pytest.mark.parametrize(
    "conditions, message",
    [
        ({"sx": "F"}, r"condition on 'sx': the model has no such column \(did you mean 'sex'\?\)"),
        ({"id": "r1"}, r"'id': an identifier column \(type 'surrogate'\) is never modelled"),
        ({"sex": "X"}, r"'sex': 'X' is not one of its categories; choose from \['F', 'M'\]"),
        ({"y": "maybe"}, r"y='maybe': not a class of 'y'; choose one of \['no', 'yes'\]"),
        ({"region": ["N", "Q"]}, r"'region': 'Q' is not one of its categories"),
        ({"region": []}, r"an empty list of values holds for no row"),
        ({"region": ("N", "S")}, r"a range \('N', 'S'\) is for numeric and date columns"),
        (
            {"age": (40, 30)},
            r"age=40..30: the range is reversed .* write it lower end first, "
            r"age=30..40",
        ),
        ({"age": (10, 40)}, r"age=10..40: 10 is outside the bounds of 'age', 18 to 90; .*age=18.."),
        ({"age": (None, None)}, r"\(None, None\) is not a range; write \(lower, upper\)"),
        ({"age": (1, 2, 3)}, r"is not a range"),
        ({"age": "30"}, r"'30' is not a number; 'age' is integer"),
        ({"age": True}, r"True is not a number"),
        ({"income": float("nan")}, r"nan is not a number"),
        ({"age": 30.5}, r"age=30.5: 'age' holds whole numbers only"),
        (
            {"visit": ("2019-12-01", None)},
            r"'2019-12-01' is outside the bounds of 'visit', "
            r"2020-01-01 to 2020-12-31",
        ),
        ({"visit": "03/01/2020"}, r"'03/01/2020' is not a date in the format '%Y-%m-%d'"),
        ({"visit": 18322}, r"18322 is not a date; write it in the column's format"),
        (["sex"], r"conditions must be a mapping"),
    ],
)
def test_bad_conditions_are_refused_with_the_fix(conditions, message):
    with pytest.raises(DataError, match=message):
        resolve_conditions(SCHEMA, conditions)


def test_images_and_series_condition_on_one_class_of_the_label_only():
    assert resolve_conditions(IMAGES, {"digit": 1}).label == {"digit": "1"}
    with pytest.raises(
        DataError,
        match=r"a condition on 'px': an image or series model .* "
        r"label 'digit' only; give one of \['0', '1', '2'\]",
    ):
        resolve_conditions(IMAGES, {"px": (0.0, 0.5)})
    with pytest.raises(DataError, match="a list or a range of classes: an image or series"):
        resolve_conditions(IMAGES, {"digit": ["1", "2"]})
    with pytest.raises(DataError, match="not a class of 'digit'"):
        resolve_conditions(IMAGES, {"digit": "7"})


def test_command_line_texts_read_by_the_column_type():
    read = conditions_from_texts(
        SCHEMA,
        ["sex=F", "region = N,S", "age=30..", "income=..5e4", "visit=2020-03-01..2020-03-31"],
    )
    assert read == {
        "sex": "F",
        "region": ["N", "S"],
        "age": (30, None),
        "income": (None, 50_000.0),
        "visit": ("2020-03-01", "2020-03-31"),
    }
    assert conditions_from_texts(SCHEMA, ["age=30,31", "y=yes"]) == {"age": [30, 31], "y": "yes"}


@pytest.mark.parametrize(
    "items, message",
    [
        (["age"], r"--condition 'age': write it as COLUMN=value, COLUMN=a,b .* COLUMN=lo..hi"),
        (["=F"], r"write it as COLUMN=value"),
        (["age=abc"], r"--condition age=abc: 'abc' is not a number; 'age' is integer"),
        (["age=30..x"], r"'x' is not a number"),
        (["age=3", "age=4"], r"--condition age: given twice"),
    ],
)
def test_bad_command_line_texts_are_refused(items, message):
    with pytest.raises(DataError, match=message):
        conditions_from_texts(SCHEMA, items)
