"""Schema files against their declared format: each bad input of issue 14 gets one line that
names the key (JSON path), the value's type and what is allowed."""

from __future__ import annotations

import json

import pytest

from dpforge.errors import SchemaError
from dpforge.schema.array import load_schema, schema_from_dict
from dpforge.schema.formats import ARRAY_FORMAT, TABLE_FORMAT
from dpforge.schema.table import Schema

TABLE = {
    "version": 1,
    "type": "table",
    "label": "y",
    "label_prior": "uniform",
    "columns": [
        {"name": "age", "type": "integer", "lower": 0, "upper": 120},
        {"name": "y", "type": "categorical", "categories": ["no", "yes"]},
    ],
}


def _edited(change) -> dict:
    document = json.loads(json.dumps(TABLE))
    change(document)
    return document


def _message(document) -> str:
    with pytest.raises(SchemaError) as caught:
        schema_from_dict(document)
    message = str(caught.value)
    assert "\n" not in message
    return message


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            lambda d: d["columns"][1].update(categories=3),
            "$.columns[1].categories is a whole number (3); allowed: a list of texts",
        ),
        (
            lambda d: d.update(label_prior={"no": "half", "yes": 0.5}),
            '$.label_prior.no is text ("half"); allowed: a probability between 0 and 1',
        ),
        (
            lambda d: d.update(label_prior={"no": None, "yes": 0.5}),
            "$.label_prior.no is null; allowed: a probability between 0 and 1",
        ),
        (
            lambda d: d["columns"][0].update(lower=True),
            "$.columns[0].lower is a boolean (true); allowed: a number between -1e+300",
        ),
        (
            lambda d: d["columns"][0].update(upper=10**400),
            "$.columns[0].upper is a whole number (a 401-digit number); allowed: a number",
        ),
        (
            lambda d: d.update(lable="y"),
            '$ has an unknown key "lable" (did you mean "label"?); a table schema takes only',
        ),
        (
            lambda d: d["columns"][0].update(lowr=0),
            '$.columns[0] has an unknown key "lowr" (did you mean "lower"?)',
        ),
        (
            lambda d: d.update(version=2),
            "$.version is a whole number (2); allowed: 1 (the schema format this dpforge reads",
        ),
        (
            lambda d: d["columns"][1].update(lower=0),
            '$.columns[1] has an unknown key "lower"; a categorical column takes only name, '
            "type, categories",
        ),
        (
            lambda d: d["columns"][0].update(categories=["a"]),
            '$.columns[0] has an unknown key "categories"; a continuous or integer column',
        ),
        (
            lambda d: d["columns"][0].update(type="numeric"),
            '$.columns[0].type is text ("numeric"); allowed: "continuous" or "integer" or',
        ),
        (
            lambda d: d.update(label_prior="unifrom"),
            '$.label_prior is text ("unifrom"); allowed: "uniform" or "dp" (did you mean '
            '"uniform"?)',
        ),
    ],
)
def test_each_bad_value_gets_one_line_naming_the_key(change, expected):
    assert expected in _message(_edited(change))


def test_files_that_do_not_parse_name_the_file(tmp_path):
    path = tmp_path / "s.json"
    cases = {
        b"\xff\xfe{}": "is not UTF-8 text (byte 0): save it as UTF-8 JSON",
        b"[" * 50_000 + b"]" * 50_000: "is nested too deeply",
        b'{"columns": [' + b"[" * 70 + b"]" * 70 + b"]}": "is nested more than 64 levels deep",
        b'{"columns": NaN}': "NaN is not a JSON number",
        b'{"columns": [' + b"9" * 5000 + b"]}": "a number has thousands of digits",
        b"": "is empty",
        b'{"columns": [}': "is not valid JSON (line 1",
    }
    for raw, expected in cases.items():
        path.write_bytes(raw)
        with pytest.raises(SchemaError) as caught:
            load_schema(path)
        assert str(caught.value).startswith(f"schema file {path}")
        assert expected in str(caught.value), raw[:20]
    path.write_text(json.dumps(TABLE), encoding="utf-8-sig")  # a byte order mark is fine
    assert load_schema(path) == Schema.from_dict(TABLE)


def test_the_formats_are_json_schemas_that_accept_what_dpforge_writes():
    import jsonschema

    for document, declared in ((TABLE, TABLE_FORMAT), (_image(), ARRAY_FORMAT)):
        jsonschema.Draft202012Validator.check_schema(declared)
        jsonschema.validate(document, declared)
        schema = schema_from_dict(document)
        jsonschema.validate(json.loads(schema.to_json()), declared)


def _image() -> dict:
    return {
        "version": 1,
        "type": "image",
        "shape": [1, 8, 8],
        "channels": [{"name": "gray", "lower": 0, "upper": 255}],
        "label": "digit",
        "classes": [0, 1, 2],
        "label_prior": "dp",
    }


def test_whole_number_classes_become_text_and_array_keys_are_checked():
    schema = schema_from_dict(_image())
    assert schema.classes == ("0", "1", "2")
    bad = _image() | {"shape": [1, 8, 8.5]}
    assert "$.shape[2] is a number (8.5); allowed: a whole number from 1 to" in _message(bad)
    bad = _image() | {"channels": [{"name": "gray", "uper": 255}]}
    assert '$.channels[0] has an unknown key "uper" (did you mean "upper"?)' in _message(bad)
    bad = _image() | {"type": "imgae"}
    assert '(did you mean "image"?)' in _message(bad)


def test_a_label_that_is_not_a_column_suggests_the_closest():
    message = _message(_edited(lambda d: d.update(label="Y")))
    assert "the schema has no column 'Y' (did you mean 'y'?)" in message
