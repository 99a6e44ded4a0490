"""Property-based tests of the ``--condition`` parser (:mod:`dpforge.conditions.text`).

Every condition a user can give in Python reads back the same from the text the command line
writes for it (and messages show); any text at all either reads as a condition that the schema
accepts or is refused with a :class:`DataError`, never another exception."""

from __future__ import annotations

import datetime

from hypothesis import given
from hypothesis import strategies as st
from property_support import assert_clean_error

from condition_tables import SCHEMA
from dpforge.conditions import conditions_from_texts, resolve_conditions, shown_condition

COLUMNS = {c.name: c for c in SCHEMA.columns}


def _ranges(points: st.SearchStrategy) -> st.SearchStrategy:
    """(lower, upper) with lower <= upper, either end possibly open (not both)."""
    ends = st.tuples(points, points).map(sorted)
    return ends.flatmap(lambda e: st.sampled_from([(e[0], e[1]), (e[0], None), (None, e[1])]))


def _values(points: st.SearchStrategy) -> st.SearchStrategy:
    return st.one_of(points, st.lists(points, min_size=1, max_size=4), _ranges(points))


DAYS = st.dates(datetime.date(2020, 1, 1), datetime.date(2020, 12, 31))
CONDITIONS = st.one_of(
    st.tuples(st.just("sex"), st.sampled_from(["F", "M"])),
    st.tuples(
        st.just("region"),
        st.one_of(
            st.sampled_from("NSEW"), st.lists(st.sampled_from("NSEW"), min_size=1, unique=True)
        ),
    ),
    st.tuples(st.just("y"), st.lists(st.sampled_from(["no", "yes"]), min_size=1, unique=True)),
    st.tuples(st.just("age"), _values(st.integers(18, 90))),
    st.tuples(st.just("income"), _values(st.floats(0.0, 200_000.0))),
    st.tuples(st.just("visit"), _values(DAYS)),
    st.tuples(st.just("visit"), _values(DAYS.map(datetime.date.isoformat))),
)


@given(CONDITIONS)
def test_a_condition_reads_back_from_its_text(condition):
    name, value = condition
    text = shown_condition(COLUMNS[name], value)
    read = conditions_from_texts(SCHEMA, [text])
    direct, parsed = resolve_conditions(SCHEMA, {name: value}), resolve_conditions(SCHEMA, read)
    assert parsed.label == direct.label
    for a, b in zip(parsed.rows, direct.rows, strict=True):
        assert (a.values, a.lower, a.upper) == (b.values, b.lower, b.upper)
    assert parsed.shown == direct.shown


@given(st.sampled_from(sorted(COLUMNS)), st.text(max_size=20))
def test_any_text_reads_as_a_condition_or_is_refused_clearly(name, text):
    try:
        resolve_conditions(SCHEMA, conditions_from_texts(SCHEMA, [f"{name}={text}"]))
    except Exception as exc:  # a clean DataError, never another exception
        assert_clean_error(exc)
