"""Checking JSON documents against a declared format, with one-line messages a person can act on.

dpforge's JSON files (schema files, a model folder's ``model.json``) each have a declared format
written as a JSON Schema (:mod:`dpforge.schema.formats`); the ``jsonschema`` package checks a
document against it. Its own messages are long and generic ("Additional properties are not
allowed ..."), so :func:`check_document` turns the most relevant error into one line that names
the key as a JSON path (``$.columns[2].lower``), the value's JSON type and what is allowed, and
suggests the closest valid key or value for a typo (``"lable"`` -> ``"label"``).

Values are quoted in messages: these documents are public (a schema holds only public knowledge,
a model folder only what may be released), and no private record passes through here.

Reading is strict too (:func:`read_json_text`): a file that is not UTF-8, JSON's non-standard
``NaN`` / ``Infinity`` literals, numbers too long to parse and nesting too deep to parse are
refused with a message instead of a traceback.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import jsonschema
from jsonschema.exceptions import ValidationError, best_match

from dpforge.errors import DpforgeError

MAX_QUOTE = 40
MAX_DEPTH = 64

_TYPE_NAMES = {
    "null": "null",
    "boolean": "true or false",
    "integer": "a whole number",
    "number": "a number",
    "string": "text",
    "array": "a list",
    "object": "an object",
}


def json_type(value: Any) -> str:
    """The JSON type of a parsed value, as a message names it ("a boolean (true)")."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"a boolean ({quote(value)})"
    if isinstance(value, int):
        return f"a whole number ({quote(value)})"
    if isinstance(value, float):
        return f"a number ({quote(value)})"
    if isinstance(value, str):
        return f"text ({quote(value)})"
    if isinstance(value, list):
        return f"a list of {len(value)} item(s)"
    return "an object"


def printable(text: str) -> str:
    """``text`` with its unprintable characters escaped (a name holding a newline stays on the
    message's one line); printable text, accents included, is unchanged."""
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode() for c in text)


def quote(value: Any) -> str:
    """A short JSON rendering of a (public) value for a message."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > 10**15:
        return f"a {len(str(abs(value)))}-digit number"
    try:
        text = json.dumps(value, ensure_ascii=True)
    except (TypeError, ValueError, RecursionError):
        text = type(value).__name__
    return text if len(text) <= MAX_QUOTE else text[: MAX_QUOTE - 3] + "..."


def _reject_constant(name: str) -> float:
    raise ValueError(f"{name} is not a JSON number: write a finite number or null")


def read_json_text(path: Path, what: str, error: type[DpforgeError]) -> Any:
    """The parsed JSON of ``path``; ``error`` (naming ``what`` and the file) for any problem."""
    try:
        raw = Path(path).read_bytes()
    except FileNotFoundError:
        raise error(f"{what} {path} does not exist") from None
    except IsADirectoryError:
        raise error(f"{what} {path} is a folder, not a JSON file") from None
    except OSError as exc:
        raise error(f"cannot read {what} {path}: {exc.strerror}") from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise error(
            f"{what} {path} is not UTF-8 text (byte {exc.start}): save it as UTF-8 JSON"
        ) from None
    return parse_json(text, f"{what} {path}", error)


def parse_json(text: str, where: str, error: type[DpforgeError]) -> Any:
    """Strictly parsed JSON (no NaN/Infinity, bounded nesting); ``error`` naming ``where``."""
    if not text.strip():
        raise error(f"{where} is empty: it must hold a JSON object")
    try:
        document = json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise error(f"{where} is not valid JSON (line {exc.lineno}: {exc.msg})") from None
    except RecursionError:
        raise error(f"{where} is nested too deeply to be a dpforge file") from None
    except ValueError as exc:  # NaN/Infinity literals, integers too long for Python to read
        reason = str(exc) if "JSON number" in str(exc) else "a number has thousands of digits"
        raise error(f"{where} is not valid JSON: {reason}") from None
    if _depth(document) > MAX_DEPTH:
        raise error(f"{where} is nested more than {MAX_DEPTH} levels deep: not a dpforge file")
    return document


def _depth(value: Any) -> int:
    """Nesting depth of a parsed document (iterative: no recursion limit to hit)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        deepest = max(deepest, level)
        if isinstance(item, dict):
            stack.extend((v, level + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, level + 1) for v in item)
    return deepest


