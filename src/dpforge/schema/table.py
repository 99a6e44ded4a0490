"""The public side of a data set: column types, bounds, categories, label and label prior.

A schema is what dpforge may use without paying privacy: everything in it must be public
knowledge (a code book, a questionnaire, a measurement range). Values that are not known in
advance are left as ``null`` and are then estimated under differential privacy during ``fit``,
charged to the same budget and recorded in the ledger (see ``dpforge.statistics.metadata``).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, replace
from numbers import Real
from pathlib import Path
from typing import Any, ClassVar

from dpforge.errors import DpforgeError, SchemaError
from dpforge.schema.dates import (
    TIME_TYPES,
    part_columns,
    time_defaults,
    time_from_dict,
    time_to_dict,
    validate_time_column,
)
from dpforge.schema.formats import (
    COLUMN_TYPES,
    IDENTIFIER_TYPES,
    LARGEST,
    SCHEMA_VERSION,
    TYPE_FORMAT,
    format_for,
)
from dpforge.schema.rule_checks import check_rules
from dpforge.schema.rules import Rule, dependents, rules_from_json, rules_to_json
from dpforge.schema.validation import check_document, closest, printable, read_json_text

REVIEW_KEY = "review"
# The largest bound of an integer column: every whole number up to 2**53 is exact in float64
# (what the generator computes in); beyond it samples lose digits, and past 2**63 they overflow.
LARGEST_INTEGER = 2**53
REVIEW_TODO = (
    "check each column's type against public knowledge (a code book) and replace every value "
    "read from the data with public knowledge or null (estimated under DP)"
)
__all__ = ["COLUMN_TYPES", "SCHEMA_VERSION", "Column", "Schema"]


def refuse_draft(schema: Any) -> None:
    """Refuse a schema (table or array) that still carries the review flags of a draft.

    A draft's column types, bounds, categories or classes were read from the private data
    without any protection; training on them would release them with no ledger entry. Every
    entry that can start a fit calls this, not only the JSON reader.
    """
    if getattr(schema, "notes", ()):
        raise SchemaError(
            f"this schema is a draft read from the private data and still carries its "
            f"'{REVIEW_KEY}' note; {REVIEW_TODO}, then remove the note (notes=())"
        )


def check_bounds(owner: str, lower: float | None, upper: float | None) -> None:
    """Bounds are numbers a schema file can hold (or None: not public), lower < upper."""
    for key, value in (("lower", lower), ("upper", upper)):
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, Real):
            raise SchemaError(
                f"{owner}: the {key} bound must be a number or None, got {type(value).__name__}"
            )
        if not math.isfinite(value) or abs(value) > LARGEST:
            raise SchemaError(
                f"{owner}: {key} bound {value} is not a number between -{LARGEST:g} and {LARGEST:g}"
            )
    if lower is not None and upper is not None and not lower < upper:
        raise SchemaError(f"{owner}: lower bound {lower} must be below upper bound {upper}")


def check_integer_bounds(owner: str, lower: float | None, upper: float | None) -> None:
    """An integer column's bounds lie within ±2**53, where every whole number is exact."""
    for key, value in (("lower", lower), ("upper", upper)):
        if value is not None and abs(value) > LARGEST_INTEGER:
            raise SchemaError(
                f"{owner} is integer: its {key} bound {value:g} is beyond the largest usable "
                f"range -{LARGEST_INTEGER} to {LARGEST_INTEGER} (2**53; whole numbers beyond "
                "it are not exact); give bounds within it, or make the column continuous"
            )


def check_prior_kind(label: str | None, prior: Any) -> None:
    """The label prior is 'uniform', 'dp' or (with a label) a mapping class -> probability."""
    if isinstance(prior, str) and prior in ("uniform", "dp"):
        return
    if isinstance(prior, dict) and label is not None:
        return
    raise SchemaError(
        "label_prior must be 'uniform', 'dp' or (for a schema with a label) a mapping class "
        f"-> probability; got {type(prior).__name__} {str(prior)[:40]!r}"
    )


