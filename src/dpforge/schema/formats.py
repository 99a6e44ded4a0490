"""The declared formats of dpforge's schema files, as JSON Schema (draft 2020-12) documents.

These are the single statement of what a schema file may hold: every key, its JSON type and its
allowed values; anything else (a misspelt key such as ``"lable"``, bounds on a categorical
column, categories on a numeric one, a boolean where a number belongs, an unknown format
version) is refused by :func:`dpforge.schema.validation.check_document` with a message naming
the key. Rules between values (lower < upper, the prior's classes are the label's, the label is
a column) are checked afterwards by the schema classes.

``python -c "import json, dpforge.schema.formats as f; print(json.dumps(f.TABLE_FORMAT))"``
prints a format for editors that validate JSON files against a JSON Schema.
"""

from __future__ import annotations

from typing import Any

SCHEMA_VERSION = 1
COLUMN_TYPES = ("continuous", "integer", "categorical", "date", "datetime", "drop", "surrogate")
# Columns whose values are whole numbers on their axis (a date is a whole number of days).
WHOLE_TYPES = ("integer", "date")
# Identifier columns (record numbers, names, free text): never read into a model. "drop" leaves
# them out of the samples, "surrogate" fills them with fresh random keys.
IDENTIFIER_TYPES = ("drop", "surrogate")
ARRAY_KINDS = ("image", "timeseries")
# Bounds beyond this are refused: they overflow the float64 arithmetic of the encoders.
LARGEST = 1e300
MAX_SIZE = 1_000_000  # an image side or series length beyond this is not a schema we can train

_BOUND = {
    "type": ["number", "null"],
    "minimum": -LARGEST,
    "maximum": LARGEST,
    "description": f"a number between -{LARGEST:g} and {LARGEST:g} (public knowledge), or null "
    "(estimated under DP during fit)",
}
_NAME = {"type": "string", "minLength": 1, "description": "a non-empty text"}
_VALUES = {
    "type": ["array", "null"],
    "items": {"type": ["string", "integer"], "description": "a text or a whole number"},
    "minItems": 1,
    "uniqueItems": True,
    "description": "a list of texts (the public values), or null (estimated under DP)",
}
_NULLABLE = {
    "type": "boolean",
    "description": "true when the column may hold empty cells (missing is then a cell of its own)",
}
_RESOLUTION = {
    "type": ["number", "null"],
    "exclusiveMinimum": 0,
    "maximum": LARGEST,
    "description": "a positive number (public): samples are multiples of it from the lower bound",
}
_TEXT_OR_NULL = {
    "type": ["string", "null"],
    "description": "strftime text such as '%Y-%m-%d' (null: the type's ISO format)",
}
_TIME_BOUND = {
    "type": ["string", "null"],
    "description": "a date written in the column's format (public knowledge), or null "
    "(estimated under DP during fit)",
}
_TIME_RESOLUTION = {
    "type": ["string", "integer", "null"],
    "description": "text such as '1D', '7D', '1h', '15min', '1s', or a whole number of seconds",
}
_PARTS = {
    "type": "array",
    "items": {"enum": ["weekday", "month", "hour"]},
    "uniqueItems": True,
    "description": "a list of parts to model with the date: 'weekday', 'month', 'hour'",
}
_VERSION = {
    "const": SCHEMA_VERSION,
    "description": f"{SCHEMA_VERSION} (the schema format this dpforge reads; a newer file "
    "needs a newer dpforge)",
}
_LABEL = {"type": ["string", "null"], "description": "a column name (text), or null for none"}
_PRIOR = {
    "type": ["string", "object"],
    "description": "'uniform', 'dp', or an object giving each class a probability",
    "if": {"type": "string"},
    "then": {"enum": ["uniform", "dp"]},
    "else": {
        "minProperties": 1,
        "additionalProperties": {
            "type": "number",
            "minimum": 0,
            "maximum": 1,
            "description": "a probability between 0 and 1",
        },
    },
}
_REVIEW = {
    "type": "array",
    "items": {"type": "string"},
    "description": "a list of texts (the review note of a draft)",
}

_RULE_VALUE = {
    "type": ["string", "number", "array"],
    "items": {"type": ["string", "number"]},
    "minItems": 1,
    "description": "a category (text), a number, or a non-empty list of them (for in / not in)",
}
_COLUMN_REF = {"type": "string", "minLength": 1, "description": "a column name (text)"}
RULE_DEFS: dict[str, Any] = {
    "rule": {
        "title": "a rule",
        "type": "object",
        "description": "an object with a 'kind' (depends, forbid or inequality)",
        "required": ["kind"],
        "properties": {"kind": {"enum": ["depends", "forbid", "inequality"]}},
        "allOf": [
            {"if": {"properties": {"kind": {"const": kind}}}, "then": {"$ref": f"#/$defs/{kind}"}}
            for kind in ("depends", "forbid", "inequality")
        ],
    },
    "depends": {
        "title": "a dependency rule",
        "required": ["determinant", "dependent", "map"],
        "additionalProperties": False,
        "properties": {
            "kind": True,
            "determinant": _COLUMN_REF,
            "dependent": _COLUMN_REF,
            "map": {
                "type": "object",
                "minProperties": 1,
                "additionalProperties": {
                    "type": ["string", "number"],
                    "description": "the dependent's value (a category or a number)",
                },
                "description": "an object: each category of the determinant -> the dependent's "
                "value",
            },
        },
    },
    "forbid": {
        "title": "a forbidden combination",
        "required": ["when"],
        "additionalProperties": False,
        "properties": {
            "kind": True,
            "when": {
                "type": "array",
                "minItems": 1,
                "items": {"$ref": "#/$defs/condition"},
                "description": "a non-empty list of conditions, all true in a forbidden row",
            },
        },
    },
    "condition": {
        "title": "a condition",
        "type": "object",
        "description": "an object with 'column', 'op' and 'value'",
        "required": ["column", "op", "value"],
        "additionalProperties": False,
        "properties": {
            "column": _COLUMN_REF,
            "op": {"enum": ["==", "!=", "<", "<=", ">", ">=", "in", "not in"]},
            "value": _RULE_VALUE,
        },
    },
    "inequality": {
        "title": "an inequality rule",
        "required": ["left", "op", "right"],
        "additionalProperties": False,
        "properties": {
            "kind": True,
            "left": _COLUMN_REF,
            "op": {"enum": ["<=", "<"]},
            "right": _COLUMN_REF,
        },
    },
}

