"""Hypothesis strategies: schema documents (valid and mutated), CSV tables, JSON values."""

from __future__ import annotations

import json
import string
from typing import Any

from hypothesis import strategies as st

# Text a user might put anywhere: letters, digits, punctuation, spaces, accents, CJK, emoji.
ODD_TEXT = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")),
    min_size=0,
    max_size=8,
)
NAMES = st.text(alphabet=string.ascii_letters + string.digits + "_ -é", min_size=1, max_size=6)
HUGE = st.sampled_from([10**20, -(10**20), 10**400, 2**63, 2**64, -(2**63) - 1])
JSON_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**6), max_value=10**6),
    HUGE,
    st.floats(allow_nan=False, allow_infinity=False),
    ODD_TEXT,
)
JSON_VALUES = st.recursive(
    JSON_SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(ODD_TEXT, inner, max_size=3)
    ),
    max_leaves=6,
)
FINITE = st.floats(min_value=-1e9, max_value=1e9, allow_nan=False, allow_infinity=False)


@st.composite
def bounds(draw) -> tuple[float | None, float | None]:
    if draw(st.booleans()):
        return None, None
    lower = draw(FINITE)
    width = draw(st.floats(min_value=1e-3, max_value=1e9))
    return lower, lower + width


@st.composite
def prior_for(draw, classes: list[str]) -> Any:
    kind = draw(st.sampled_from(["uniform", "dp", "declared"]))
    if kind != "declared":
        return kind
    weights = draw(st.lists(st.integers(1, 9), min_size=len(classes), max_size=len(classes)))
    total = sum(weights)
    return {c: w / total for c, w in zip(classes, weights, strict=True)}


@st.composite
def table_documents(draw) -> dict[str, Any]:
    """A valid table schema document, as a JSON file holds it."""
    names = draw(st.lists(NAMES, min_size=1, max_size=5, unique=True))
    columns, labels = [], []
    for name in names:
        kind = draw(st.sampled_from(["continuous", "integer", "categorical"]))
        if kind == "categorical":
            cats = draw(st.none() | st.lists(ODD_TEXT, min_size=1, max_size=4, unique=True))
            columns.append({"name": name, "type": kind, "categories": cats})
            if cats is not None and len(cats) >= 2:
                labels.append((name, cats))
        else:
            lower, upper = draw(bounds())
            columns.append({"name": name, "type": kind, "lower": lower, "upper": upper})
    document: dict[str, Any] = {"version": 1, "type": "table", "columns": columns}
    if labels and draw(st.booleans()):
        name, cats = draw(st.sampled_from(labels))
        document["label"] = name
        document["label_prior"] = draw(prior_for(cats))
    return document


@st.composite
def array_documents(draw) -> dict[str, Any]:
    """A valid image or time-series schema document."""
    kind = draw(st.sampled_from(["image", "timeseries"]))
    n_channels = draw(st.integers(1, 3))
    sizes = draw(st.lists(st.integers(1, 64), min_size=1, max_size=1 if kind != "image" else 2))
    if kind == "image":
        sizes = [sizes[0], sizes[-1]]
    names = draw(st.lists(NAMES, min_size=n_channels, max_size=n_channels, unique=True))
    channels = []
    for name in names:
        lower, upper = draw(bounds())
        channels.append({"name": name, "lower": lower, "upper": upper})
    document: dict[str, Any] = {
        "version": 1,
        "type": kind,
        "shape": [n_channels, *sizes],
        "channels": channels,
    }
    if draw(st.booleans()):
        classes = draw(st.lists(NAMES, min_size=2, max_size=4, unique=True))
        document.update(label="label", classes=classes, label_prior=draw(prior_for(classes)))
    return document


SCHEMA_DOCUMENTS = st.one_of(table_documents(), array_documents())

VALID_KEYS = [
    "version", "type", "label", "label_prior", "columns", "name", "lower", "upper",
    "categories", "shape", "channels", "classes", "review",
]  # fmt: skip


def paths(value: Any, prefix: tuple = ()) -> list[tuple]:
    """Every path (keys and indices) into a JSON document, the root included."""
    found = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            found += paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += paths(item, (*prefix, index))
    return found


def _typo(key: str, draw) -> str:
    if len(key) < 2:
        return key + "x"
    at = draw(st.integers(0, len(key) - 1))
    action = draw(st.sampled_from(["drop", "swap", "double"]))
    if action == "drop":
        return key[:at] + key[at + 1 :]
    if action == "double":
        return key[:at] + key[at] + key[at:]
    at = min(at, len(key) - 2)
    return key[:at] + key[at + 1] + key[at] + key[at + 2 :]


@st.composite
def mutated(draw, documents=SCHEMA_DOCUMENTS) -> Any:
    """A valid document with one random edit: a value replaced, a key removed, misspelt or
    added, a list emptied or the whole document replaced."""
    document = json.loads(json.dumps(draw(documents)))
    where = draw(st.sampled_from(paths(document)))
    action = draw(st.sampled_from(["replace", "delete", "typo", "add", "replace"]))
    if not where:
        return draw(JSON_VALUES) if action == "replace" else document
    parent = document
    for step in where[:-1]:
        parent = parent[step]
    last = where[-1]
    if action == "replace":
        parent[last] = draw(JSON_VALUES)
    elif action == "delete":
        del parent[last]
    elif action == "typo" and isinstance(last, str):
        parent[_typo(last, draw)] = parent.pop(last)
    elif action == "add" and isinstance(parent, dict):
        key = draw(st.sampled_from(VALID_KEYS) | ODD_TEXT)
        parent[key] = draw(JSON_VALUES)
    return document


# -- CSV tables -------------------------------------------------------------------------------
MISSING = st.sampled_from(["", "NA", "n/a", "nan", "null", "None", "?", " "])
CELL_KINDS = {
    "integer": st.integers(-1000, 1000).map(str),
    "float": st.floats(allow_nan=True, allow_infinity=True, width=32).map(repr),
    "category": st.sampled_from(["a", "b", "c", "yes", "no", "1", "2"]),
    "odd": st.text(
        alphabet=st.sampled_from(list("ab ,;\"'\t\n\r\\éß漢🙂") + ["\x00", "\ufeff"]),
        max_size=5,
    ),
}


@st.composite
def csv_tables(draw) -> tuple[str, list[str]]:
    """The text of a CSV file (header + rows) and its column names as written.

    Columns are numbers, categories or odd text; cells may be missing; names may be odd,
    repeated or empty. Cells are quoted as a spreadsheet would write them.
    """
    n_columns = draw(st.integers(1, 4))
    names = draw(
        st.lists(NAMES | st.sampled_from(["", " a", "a", "label"]), min_size=n_columns,
                 max_size=n_columns)
    )  # fmt: skip
    kinds = [draw(st.sampled_from(sorted(CELL_KINDS))) for _ in names]
    n_rows = draw(st.integers(0, 30))
    rows = []
    for _ in range(n_rows):
        row = []
        for kind in kinds:
            cell = draw(MISSING) if draw(st.integers(0, 9)) == 0 else draw(CELL_KINDS[kind])
            row.append(cell)
        rows.append(row)
    return _to_csv([names, *rows]), names


def _quote(cell: str) -> str:
    if any(ch in cell for ch in ',"\n\r') or cell != cell.strip():
        return '"' + cell.replace('"', '""') + '"'
    return cell


def _to_csv(rows: list[list[str]]) -> str:
    return "".join(",".join(_quote(c) for c in row) + "\n" for row in rows)
