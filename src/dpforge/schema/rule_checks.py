"""Checking a schema's rules against its columns: one clear error per problem.

Each message names the rule (by its position, 1 first), the column, the value and what to do.
Refused: an unknown or identifier column; a type that the rule cannot compare (an inequality on
a categorical column, text against a number); a map that misses a category of the determinant
or gives a value outside the dependent's declared domain; and rules that contradict each other
or the domain (a column set by two dependencies, a dependent used as a determinant or in an
inequality, a forbidden combination that every row matches, an inequality no value can meet,
inequalities in a cycle). A rule that names values needs the column's domain declared: values
estimated under DP are not known when the schema is read.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from dpforge.errors import SchemaError
from dpforge.schema.rule_domain import always_true
from dpforge.schema.rules import (
    CONDITION_OPS,
    INEQUALITY_OPS,
    ORDER_OPS,
    ORDERED_TYPES,
    Condition,
    Depends,
    Forbid,
    Inequality,
    Rule,
    is_number,
)
from dpforge.schema.validation import closest, quote

if TYPE_CHECKING:
    from dpforge.schema.table import Column

Lookup = Callable[[str], "Column"]


def check_rules(rules: tuple[Rule, ...], columns: Mapping[str, Column], label: str | None) -> None:
    """Refuse rules that name unknown columns, mismatch types or contradict each other."""
    if not isinstance(rules, tuple):
        raise SchemaError("a schema's rules must be a tuple of rules (Depends, Forbid, Inequality)")
    for index, rule in enumerate(rules):
        where = f"rule {index + 1} ({rule.kind})"
        lookup = _lookup(columns, where)
        if isinstance(rule, Depends):
            _check_depends(rule, lookup, label, where)
        elif isinstance(rule, Forbid):
            for condition in rule.when:
                check_condition(condition, lookup(condition.column), where)
        elif isinstance(rule, Inequality):
            _check_inequality(rule, lookup, where)
        else:
            raise SchemaError(f"{where}: not a rule object: {type(rule).__name__}")
    _check_together(rules, columns)


def _lookup(columns: Mapping[str, Column], where: str) -> Lookup:
    def column(name: str) -> Column:
        if name not in columns:
            close = closest(name, list(columns))
            hint = f" (did you mean {quote(close)}?)" if close else ""
            raise SchemaError(f"{where}: the schema has no column {quote(name)}{hint}")
        found = columns[name]
        if getattr(found, "is_time", False) and "inequality" not in where:
            raise SchemaError(
                f"{where}: column {quote(name)} is a {found.type}; a date or datetime column "
                "may appear only in an inequality (with another column of its type)"
            )
        if found.is_identifier:
            raise SchemaError(
                f"{where}: column {quote(name)} is an identifier ({found.type}): it is never "
                "modelled, so no rule can hold on it; remove it from the rule"
            )
        return found

    return column


def _check_depends(rule: Depends, lookup: Lookup, label: str | None, where: str) -> None:
    source, target = lookup(rule.determinant), lookup(rule.dependent)
    if source.name == target.name:
        raise SchemaError(f"{where}: column {quote(source.name)} cannot depend on itself")
    if target.name == label:
        raise SchemaError(
            f"{where}: the label {quote(label)} cannot be a dependent (it is the condition "
            "each row is drawn with); make the label the determinant, or choose another label"
        )
    if source.is_numeric or source.categories is None:
        raise SchemaError(
            f"{where}: the determinant {quote(source.name)} must be categorical with declared "
            "categories (the map's keys)"
        )
    if source.nullable and not target.nullable:
        raise SchemaError(
            f"{where}: the determinant {quote(source.name)} is nullable, so the dependent "
            f"{quote(target.name)} must be nullable too (an empty determinant leaves it empty)"
        )
    _check_map_keys(rule, source, where)
    for category, value in rule.map:
        check_value(target, value, f"{where}: map[{quote(category)}]")


def _check_map_keys(rule: Depends, source: Column, where: str) -> None:
    keys = [k for k, _ in rule.map]
    unknown = [k for k in keys if k not in source.categories]
    if unknown:
        close = closest(unknown[0], source.categories)
        hint = f" (did you mean {quote(close)}?)" if close else ""
        raise SchemaError(
            f"{where}: map key {quote(unknown[0])} is not a category of {quote(source.name)}{hint}"
        )
    lacking = [c for c in source.categories if c not in keys]
    if lacking:
        raise SchemaError(
            f"{where}: the map gives no value for {quote(lacking[0])} ({len(lacking)} "
            f"categor{'y' if len(lacking) == 1 else 'ies'} of {quote(source.name)} without); "
            "give every category a value"
        )


def check_value(column: Column, value: Any, where: str) -> None:
    """``value`` lies in the column's declared domain (a category, or a number in bounds)."""
    if not column.is_numeric:
        if column.categories is None:
            raise SchemaError(
                f"{where}: column {quote(column.name)} has no declared categories; a rule that "
                "names its values needs them declared"
            )
        if not isinstance(value, str) or value not in column.categories:
            close = closest(value, column.categories) if isinstance(value, str) else None
            hint = f" (did you mean {quote(close)}?)" if close else ""
            raise SchemaError(
                f"{where}: {quote(value)} is not a category of {quote(column.name)}{hint}"
            )
        return
    if not is_number(value):
        raise SchemaError(
            f"{where}: column {quote(column.name)} is {column.type}: give a number, not "
            f"{quote(value)}"
        )
    if column.type == "integer" and float(value) != int(value):
        raise SchemaError(f"{where}: column {quote(column.name)} is integer; {value} is not whole")