TABLE_FORMAT: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "a table schema",
    "type": "object",
    "description": "a JSON object with a 'columns' list",
    "required": ["columns"],
    "additionalProperties": False,
    "properties": {
        "version": _VERSION,
        "type": {"enum": ["table", *ARRAY_KINDS]},
        "label": _LABEL,
        "label_prior": _PRIOR,
        "columns": {
            "type": "array",
            "minItems": 1,
            "items": {"$ref": "#/$defs/column"},
            "description": "a non-empty list of column objects",
        },
        "review": _REVIEW,
        "rules": {
            "type": "array",
            "items": {"$ref": "#/$defs/rule"},
            "description": "a list of rule objects (kind depends, forbid or inequality)",
        },
    },
    "$defs": {
        **RULE_DEFS,
        "column": {
            "title": "a column",
            "type": "object",
            "description": "an object with 'name' and 'type'",
            "required": ["name", "type"],
            "properties": {
                "name": _NAME,
                "type": {"enum": list(COLUMN_TYPES)},
            },
            "allOf": [
                {
                    "if": {"properties": {"type": {"const": "categorical"}}},
                    "then": {"$ref": "#/$defs/categorical"},
                },
                {
                    "if": {"properties": {"type": {"enum": ["continuous", "integer"]}}},
                    "then": {"$ref": "#/$defs/numeric"},
                },
                {
                    "if": {"properties": {"type": {"enum": ["date", "datetime"]}}},
                    "then": {"$ref": "#/$defs/time"},
                },
                {
                    "if": {"properties": {"type": {"enum": list(IDENTIFIER_TYPES)}}},
                    "then": {"$ref": "#/$defs/identifier"},
                },
            ],
        },
        "categorical": {
            "title": "a categorical column",
            "additionalProperties": False,
            "x-keys-elsewhere": ["lower", "upper", "resolution"],  # numeric columns' keys
            "properties": {
                "name": True,
                "type": True,
                "categories": _VALUES,
                "nullable": _NULLABLE,
                "other": {
                    "type": ["string", "integer", "null"],
                    "minLength": 1,
                    "description": "a text: the category that values outside the list pool "
                    "into (one of the categories, or added to those released under DP)",
                },
            },
        },
        "numeric": {
            "title": "a continuous or integer column",
            "additionalProperties": False,
            "properties": {
                "name": True,
                "type": True,
                "lower": _BOUND,
                "upper": _BOUND,
                "nullable": _NULLABLE,
                "resolution": _RESOLUTION,
            },
        },
        "time": {
            "title": "a date or datetime column",
            "additionalProperties": False,
            "properties": {
                "name": True,
                "type": True,
                "format": _TEXT_OR_NULL,
                "min": _TIME_BOUND,
                "max": _TIME_BOUND,
                "resolution": _TIME_RESOLUTION,
                "parts": _PARTS,
                "nullable": _NULLABLE,
            },
        },
        "identifier": {
            "title": "an identifier or free-text column (never read into a model)",
            "additionalProperties": False,
            "properties": {"name": True, "type": True},
        },
    },
}

ARRAY_FORMAT: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "an image or time-series schema",
    "type": "object",
    "description": "a JSON object with 'type', 'shape' and 'channels'",
    "required": ["type", "shape", "channels"],
    "additionalProperties": False,
    "properties": {
        "version": _VERSION,
        "type": {"enum": list(ARRAY_KINDS)},
        "shape": {
            "type": "array",
            "minItems": 2,
            "maxItems": 3,
            "items": {
                "type": "integer",
                "minimum": 1,
                "maximum": MAX_SIZE,
                "description": f"a whole number from 1 to {MAX_SIZE}",
            },
            "description": "a list of 3 sizes [channels, height, width] for images or 2 "
            "[channels, length] for time series",
        },
        "channels": {
            "type": "array",
            "minItems": 1,
            "items": {"$ref": "#/$defs/channel"},
            "description": "a non-empty list of channel objects",
        },
        "label": _LABEL,
        "classes": _VALUES,
        "label_prior": _PRIOR,
        "review": _REVIEW,
    },
    "$defs": {
        "channel": {
            "title": "a channel",
            "type": "object",
            "description": "an object with 'name', 'lower' and 'upper'",
            "required": ["name"],
            "additionalProperties": False,
            "properties": {"name": _NAME, "lower": _BOUND, "upper": _BOUND},
        }
    },
}


TYPE_FORMAT: dict[str, Any] = {
    "title": "a schema",
    "properties": {"type": {"enum": ["table", *ARRAY_KINDS]}},
}


def format_for(document: Any) -> dict[str, Any]:
    """The declared format a schema document claims by its ``"type"`` (table by default)."""
    kind = document.get("type", "table") if isinstance(document, dict) else "table"
    return ARRAY_FORMAT if kind in ARRAY_KINDS else TABLE_FORMAT