def check_values(owner: str, key: str, values: Any) -> None:
    """Categories or classes: None (estimated under DP) or a tuple of distinct texts."""
    if values is None:
        return
    if not isinstance(values, tuple | list) or not all(isinstance(v, str) for v in values):
        raise SchemaError(f"{owner}: {key} must be a tuple of texts (or None)")
    if not values:
        raise SchemaError(f"{owner}: {key} is empty; give the values or None")
    if len(set(values)) != len(values):
        raise SchemaError(f"{owner}: {key} contain duplicates")


def check_declared_prior(
    label: str, classes: tuple[str, ...] | None, prior: dict[str, float]
) -> None:
    """A declared label prior gives a probability to exactly the label's classes, summing to 1."""
    if not isinstance(prior, dict) or not all(
        isinstance(p, Real) and not isinstance(p, bool) and math.isfinite(p) for p in prior.values()
    ):
        raise SchemaError("label_prior must map each class to a finite probability")
    if classes is None or set(prior) != set(classes):
        raise SchemaError(
            f"label_prior must give a probability for exactly the classes of "
            f"'{label}' ({classes}); got {sorted(prior)}"
        )
    if any(p < 0 for p in prior.values()) or not math.isclose(sum(prior.values()), 1.0):
        raise SchemaError("label_prior probabilities must be >= 0 and sum to 1")


def read_schema_json(path: str | Path) -> Any:
    """The parsed JSON of a schema file, checked against its declared format.

    Errors name the file and the key (or the line, for JSON that does not parse).
    """
    document = read_json_text(Path(path), "schema file", SchemaError)
    check_schema_document(document, f"schema file {path}")
    return document


def check_schema_document(
    document: Any,
    where: str = "schema",
    prefix: str = "$",
    error: type[DpforgeError] = SchemaError,
) -> None:
    """Refuse a schema document (table, image or time series) that breaks its declared format
    (:mod:`dpforge.schema.formats`), naming the key, the value's type and what is allowed.

    ``prefix`` and ``error`` serve a schema inside another file (a model folder's model.json).
    """
    if not isinstance(document, dict):
        found = "a list" if isinstance(document, list) else type(document).__name__
        raise error(f"{where}: {prefix} is {found}; a schema is a JSON object")
    check_document(document, TYPE_FORMAT, where, error, prefix)  # the type picks the format
    check_document(document, format_for(document), where, error, prefix)


def category_text(value: str | int) -> str:
    """A category or class as dpforge stores it: text (a whole number 3 becomes '3')."""
    return value if isinstance(value, str) else str(int(value))


def prior_from_json(prior: Any) -> str | dict[str, float]:
    """The label prior of a checked document: 'uniform', 'dp' or class -> probability."""
    if isinstance(prior, dict):
        return {str(k): float(v) for k, v in prior.items()}
    return prior


