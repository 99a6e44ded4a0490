"""Checking a table's records on Spark with Spark SQL expressions, in one pass (issue 23.1).

``validate_table`` checks each value in a Python loop; run on Spark's Python workers it made
every record cross to Python and back (1,152 of the measure stage's 1,277 s at 10^7 rows).
Here each rule of ``validate_table`` is a Spark SQL expression: one pass types the values,
flags each column's violations and persists the typed records, and one aggregation counts the
flags. Only when a count is not zero do two small queries find the first offending row (its
position in the table's order) and its value, and the driver runs ``validate_table``'s own
check on that one value: the error names the same column, row and value as in memory.

Covered: numeric columns read as Spark numbers or as text, categorical columns read as text
or whole numbers, a privacy unit read as text or whole numbers. :func:`covers` says whether a
table is; the others (dates, booleans, decimals, fractions declared categorical) keep the
Python path of :mod:`dpforge.engines.spark_table`, as does a table where a value flagged here
turns out valid in Python (a number spelled ``1_000``, or in non-ASCII digits).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import pandas as pd

from dpforge.data.tables import MISSING_TOKENS, bounds_error, validate_table
from dpforge.errors import DataError, private
from dpforge.privacy.person import UNIT_MISSING_TOKENS, unit_keys

ROW = "__dpforge_row__"
UNIT = "__dpforge_unit__"
# The characters Python's str.strip() removes (str.isspace).
SPACES = (
    "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004"
    "\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)
# Numbers that Python's float() and Spark's cast read alike (after stripping).
PLAIN_NUMBER = "^[+-]?([0-9]+[.]?[0-9]*|[.][0-9]+)([eE][+-]?[0-9]+)?$"
INTEGRAL = ("byte", "short", "int", "bigint", "long")
FLOATING = ("float", "double")


class PythonValue(Exception):
    """A value flagged by the expressions that Python's checks accept: use the Python path."""


@dataclass(frozen=True)
class Rules:
    """One column's expressions: its typed value, and its flags (in ``validate_table``'s
    order: the value's own checks, then the bounds)."""

    name: str  # the typed column's
    raw: str  # the column it reads
    value: Any
    bad: Any  # refused by the value's own checks (or to be decided in Python)
    outside: Any | None = None  # outside the declared bounds


def covers(frame: Any, schema: Any, unit: str | None) -> bool:
    """Whether every checked column has a type these expressions check as Python does."""
    kinds = {f.name: f.dataType.simpleString() for f in frame.schema.fields}
    for c in schema.columns:
        if c.is_identifier or c.name not in kinds:
            continue
        kind = kinds[c.name]
        if c.is_time or (c.is_numeric and c.categories is not None):
            return False
        allowed = ("string", *INTEGRAL, *FLOATING) if c.is_numeric else ("string", *INTEGRAL)
        if kind not in allowed:
            return False
    return unit is None or kinds.get(unit) in ("string", *INTEGRAL)


def typed_names(schema: Any, unit: str | None) -> list[str]:
    """The typed records' columns: the schema's checked ones, then the unit's keys."""
    names = [c.name for c in schema.columns if not c.is_identifier]
    return names + ([UNIT] if unit is not None else [])


def col(name: str) -> Any:
    """A Spark column by its exact name (dots, spaces and backticks quoted)."""
    from pyspark.sql import functions as F

    return F.col("`" + name.replace("`", "``") + "`")


def stripped(raw: Any) -> Any:
    """``str(raw).strip()`` of a text column."""
    from pyspark.sql import functions as F

    return F.btrim(raw, F.lit(SPACES))


def _numeric(c: Any, raw: Any, kind: str, out_of_bounds: str) -> Rules:
    from pyspark.sql import functions as F

    if kind == "string":
        text = stripped(raw)
        missing = raw.isNull() | F.lower(text).isin(sorted(MISSING_TOKENS))
        plain = text.rlike(PLAIN_NUMBER)
        number = F.when(plain, text.try_cast("double"))
        unreadable = ~missing & ~plain
    else:
        number = raw.cast("double")
        missing = raw.isNull() | (F.isnan(number) if kind in FLOATING else F.lit(False))
        unreadable = F.lit(False)
    value = F.when(missing, F.lit(float("nan"))).otherwise(number)
    wrong = F.abs(number) == float("inf")
    if c.type == "integer":
        wrong = wrong | (number % 1 != 0)
    bad = (
        (missing & F.lit(not c.nullable))
        | unreadable
        | (~missing & F.coalesce(wrong, F.lit(False)))
    )
    outside = None
    if out_of_bounds == "error" and c.is_complete:
        outside = ~missing & ((number < c.lower) | (number > c.upper))
    return Rules(c.name, c.name, value, bad, outside)


def _categorical(c: Any, raw: Any, kind: str) -> Rules:
    from pyspark.sql import functions as F

    text = stripped(raw) if kind == "string" else raw.cast("string")
    missing = raw.isNull()
    if kind == "string":
        token = F.lower(text).isin(sorted(MISSING_TOKENS))
        missing = missing | (token & ~text.isin(list(c.categories or ())))
    bad = missing & F.lit(not c.nullable)
    if c.categories is not None and c.other is not None:
        text = F.when(text.isin(list(c.categories)), text).otherwise(F.lit(c.other))
    elif c.categories is not None:
        bad = bad | (~missing & ~text.isin(list(c.categories)))
    typed = F.when(missing, F.lit(None).cast("string")).otherwise(text)
    return Rules(c.name, c.name, typed, bad)