def check_document(
    document: Any,
    format_schema: dict[str, Any],
    where: str,
    error: type[DpforgeError],
    prefix: str = "$",
) -> None:
    """Raise ``error`` with one line about the most relevant way ``document`` breaks the format.

    ``where`` says which document ("schema file s.json"); ``prefix`` replaces the JSON path's
    root when the document sits inside another one (``$.schema`` in a model.json).
    """
    validator = jsonschema.Draft202012Validator(format_schema)
    errors = list(validator.iter_errors(document))
    if not errors:
        return
    first = best_match(errors, key=_relevance)
    more = len(errors) - 1
    tail = f" ({more} more problem(s) after this one)" if more else ""
    path = prefix + first.json_path[1:]
    raise error(f"{where}: {describe(first, path)}{tail}")


def _relevance(error: ValidationError) -> tuple:
    """``best_match`` takes the largest key: errors nearest the root first (a deeper one is
    often a consequence), then a wrong value before an unknown key at the same depth."""
    return (-len(error.path), error.validator != "additionalProperties")


def describe(error: ValidationError, path: str) -> str:
    """One line for one validation error: the key, the value's type, what is allowed."""
    kind, schema, value = error.validator, error.schema, error.instance
    if kind == "additionalProperties":
        return _unknown_key(path, value, schema)
    if kind == "required":
        missing = [k for k in error.validator_value if not _has(value, k)]
        return f"{path} lacks the key {quote(missing[0])} ({_owner(schema)} needs it)"
    if kind in ("enum", "const"):
        allowed = list(error.validator_value) if kind == "enum" else [error.validator_value]
        hint = _closest(value, allowed)
        return f"{path} is {json_type(value)}; allowed: {_allowed(schema)}{hint}"
    if kind in ("minItems", "maxItems"):
        return f"{path} has {len(value)} item(s); allowed: {_allowed(schema)}"
    if kind == "uniqueItems":
        return f"{path} lists a value twice; each value may appear once"
    if kind == "minProperties":
        return f"{path} is empty; allowed: {_allowed(schema)}"
    return f"{path} is {json_type(value)}; allowed: {_allowed(schema)}"


def _has(value: Any, key: str) -> bool:
    return isinstance(value, dict) and key in value


def _owner(schema: Any) -> str:
    return schema.get("title", "this object") if isinstance(schema, dict) else "this object"


def _unknown_key(path: str, value: dict[str, Any], schema: dict[str, Any]) -> str:
    known = list(schema.get("properties", {}))
    unknown = [k for k in value if k not in known]
    key = unknown[0]
    # a key of another kind of object (bounds on a categorical column) is no typo: no hint
    hint = "" if key in schema.get("x-keys-elsewhere", ()) else _closest(key, known)
    return (
        f"{path} has an unknown key {quote(key)}{hint}; "
        f"{_owner(schema)} takes only {', '.join(known)}"
    )


def closest(value: str, choices: Iterable[Any]) -> str | None:
    """The choice most like ``value`` (ignoring case), or None when none is close."""
    texts = {c.lower(): c for c in choices if isinstance(c, str)}
    match = difflib.get_close_matches(value.lower(), list(texts), n=1, cutoff=0.6)
    return texts[match[0]] if match and texts[match[0]] != value else None


def _closest(value: Any, choices: Iterable[Any]) -> str:
    match = closest(value, choices) if isinstance(value, str) else None
    return f" (did you mean {quote(match)}?)" if match is not None else ""


def _allowed(schema: Any) -> str:
    """What the failing part of the format allows: its description, or derived from it."""
    if not isinstance(schema, dict):
        return "nothing here"
    if "description" in schema:
        return str(schema["description"])
    if "enum" in schema:
        return " or ".join(quote(v) for v in schema["enum"])
    if "const" in schema:
        return quote(schema["const"])
    kinds = schema.get("type", [])
    kinds = [kinds] if isinstance(kinds, str) else kinds
    return " or ".join(_TYPE_NAMES.get(k, k) for k in kinds) or "a different value"