@dataclass(frozen=True)
class Column:
    """One column. ``lower``/``upper`` for numeric columns, ``categories`` for categorical ones.

    ``None`` means "not public: estimate it under DP during fit". ``nullable`` columns may hold
    empty cells: "missing" is then a cell of its own in every marginal. ``resolution`` (numeric,
    public) makes samples multiples of it from the lower bound (heaped or coded numbers). Types
    "drop" and "surrogate" are identifiers or free text: never read, never modelled. Types
    "date" and "datetime" are numbers on a time axis with a ``format`` and declared ``parts``
    (:mod:`dpforge.schema.dates`).
    """

    name: str
    type: str
    lower: float | None = None
    upper: float | None = None
    categories: tuple[str, ...] | None = None
    nullable: bool = False
    resolution: float | None = None
    format: str | None = None
    parts: tuple[str, ...] = ()
    other: str | None = None  # categorical: the value that values outside the list pool into

    def __post_init__(self) -> None:
        if self.type in TIME_TYPES:  # the ISO format and its finest unit, unless given
            fmt, step = time_defaults(self)
            object.__setattr__(self, "format", fmt)
            object.__setattr__(self, "resolution", step)
            object.__setattr__(self, "parts", tuple(self.parts))

    @property
    def shown(self) -> str:
        """The name as messages show it: unprintable characters escaped, so one line."""
        return printable(str(self.name))

    @property
    def is_numeric(self) -> bool:
        return self.type in ("continuous", "integer", *TIME_TYPES)

    @property
    def is_time(self) -> bool:
        """A date or datetime: a number on a time axis, read and written in ``format``."""
        return self.type in TIME_TYPES

    @property
    def is_identifier(self) -> bool:
        """A record number, name or free text: its values are never read into a model."""
        return self.type in IDENTIFIER_TYPES

    @property
    def is_complete(self) -> bool:
        """True when no value of this column must still be estimated from the data."""
        if self.is_identifier:
            return True
        if self.is_numeric:
            return self.lower is not None and self.upper is not None
        return self.categories is not None

    def validate(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise SchemaError(f"a column name must be a non-empty text, got {self.name!r}")
        if self.type not in COLUMN_TYPES:
            raise SchemaError(
                f"column '{self.shown}': unknown type '{self.type}'; use one of {COLUMN_TYPES}"
            )
        if not isinstance(self.nullable, bool):
            raise SchemaError(f"column '{self.shown}': nullable must be true or false")
        if self.is_identifier:
            self._validate_identifier()
        elif self.is_numeric:
            if self.categories is not None:
                raise SchemaError(
                    f"column '{self.shown}' is {self.type}: it has bounds, not categories "
                    "(make it categorical, or drop the categories)"
                )
            self._validate_bounds()
        else:
            self._validate_categories()
        if self.is_time:
            validate_time_column(self)
        elif self.format is not None or self.parts:
            raise SchemaError(
                f"column '{self.shown}' is {self.type}: only a date or datetime column has a "
                "format and parts"
            )
        if self.resolution is not None and not self.is_numeric:
            raise SchemaError(
                f"column '{self.shown}' is {self.type}: only a numeric column has a resolution"
            )
        if self.other is not None:
            self._validate_other()

    def _validate_other(self) -> None:
        """``other`` names a category of a categorical column: declared, or added to the
        categories that DP discovery releases."""
        if self.type != "categorical":
            raise SchemaError(
                f"column '{self.shown}' is {self.type}: only a categorical column has 'other'"
            )
        if not isinstance(self.other, str) or not self.other:
            raise SchemaError(f"column '{self.shown}': 'other' must be a non-empty text")
        if self.categories is not None and self.other not in self.categories:
            raise SchemaError(
                f"column '{self.shown}': 'other' is {self.other!r}, which is not one of its "
                "categories; add it to the categories (or set the categories to null)"
            )

    def _validate_identifier(self) -> None:
        """An identifier holds nothing public: no bounds, categories, resolution or nullable."""
        if (self.lower, self.upper, self.categories, self.resolution) != (None,) * 4 or (
            self.nullable
        ):
            raise SchemaError(
                f"column '{self.shown}' is {self.type} (an identifier, never read): give it "
                "only a name and a type"
            )

    def _validate_categories(self) -> None:
        if self.lower is not None or self.upper is not None:
            raise SchemaError(
                f"column '{self.shown}' is categorical: it has categories, not bounds (make it "
                "continuous or integer, or drop the bounds)"
            )
        check_values(f"column '{self.shown}'", "categories", self.categories)

    def _validate_bounds(self) -> None:
        check_bounds(f"column '{self.shown}'", self.lower, self.upper)
        if self.type == "integer":
            check_integer_bounds(f"column '{self.shown}'", self.lower, self.upper)
        res = self.resolution
        if res is not None and (
            isinstance(res, bool) or not isinstance(res, Real) or not 0 < res < LARGEST
        ):
            raise SchemaError(
                f"column '{self.shown}': resolution must be a positive number, got {res!r}"
            )

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "type": self.type}
        if self.is_identifier:
            return out
        if self.is_time:
            out = time_to_dict(self)
        elif self.is_numeric:
            out["lower"], out["upper"] = self.lower, self.upper
            if self.resolution is not None:
                out["resolution"] = self.resolution
        else:
            out["categories"] = None if self.categories is None else list(self.categories)
            if self.other is not None:
                out["other"] = self.other
        if self.nullable:
            out["nullable"] = True
        return out

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Column:
        """A column from a JSON object (one entry of a checked document's 'columns')."""
        if not isinstance(d, dict) or "name" not in d or "type" not in d:
            raise SchemaError(f"each column needs a 'name' and a 'type'; got {d!r}")
        cats = d.get("categories")
        if str(d["type"]) in TIME_TYPES:
            timed = cls(str(d["name"]), str(d["type"]), **time_from_dict(d))
            column = replace(timed, nullable=bool(d.get("nullable", False)))
            column.validate()
            return column
        column = cls(
            name=str(d["name"]),
            type=str(d["type"]),
            lower=optional_number(d, "lower"),
            upper=optional_number(d, "upper"),
            categories=None if cats is None else tuple(category_text(c) for c in cats),
            nullable=bool(d.get("nullable", False)),
            resolution=optional_number(d, "resolution"),
            other=None if d.get("other") is None else category_text(d["other"]),
        )
        column.validate()
        return column