def _check_in_bounds(column: Column, value: float, where: str) -> None:
    """A dependent's value must lie within its declared bounds."""
    if column.lower is None or column.upper is None:
        raise SchemaError(
            f"{where}: the dependent {quote(column.name)} needs declared bounds (the map's "
            "values are checked against them)"
        )
    if not column.lower <= value <= column.upper:
        raise SchemaError(
            f"{where}: {value:g} is outside the bounds of {quote(column.name)} "
            f"[{column.lower:g}, {column.upper:g}]"
        )


def check_condition(condition: Condition, column: Column, where: str) -> None:
    """The operator suits the column's type and the value (or each value of a list) too."""
    op, value = condition.op, condition.value
    if op not in CONDITION_OPS:
        raise SchemaError(f"{where}: unknown operator {quote(op)}; use one of {CONDITION_OPS}")
    if op in ORDER_OPS and not column.is_numeric:
        raise SchemaError(
            f"{where}: {quote(op)} compares numbers, but {quote(column.name)} is categorical; "
            "use ==, !=, in or not in"
        )
    listed = op in ("in", "not in")
    if listed != isinstance(value, tuple) or (listed and not value):
        want = "a non-empty list" if listed else "one value (not a list)"
        raise SchemaError(f"{where}: {quote(op)} on {quote(column.name)} needs {want}")
    for item in value if listed else (value,):
        check_value(column, item, f"{where}: {condition.column}")


def _check_inequality(rule: Inequality, lookup: Lookup, where: str) -> None:
    if rule.op not in INEQUALITY_OPS:
        raise SchemaError(
            f"{where}: unknown operator {quote(rule.op)}; use one of {INEQUALITY_OPS} (write "
            "'a >= b' as 'b <= a')"
        )
    left, right = lookup(rule.left), lookup(rule.right)
    if left.name == right.name:
        raise SchemaError(f"{where}: compares {quote(left.name)} with itself")
    for column in (left, right):
        if column.type not in ORDERED_TYPES:
            raise SchemaError(
                f"{where}: column {quote(column.name)} is {column.type}; an inequality needs "
                f"ordered numbers ({', '.join(ORDERED_TYPES)})"
            )
    if rule.op == "<" and not (left.type == right.type == "integer"):
        raise SchemaError(f"{where}: '<' needs two integer columns; use '<=' for others")
    _check_time_pair(left, right, where)
    if None not in (left.lower, right.upper) and left.lower + rule.gap > right.upper:
        raise SchemaError(
            f"{where}: no value can meet {rule.shown}: {quote(left.name)} is at least "
            f"{left.lower:g} and {quote(right.name)} at most {right.upper:g}"
        )


