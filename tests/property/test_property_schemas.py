"""Schema files, valid and mutated, through the Python API and the command line."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from property_support import assert_clean_error, assert_cli_clean, no_training, run_cli
from strategies import SCHEMA_DOCUMENTS, mutated

from dpforge.errors import DpforgeError, SchemaError
from dpforge.schema.array import ArraySchema, load_schema, schema_from_dict
from dpforge.schema.table import Column, Schema


@settings(max_examples=60)
@given(SCHEMA_DOCUMENTS)
def test_valid_documents_load_and_round_trip(document):
    schema = schema_from_dict(document)
    assert isinstance(schema, ArraySchema if document["type"] != "table" else Schema)
    again = schema_from_dict(json.loads(schema.to_json()))
    assert again == schema
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "schema.json"
        path.write_text(json.dumps(document), encoding="utf-8")
        assert load_schema(path) == schema


@settings(max_examples=150)  # milliseconds each
@given(mutated())
def test_mutated_documents_load_or_fail_on_one_line(document):
    try:
        schema = schema_from_dict(document)
    except DpforgeError as exc:
        assert isinstance(exc, SchemaError)
        assert_clean_error(exc)
        return
    except Exception as exc:  # noqa: BLE001 - any other exception is the bug we look for
        assert_clean_error(exc)
    # Accepted: it is a valid schema that survives its own JSON.
    assert schema_from_dict(json.loads(schema.to_json())) == schema


@given(mutated(), st.sampled_from(["json", "bytes", "truncated", "bom"]))
def test_mutated_schema_files_through_the_command_line(document, encoding):
    """``dpforge fit`` with the file: a one-line error (schema or data), never a traceback,
    never training (the data file's columns match no generated schema)."""
    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        text = json.dumps(document, ensure_ascii=False).encode("utf-8")
        if encoding == "bytes":
            text = b"\xff\xfe" + text  # not UTF-8
        elif encoding == "truncated":
            text = text[: max(1, len(text) // 2)]
        elif encoding == "bom":
            text = b"\xef\xbb\xbf" + text  # a UTF-8 byte order mark is fine
        (folder / "schema.json").write_bytes(text)
        (folder / "data.csv").write_text("zz_not_a_schema_column\n1\n2\n")
        with no_training():
            code, output = run_cli(
                ["fit", folder / "data.csv", "--schema", folder / "schema.json", "--out",
                 folder / "model"]
            )  # fmt: skip
        assert_cli_clean(code, output)
        assert code == 2, output
        assert not (folder / "model").exists()


def test_a_schema_file_error_names_the_file_the_key_and_the_fix(tmp_path):
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"columns": [{"name": "age", "type": "integer", "lowr": 0}]}))
    code, output = run_cli(["fit", tmp_path / "d.csv", "--schema", path, "--out", tmp_path / "m"])
    assert code == 2
    assert output.strip() == (
        f'error: schema file {path}: $.columns[0] has an unknown key "lowr" (did you mean '
        '"lower"?); a continuous or integer column takes only name, type, lower, upper, '
        "nullable, resolution"
    )


PY_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**6), 10**6),
    st.floats(),
    st.text(max_size=4),
    st.lists(st.text(max_size=3), max_size=3).map(tuple),
    st.lists(st.integers(0, 3), max_size=3),
)


@settings(max_examples=150)
@given(
    st.lists(
        st.tuples(PY_VALUES | st.text(min_size=1, max_size=4), st.sampled_from(
            ["continuous", "integer", "categorical", "text", None]), PY_VALUES, PY_VALUES,
            PY_VALUES),
        min_size=0,
        max_size=3,
    ),
    PY_VALUES,
    PY_VALUES | st.sampled_from(["uniform", "dp"])
    | st.dictionaries(st.text(max_size=2), PY_VALUES),
)  # fmt: skip
def test_schemas_built_in_python_are_valid_or_refused_on_one_line(columns, label, prior):
    """The Python API checks what the JSON format checks: a schema built from any values is
    refused with a SchemaError, or it survives its own JSON file."""
    try:
        built = tuple(Column(n, t, lo, up, cats) for n, t, lo, up, cats in columns)
        schema = Schema(built, label=label, label_prior=prior)
    except DpforgeError as exc:
        assert isinstance(exc, SchemaError)
        assert_clean_error(exc)
        return
    except Exception as exc:  # noqa: BLE001 - a traceback for the user
        assert_clean_error(exc)
    assert Schema.from_dict(json.loads(schema.to_json())) == schema