def optional_number(d: dict[str, Any], key: str, owner: str = "column") -> float | None:
    """``d[key]`` as a float, None when absent or null; an error naming the owner otherwise."""
    value = d.get(key)
    if value is None:
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        raise SchemaError(
            f"{owner} '{d.get('name')}': {key} must be a number or null, got {value!r}"
        ) from None


@dataclass(frozen=True)
class Schema:
    """Columns of a table, the label column and the label prior.

    ``label_prior`` is ``"uniform"`` (free), ``"dp"`` (noisy class counts, charged to the
    budget) or a mapping class -> probability declared by the user (free). ``rules``: public
    rules between columns (:mod:`dpforge.schema.rules`) that every sampled row satisfies.
    """

    kind: ClassVar[str] = "table"  # the data kind, as an ArraySchema's ``kind`` names its own
    columns: tuple[Column, ...]
    label: str | None = None
    label_prior: str | dict[str, float] = "uniform"
    notes: tuple[str, ...] = field(default=())
    rules: tuple[Rule, ...] = field(default=())

    def __post_init__(self) -> None:
        self.validate()

    # -- queries ---------------------------------------------------------------------------
    @property
    def names(self) -> list[str]:
        return [c.name for c in self.columns]

    def column(self, name: str) -> Column:
        for c in self.columns:
            if c.name == name:
                return c
        close = closest(name, self.names)
        hint = f" (did you mean '{close}'?)" if close else ""
        shown = printable(str(name))
        raise SchemaError(f"the schema has no column '{shown}'{hint}; its columns are {self.names}")

    @property
    def label_column(self) -> Column | None:
        return None if self.label is None else self.column(self.label)

    @property
    def feature_columns(self) -> tuple[Column, ...]:
        """The columns the generator models: neither the label nor an identifier."""
        return tuple(c for c in self.columns if c.name != self.label and not c.is_identifier)

    @property
    def generated_columns(self) -> tuple[Column, ...]:
        """The feature columns the generator outputs: all but those a ``depends`` rule sets
        from another column (decoded from its map, never modelled)."""
        set_by_rule = dependents(self.rules)
        return tuple(c for c in self.feature_columns if c.name not in set_by_rule)

    @property
    def modelled(self) -> Schema:
        """This schema without its identifier columns (what evaluation compares)."""
        kept = tuple(c for c in self.columns if not c.is_identifier)
        return self if len(kept) == len(self.columns) else replace(self, columns=kept)

    @property
    def output_names(self) -> list[str]:
        """The columns of a sample: every column but those of type "drop"."""
        return [c.name for c in self.columns if c.type != "drop"]

    @property
    def incomplete_columns(self) -> tuple[Column, ...]:
        return tuple(c for c in self.columns if not c.is_complete)

    # -- validation ------------------------------------------------------------------------
    def validate(self) -> None:
        if not self.columns:
            raise SchemaError("the schema lists no columns")
        if not all(isinstance(c, Column) for c in self.columns):
            raise SchemaError("a schema's columns must be Column objects")
        if self.label is not None and not isinstance(self.label, str):
            raise SchemaError(f"label must be a column name or None, got {self.label!r}")
        for c in self.columns:
            c.validate()
        if all(c.is_identifier for c in self.columns):
            raise SchemaError(
                "every column is an identifier (drop or surrogate): there is nothing to model; "
                "give at least one column the type continuous, integer or categorical"
            )
        names = self.names + [p.name for c in self.columns if c.is_time for p in part_columns(c)]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise SchemaError(f"the schema names these columns twice: {duplicates}")
        check_prior_kind(self.label, self.label_prior)
        if self.label is not None:
            self._validate_label()
        check_rules(self.rules, {c.name: c for c in self.columns}, self.label)

    def _validate_label(self) -> None:
        label = self.column(self.label)
        if label.type != "categorical":
            raise SchemaError(
                f"label column '{label.shown}' must be categorical (type '{label.type}' given)"
            )
        if label.nullable:
            raise SchemaError(
                f"label column '{label.shown}' cannot be nullable: every record needs a class; "
                "choose another label, or make its empty cells a declared category"
            )
        if label.other is not None:
            raise SchemaError(
                f"label column '{label.shown}' cannot pool values into 'other': every class "
                "is a condition of the model; declare the classes, or remove 'other'"
            )
        if label.categories is not None and len(label.categories) < 2:
            raise SchemaError(
                f"label column '{label.shown}' has {len(label.categories)} class(es); a "
                "conditional model needs at least 2"
            )
        prior = self.label_prior
        if isinstance(prior, str):
            if prior not in ("uniform", "dp"):
                raise SchemaError(
                    f"label_prior must be 'uniform', 'dp' or a mapping class -> probability; "
                    f"got '{prior}'"
                )
            return
        self._validate_declared_prior(label, prior)

    def _validate_declared_prior(self, label: Column, prior: dict[str, float]) -> None:
        check_declared_prior(label.name, label.categories, prior)

    # -- JSON ------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "version": SCHEMA_VERSION,
            "type": "table",
            "label": self.label,
            "label_prior": self.label_prior,
            "columns": [c.to_dict() for c in self.columns],
        }
        if self.rules:
            out["rules"] = rules_to_json(self.rules)
        if self.notes:
            out[REVIEW_KEY] = list(self.notes)
        return out

    @classmethod
    def from_dict(cls, d: dict[str, Any], *, allow_review: bool = False) -> Schema:
        """A table schema from its JSON object, checked against the declared format first."""
        check_schema_document(d)
        if d.get("type", "table") != "table":
            raise SchemaError(f"this is a {d['type']} schema, not a table schema")
        if d.get(REVIEW_KEY) and not allow_review:
            raise SchemaError(
                f"this schema is a draft read from the private file; {REVIEW_TODO}, then "
                f"delete its '{REVIEW_KEY}' entry"
            )
        return cls(
            columns=tuple(Column.from_dict(c) for c in d["columns"]),
            label=d.get("label"),
            label_prior=prior_from_json(d.get("label_prior", "uniform")),
            notes=tuple(d.get(REVIEW_KEY) or ()),
            rules=rules_from_json(d.get("rules")),
        )

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)

    @classmethod
    def load(cls, path: str | Path) -> Schema:
        return cls.from_dict(read_schema_json(path))

    def with_columns(self, columns: tuple[Column, ...]) -> Schema:
        return replace(self, columns=columns)

    def with_label_prior(self, prior: str | dict[str, float]) -> Schema:
        return replace(self, label_prior=prior)
