"""Public rules between columns, declared in a table schema's ``rules`` list.

Three kinds (all public knowledge, like the rest of a schema: a code book, a form's logic):

- ``depends``: a functional dependency. ``{"kind": "depends", "determinant": "education",
  "dependent": "education-num", "map": {"Bachelors": 13, ...}}``: the dependent's value is the
  map's value for the determinant's category. The dependent is then not modelled at all: it
  is set from the determinant when rows are decoded.
- ``forbid``: a forbidden combination, a conjunction of conditions on single columns.
  ``{"kind": "forbid", "when": [{"column": "age", "op": "<", "value": 16},
  {"column": "marital-status", "op": "==", "value": "Married-civ-spouse"}]}``. Operators:
  ``== != < <= > >=`` (numbers, and ``== !=`` for categories) and ``in`` / ``not in`` with a
  list. An empty cell of a nullable column satisfies no condition.
- ``inequality``: ``{"kind": "inequality", "left": "admission", "op": "<=", "right":
  "discharge"}`` between two columns with an ordered numeric encoding (``ORDERED_TYPES``);
  ``<`` only between integer columns. An empty cell satisfies it.

This module parses the rules and checks them against the columns (:func:`check_rules`); what
sampling and fitting do with them is in :mod:`dpforge.data.rules` and
:mod:`dpforge.statistics.rule_penalty`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from numbers import Real
from typing import TYPE_CHECKING, Any

from dpforge.errors import SchemaError
from dpforge.schema.validation import quote

if TYPE_CHECKING:
    pass

RULE_KINDS = ("depends", "forbid", "inequality")
ORDER_OPS = ("<", "<=", ">", ">=")
CONDITION_OPS = ("==", "!=", *ORDER_OPS, "in", "not in")
INEQUALITY_OPS = ("<=", "<")
# Column types whose values are ordered numbers (an inequality may join two of them); dates and
# datetimes are compared, swapped and moved on their time axis (days or seconds since 1970).
ORDERED_TYPES = ("continuous", "integer", "date", "datetime")


@dataclass(frozen=True)
class Condition:
    """``column op value``: one conjunct of a forbidden combination."""

    column: str
    op: str
    value: Any  # a number or text; a tuple of them for "in" / "not in"

    def to_dict(self) -> dict[str, Any]:
        value = list(self.value) if isinstance(self.value, tuple) else self.value
        return {"column": self.column, "op": self.op, "value": value}

    @property
    def shown(self) -> str:
        return f"{self.column} {self.op} {quote(self.to_dict()['value'])}"


@dataclass(frozen=True)
class Depends:
    """The dependent's value is ``map[determinant's category]`` (a functional dependency)."""

    determinant: str
    dependent: str
    map: tuple[tuple[str, Any], ...]  # (category, value) pairs, in the declared order

    kind = "depends"

    @property
    def columns(self) -> tuple[str, ...]:
        return (self.determinant, self.dependent)

    @property
    def mapping(self) -> dict[str, Any]:
        return dict(self.map)

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "determinant": self.determinant,
            "dependent": self.dependent,
            "map": self.mapping,
        }


@dataclass(frozen=True)
class Forbid:
    """No row may satisfy every condition of ``when`` at once."""

    when: tuple[Condition, ...]

    kind = "forbid"

    @property
    def columns(self) -> tuple[str, ...]:
        return tuple(c.column for c in self.when)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "when": [c.to_dict() for c in self.when]}

    @property
    def shown(self) -> str:
        return "forbid " + " and ".join(c.shown for c in self.when)


@dataclass(frozen=True)
class Inequality:
    """``left <= right`` (or ``<``) in every row where both are present."""

    left: str
    op: str
    right: str

    kind = "inequality"

    @property
    def columns(self) -> tuple[str, ...]:
        return (self.left, self.right)

    @property
    def gap(self) -> int:
        """The least difference right - left: 1 for ``<`` (integer columns), else 0."""
        return 1 if self.op == "<" else 0

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "left": self.left, "op": self.op, "right": self.right}

    @property
    def shown(self) -> str:
        return f"{self.left} {self.op} {self.right}"


Rule = Depends | Forbid | Inequality


# -- JSON ------------------------------------------------------------------------------------------
def rules_from_json(items: Any) -> tuple[Rule, ...]:
    """Rules from a checked schema document's ``rules`` list (its shape is checked by the
    declared format, :mod:`dpforge.schema.formats`)."""
    if items is None:
        return ()
    if not isinstance(items, list):
        raise SchemaError(f"rules must be a list of rule objects, got {quote(items)}")
    return tuple(_rule_from_json(i, item) for i, item in enumerate(items))


def _rule_from_json(index: int, item: Any) -> Rule:
    where = f"rule {index + 1}"
    if not isinstance(item, dict) or item.get("kind") not in RULE_KINDS:
        raise SchemaError(f"{where}: a rule is an object whose 'kind' is one of {RULE_KINDS}")
    kind = item["kind"]
    if kind == "depends":
        mapping = item.get("map")
        if not isinstance(mapping, dict) or not mapping:
            raise SchemaError(f"{where}: 'map' must be a non-empty object category -> value")
        return Depends(str(item.get("determinant")), str(item.get("dependent")),
                       tuple((str(k), v) for k, v in mapping.items()))  # fmt: skip
    if kind == "inequality":
        return Inequality(str(item.get("left")), str(item.get("op")), str(item.get("right")))
    when = item.get("when")
    if not isinstance(when, list) or not when:
        raise SchemaError(f"{where}: 'when' must be a non-empty list of conditions")
    return Forbid(tuple(_condition_from_json(where, c) for c in when))


def _condition_from_json(where: str, item: Any) -> Condition:
    if not isinstance(item, dict) or "column" not in item or "op" not in item:
        raise SchemaError(f"{where}: a condition is an object with 'column', 'op' and 'value'")
    value = item.get("value")
    if isinstance(value, list):
        value = tuple(value)
    return Condition(str(item["column"]), str(item["op"]), value)


def rules_to_json(rules: tuple[Rule, ...]) -> list[dict[str, Any]]:
    return [r.to_dict() for r in rules]


# -- queries ---------------------------------------------------------------------------------------
def dependents(rules: tuple[Rule, ...]) -> tuple[str, ...]:
    """The columns that a ``depends`` rule sets (never modelled: decoded from the map)."""
    return tuple(r.dependent for r in rules if isinstance(r, Depends))


def is_number(value: Any) -> bool:
    return isinstance(value, Real) and not isinstance(value, bool) and math.isfinite(value)