def _check_time_pair(left: Column, right: Column, where: str) -> None:
    """Two date (or two datetime) columns with one resolution, or no date at all: their values
    are compared, swapped and moved on one time axis and one grid."""
    times = [getattr(c, "is_time", False) for c in (left, right)]
    if not any(times):
        return
    if left.type != right.type or left.resolution != right.resolution:
        raise SchemaError(
            f"{where}: {quote(left.name)} ({left.type}) and {quote(right.name)} "
            f"({right.type}) must be two {left.type if times[0] else right.type} columns with "
            "the same resolution"
        )


def _check_together(rules: tuple[Rule, ...], columns: Mapping[str, Column]) -> None:
    """Rules that contradict each other, or the domain."""
    sets: dict[str, int] = {}
    for index, rule in enumerate(rules):
        if isinstance(rule, Depends):
            if rule.dependent in sets:
                raise SchemaError(
                    f"rules {sets[rule.dependent] + 1} and {index + 1} both set "
                    f"{quote(rule.dependent)}; keep one dependency per dependent"
                )
            sets[rule.dependent] = index
    for index, rule in enumerate(rules):
        where = f"rule {index + 1} ({rule.kind})"
        if isinstance(rule, Depends) and rule.determinant in sets:
            raise SchemaError(
                f"{where}: {quote(rule.determinant)} is itself set by rule "
                f"{sets[rule.determinant] + 1}; state {quote(rule.dependent)} as depending on "
                "that rule's determinant instead"
            )
        if isinstance(rule, Inequality) and set(rule.columns) & set(sets):
            name = next(c for c in rule.columns if c in sets)
            raise SchemaError(
                f"{where}: {quote(name)} is set by dependency rule {sets[name] + 1}, so an "
                "inequality on it could not be repaired; state it as forbidden combinations "
                "of the determinant"
            )
        if isinstance(rule, Depends):
            for category, value in rule.map:
                _map_in_domain(columns[rule.dependent], value, where, category)
    _check_forbid_reachable(rules, columns)
    _check_cycles([r for r in rules if isinstance(r, Inequality)])


def _map_in_domain(column: Column, value: Any, where: str, category: str) -> None:
    if column.is_numeric:
        _check_in_bounds(column, float(value), f"{where}: map[{quote(category)}]")


def _check_forbid_reachable(rules: tuple[Rule, ...], columns: Mapping[str, Column]) -> None:
    """A forbidden combination that every value of the domain matches leaves no row."""
    for index, rule in enumerate(rules):
        if isinstance(rule, Forbid) and all(always_true(c, columns, rules) for c in rule.when):
            raise SchemaError(
                f"rule {index + 1} (forbid): every row matches {rule.shown} (given the declared "
                "domains and dependencies), so no row could be sampled; narrow its conditions"
            )


def _check_cycles(inequalities: list[Inequality]) -> None:
    """Inequalities in a cycle (a <= b <= a) force equality or contradict; refused."""
    edges: dict[str, list[str]] = {}
    for rule in inequalities:
        edges.setdefault(rule.left, []).append(rule.right)
    state: dict[str, int] = {}

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in edges.get(node, []):
            if state.get(nxt) == 1:
                cycle = " <= ".join([*path[path.index(nxt) :], nxt])
                raise SchemaError(
                    f"the inequality rules form a cycle ({cycle}): drop one of them (columns "
                    "that must be equal are one column)"
                )
            if nxt not in state:
                visit(nxt, [*path, nxt])
        state[node] = 2

    for start in list(edges):
        if start not in state:
            visit(start, [start])