def _unit(name: str, kind: str) -> Rules:
    from pyspark.sql import functions as F

    raw = col(name)
    text = F.coalesce(stripped(raw) if kind == "string" else raw.cast("string"), F.lit(""))
    return Rules(UNIT, name, text, F.lower(text).isin(sorted(UNIT_MISSING_TOKENS)))


def rules(frame: Any, schema: Any, out_of_bounds: str, unit: str | None) -> list[Rules]:
    """Every checked column's expressions, in the schema's order (the unit's last)."""
    kinds = {f.name: f.dataType.simpleString() for f in frame.schema.fields}
    out = []
    for c in schema.columns:
        if c.is_identifier:
            continue
        raw = col(c.name)
        if c.is_numeric:
            out.append(_numeric(c, raw, kinds[c.name], out_of_bounds))
        else:
            out.append(_categorical(c, raw, kinds[c.name]))
    if unit is not None:
        out.append(_unit(unit, kinds[unit]))
    return out


def checked(frame: Any, schema: Any, out_of_bounds: str, unit: str | None) -> tuple[Any, int]:
    """The typed records (persisted; numbers as doubles, text as strings, the unit's keys as
    ``UNIT``) and their number; a refused record raises ``validate_table``'s error, a value
    only Python reads raises :class:`PythonValue` (nothing stays persisted then)."""
    from pyspark.sql import functions as F

    found = rules(frame, schema, out_of_bounds, unit)
    source = frame.withColumn(ROW, F.monotonically_increasing_id())
    flags = []
    for i, r in enumerate(found):
        flags.append(r.bad.alias(f"b{i}"))
        if r.outside is not None:
            flags.append(r.outside.alias(f"o{i}"))
    typed = source.select(*[r.value.alias(r.name) for r in found], *flags, col(ROW)).persist()
    try:
        size = _summary(typed, source, schema, found)
    except (DataError, PythonValue):
        typed.unpersist()
        raise
    return typed, size


def _summary(typed: Any, source: Any, schema: Any, found: list[Rules]) -> int:
    """One aggregation: the records, each flag's count, the label's extremes; the first
    refusal in ``validate_table``'s order is raised."""
    from pyspark.sql import functions as F

    flags = [n for n in typed.columns if n[0] in "bo" and n[1:].isdigit()]
    parts = [F.count(F.lit(1)).alias("n")]
    parts += [F.count(F.when(F.col(f), 1)).alias(f) for f in flags]
    if schema.label is not None:
        parts += [F.min(col(schema.label)).alias("low"), F.max(col(schema.label)).alias("high")]
    summary = typed.agg(*parts).collect()[0].asDict()
    for i, r in enumerate(found):
        if summary.get(f"b{i}"):
            _raise_value(typed, source, schema, r, f"b{i}")
        if summary.get(f"o{i}"):
            _raise_bounds(typed, schema, r, f"o{i}", int(summary[f"o{i}"]))
    if not summary["n"]:
        raise DataError("the data have no rows")
    if schema.label is not None and summary["low"] == summary["high"]:
        raise DataError(
            f"label column '{schema.label}' holds a single class ({private(summary['low'], 'r')}) "
            "in all rows; a conditional model needs at least two classes: choose "
            "another target ([data] target) or none"
        )
    return int(summary["n"])


def _first(typed: Any, flag: str) -> tuple[int, int]:
    """The first flagged row: its id and its 1-based position in the table's order (two
    small queries, run only on a refusal)."""
    from pyspark.sql import functions as F

    first = typed.filter(F.col(flag)).agg(F.min(ROW)).collect()[0][0]
    return first, typed.filter(F.col(ROW) < first).count() + 1


def _raise_bounds(typed: Any, schema: Any, rule: Rules, flag: str, outside: int) -> None:
    """The first value outside its bounds, refused as ``validate_table`` refuses it."""
    from pyspark.sql import functions as F

    first, row = _first(typed, flag)
    value = typed.filter(F.col(ROW) == first).select(col(rule.name)).collect()[0][0]
    column = next(c for c in schema.columns if c.name == rule.name)
    raise bounds_error(column, row, float(value), outside)


def _raise_value(typed: Any, source: Any, schema: Any, rule: Rules, flag: str) -> None:
    """Run the in-process check on the first flagged value and raise its error at that
    row; :class:`PythonValue` when that check accepts it."""
    from pyspark.sql import functions as F

    first, row = _first(typed, flag)
    raw = source.filter(F.col(ROW) == first).select(col(rule.raw)).collect()[0][0]
    if raw is None and dict(source.dtypes)[rule.raw] != "string":
        raw = float("nan")  # a missing number, as pandas holds it
    values = pd.Series([raw], dtype=object)
    try:
        if rule.name == UNIT:
            unit_keys(values, rule.raw)
        else:
            column = next(c for c in schema.columns if c.name == rule.name)
            one = replace(schema, columns=(column,), label=None, label_prior="uniform")
            validate_table(pd.DataFrame({rule.raw: values}), one, out_of_bounds="clip")
    except DataError as exc:
        message = str(exc).replace(f", row {private(1)}: ", f", row {private(row)}: ", 1)
        raise DataError(message) from None
    raise PythonValue(rule.name)
