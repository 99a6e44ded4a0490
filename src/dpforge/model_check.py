"""Checking a model folder on load as strictly as a schema file.

A model folder may be copied, edited by hand or half written. Loading it must either rebuild
exactly the generator that was saved, or refuse with one line naming the file and the key:
never a traceback, never a generator that silently samples something else. Three layers:

1. ``model.json`` against its declared format (:data:`MANIFEST_FORMAT`, a JSON Schema; the
   embedded schema against the schema formats, the configuration against the refiner's config
   dataclass, or the generator's when ``method`` is null: format 2's fit without refinement),
   with the messages of :mod:`dpforge.schema.validation`;
2. rules between values: the label prior is one probability per class and sums to 1, the
   schema is complete, the DP-placed cells belong to numeric columns and increase, the ledger
   decodes;
3. the weights against the architecture that ``model.json`` describes (every tensor's name,
   shape and dtype, finite values), and a digest of ``model.json`` stored in the weights file
   at save time, so that an edit that keeps every shape (a renamed column, a swapped type, a
   changed ledger) is caught too. Folders saved before the digest existed skip that last check.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import types
import typing
from pathlib import Path
from typing import Any

import numpy as np
import torch

from dpforge.errors import DpforgeError, ModelFileError
from dpforge.kinds import kind_of
from dpforge.kinds.generator import GeneratorConfig
from dpforge.methods import METHODS
from dpforge.privacy.ledger import PrivacyLedger
from dpforge.privacy.person import PrivacyUnit
from dpforge.schema.array import ArraySchema, schema_from_dict
from dpforge.schema.table import Schema, check_schema_document
from dpforge.schema.validation import check_document, quote
from dpforge.statistics.bins import numeric_bins
from dpforge.statistics.cells import FINE_CELLS
from dpforge.statistics.feature_views import VIEWS

FORMAT = "dpforge-model"
FORMAT_VERSION = 2  # 2: "method" null and "config" the generator's for a fit without refinement
READ_VERSIONS = (1, 2)  # 1: every folder named a method and held its whole config
DIGEST_KEY = "dpforge_manifest_sha256"
PRIOR_TOLERANCE = 1e-6

_NUMBER = {"type": "number", "minimum": -1e300, "maximum": 1e300}
FEATURE_RELEASE: dict[str, Any] = {
    "type": "object",
    "required": [
        "feature_seed",
        "kind",
        "shape",
        "n_features",
        "bandwidths",
        "noise_multiplier",
    ],
    "additionalProperties": False,
    "properties": {
        "feature_seed": {"type": "integer", "minimum": 0},
        "kind": {"enum": ["image", "timeseries"]},
        "shape": {
            "type": "array",
            "minItems": 2,
            "maxItems": 3,
            "items": {"type": "integer", "minimum": 1},
        },
        "n_features": {"type": "integer", "minimum": 1, "maximum": 1_000_000},
        "bandwidths": {
            "type": "array",
            "minItems": 1,
            "items": {"type": "number", "exclusiveMinimum": 0},
        },
        "noise_multiplier": {"type": "number", "minimum": 0, "maximum": 1e300},
        # optional: folders saved before dpforge stored it lack it
        "count_weight": {"type": "number", "exclusiveMinimum": 0, "maximum": 1e300},
        # optional: a map with other views than the kind's legacy ones names them
        "views": {
            "type": "array",
            "minItems": 1,
            "uniqueItems": True,
            "items": {"enum": list(VIEWS)},
        },
    },
}  # fmt: skip

# A table's measured marginals (release.safetensors holds one tensor of noisy counts each).
TABLE_RELEASE_FORMAT: dict[str, Any] = {
    "type": "object",
    "required": ["kind", "marginals"],
    "additionalProperties": False,
    "properties": {
        "kind": {"const": "table"},
        "marginals": {
            "type": "array",
            "maxItems": 100_000,
            "items": {
                "type": "object",
                "required": ["columns", "shape", "total"],
                "additionalProperties": False,
                "properties": {
                    "columns": {"type": "array", "minItems": 1, "items": {"type": "string"}},
                    "shape": {"type": "array", "items": {"type": "integer", "minimum": 1}},
                    "total": {"type": "number", "exclusiveMinimum": 0, "maximum": 1e300},
                    "groups": {
                        "type": "array",
                        "description": "merged cells (folders fitted with the removed "
                        "label_pairs option): refused on load, fit the table again",
                        "items": {"type": "array", "items": {"type": "integer", "minimum": 0}},
                    },
                    "row_totals": {
                        "type": "array",
                        "description": "each class's total its row is projected onto "
                        "(folders fitted with the removed AnchorConfig.class_totals)",
                        "items": {"type": "number", "minimum": 0, "maximum": 1e300},
                    },
                    "empty": {
                        "type": "array",
                        "description": "flat indices of cells on a bound that is no atom "
                        "(decided from the released counts): they get no mass",
                        "items": {"type": "integer", "minimum": 0},
                    },
                },
            },
        },
    },
}


MANIFEST_FORMAT: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "a model.json",
    "type": "object",
    "required": ["format", "format_version", "method", "schema", "config", "plan", "privacy"],
    "additionalProperties": False,
    "properties": {
        "format": {"const": FORMAT},
        "format_version": {
            "enum": list(READ_VERSIONS),
            "description": f"one of {list(READ_VERSIONS)} (the model formats this dpforge reads)",
        },
        "method": {"enum": [*sorted(METHODS), None]},
        "schema": {"type": "object", "description": "a schema object"},
        "label_prior": {
            "type": ["array", "null"],
            "minItems": 2,
            "items": {
                "type": "number",
                "minimum": 0,
                "maximum": 1,
                "description": "a probability between 0 and 1",
            },
            "description": "a list of class probabilities (>= 0, summing to 1), or null",
        },
        "config": {
            "type": "object",
            "description": "the refiner's configuration object, or the generator's (method null)",
        },
        "encoding": {
            "title": "the encoding",
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "n_bins": {"type": ["integer", "null"], "minimum": 3, "maximum": 100_000},
                "edges": {
                    "type": "object",
                    "additionalProperties": {"type": "array", "minItems": 2, "items": _NUMBER},
                },
                "cell_mass": {
                    "type": "object",
                    "additionalProperties": {"type": "array", "minItems": 1, "items": _NUMBER},
                },
                "codes": {
                    "type": "object",
                    "description": "the cells of each long code list (statistics/codes.py)",
                    "additionalProperties": {
                        "type": "object",
                        "required": ["heavy", "groups"],
                        "additionalProperties": False,
                        "properties": {
                            "heavy": {"type": "array", "items": {"type": "integer"}},
                            "groups": {"type": "integer", "minimum": 0},
                            "weights": {"type": "array", "items": {"type": "array"}},
                            "base": {"type": "array", "items": _NUMBER},
                        },
                    },
                },
            },
        },
        "plan": {
            "title": "the training plan",
            "type": "object",
            "required": ["steps", "sample_rate", "noise_multiplier"],
            "additionalProperties": False,
            "properties": {
                "steps": {"type": "integer", "minimum": 0},
                "sample_rate": {"type": "number", "minimum": 0, "maximum": 1},
                "noise_multiplier": {"type": "number", "minimum": 0, "maximum": 1e300},
                "checkpoint_every": {"type": "integer", "minimum": 1},
            },
        },
        "privacy": {
            "title": "the privacy record",
            "type": "object",
            "required": ["target_epsilon", "delta", "ledger"],
            "additionalProperties": False,
            "properties": {
                "target_epsilon": {
                    "type": ["number", "string"],
                    "description": 'a number > 0 or "inf"',
                    "if": {"type": "string"},
                    "then": {"const": "inf"},
                    "else": {"exclusiveMinimum": 0, "maximum": 1e300},
                },
                "delta": {"type": "number", "minimum": 0, "exclusiveMaximum": 1},
                "report": {"type": "object"},
                "ledger": {"type": "object"},
                "unit": {
                    "title": "the privacy unit (the guarantee is per person)",
                    "type": "object",
                    "required": ["column", "max_rows"],
                    "additionalProperties": False,
                    "properties": {
                        "column": {"type": "string", "minLength": 1},
                        "max_rows": {"type": "integer", "minimum": 1},
                    },
                },
            },
        },
        "versions": {"type": "object", "additionalProperties": {"type": "string"}},
        "release": {
            "title": "the stored release's public parameters (release.safetensors)",
            "oneOf": [FEATURE_RELEASE, TABLE_RELEASE_FORMAT],
        },
    },
}


def manifest_digest(info: dict[str, Any]) -> str:
    """A digest of model.json's content (key order and spacing do not matter)."""
    text = json.dumps(info, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def check_manifest(info: Any, path: Path) -> None:
    """Refuse a model.json that breaks its format or whose values contradict each other."""
    where = str(path)
    if not isinstance(info, dict):
        found = "a list" if isinstance(info, list) else type(info).__name__
        raise ModelFileError(f"{where}: $ is {found}; a model.json is a JSON object")
    if info.get("format") != FORMAT:
        raise ModelFileError(
            f"{where} is not a dpforge model file (format {quote(info.get('format'))})"
        )
    check_document(info, MANIFEST_FORMAT, where, ModelFileError)
    check_schema_document(info["schema"], where, "$.schema", ModelFileError)
    if info["method"] is None and info["format_version"] < 2:
        raise ModelFileError(f"{where}: $.method is null, which format_version 1 never wrote")
    _check_config(info["method"], info["config"], where)
    schema = _schema(info["schema"], where)
    _check_prior(info.get("label_prior"), schema, where)
    _check_edges(info.get("encoding") or {}, schema, where)
    _check_unit(info["privacy"].get("unit"), schema, where)
    try:
        PrivacyLedger.from_dict(info["privacy"]["ledger"])
    except DpforgeError as exc:
        raise ModelFileError(f"{where}: $.privacy.ledger: {exc}") from None


def _schema(document: dict[str, Any], where: str) -> Schema | ArraySchema:
    try:
        schema = schema_from_dict(document, allow_review=True)
    except DpforgeError as exc:
        raise ModelFileError(f"{where}: $.schema: {exc}") from None
    incomplete = kind_of(schema).incomplete(schema)
    if incomplete:
        raise ModelFileError(
            f"{where}: $.schema: {incomplete[0]!r} has no bounds or classes; the schema of a "
            "fitted model is complete (restore the model.json that fit wrote)"
        )
    return schema


def _check_unit(unit: dict[str, Any] | None, schema: Schema | ArraySchema, where: str) -> None:
    """The privacy unit, when given, is an identifier column of the table schema."""
    if unit is None:
        return
    try:
        PrivacyUnit(unit["column"], unit["max_rows"]).check_schema(schema)
    except DpforgeError as exc:
        raise ModelFileError(f"{where}: $.privacy.unit: {exc}") from None


def _label_classes(schema: Schema | ArraySchema) -> tuple[str, ...] | None:
    name, classes = kind_of(schema).label(schema)
    return None if name is None else classes


def _check_prior(prior: list[float] | None, schema: Schema | ArraySchema, where: str) -> None:
    classes = _label_classes(schema)
    if classes is None:
        if prior is not None:
            raise ModelFileError(f"{where}: $.label_prior is a list but the schema has no label")
        return
    if prior is None or len(prior) != len(classes):
        got = "null" if prior is None else f"{len(prior)} probabilities"
        raise ModelFileError(
            f"{where}: $.label_prior is {got}; allowed: one probability for each of the "
            f"{len(classes)} classes of '{schema.label}'"
        )
    total = math.fsum(prior)
    if abs(total - 1.0) > PRIOR_TOLERANCE:
        raise ModelFileError(
            f"{where}: $.label_prior sums to {total:.6g}; allowed: probabilities summing to 1"
        )


def _check_mass(encoding: dict[str, Any], name: str, column: Any, where: str) -> None:
    """A column's fine mass, when given, has one non-negative entry per interior fine cell."""
    mass = (encoding.get("cell_mass") or {}).get(name)
    if mass is None:
        return
    fine = numeric_bins(column, FINE_CELLS + 2)
    cells = fine.values.size - 2 if fine.values.size else fine.edges.size - 1
    array = np.asarray(mass, dtype=np.float64)
    if array.size != cells or np.any(array < 0):
        raise ModelFileError(
            f"{where}: $.encoding.cell_mass[{quote(name)}] must hold {cells} numbers >= 0"
        )


def _check_edges(encoding: dict[str, Any], schema: Schema | ArraySchema, where: str) -> None:
    edges = encoding.get("edges") or {}
    if not edges:
        return
    if encoding.get("n_bins") is None or not kind_of(schema).encodes_cells:
        raise ModelFileError(f"{where}: $.encoding.edges is given but $.encoding.n_bins is null")
    numeric = {c.name: c for c in schema.feature_columns if c.is_numeric}
    for name, values in edges.items():
        key = f"$.encoding.edges[{quote(name)}]"
        if name not in numeric:
            raise ModelFileError(
                f"{where}: {key} names no numeric feature column; the schema's are "
                f"{sorted(numeric)}"
            )
        column, array = numeric[name], np.asarray(values, dtype=np.float64)
        _check_mass(encoding, name, column, where)
        if np.any(np.diff(array) <= 0):
            raise ModelFileError(f"{where}: {key} must increase strictly")
        if array[0] < column.lower or array[-1] > column.upper:
            raise ModelFileError(
                f"{where}: {key} leaves the column's bounds [{column.lower:g}, {column.upper:g}]"
            )


# -- the method's configuration -------------------------------------------------------------
def _json_type(annotation: Any) -> dict[str, Any]:
    """The JSON Schema of one config field, from its type hint."""
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        parts = [_json_type(a) for a in typing.get_args(annotation)]
        return {"anyOf": parts}
    if origin is tuple:
        return {"type": "array", "items": _json_type(typing.get_args(annotation)[0])}
    if annotation is type(None):
        return {"type": "null"}
    if annotation is bool:
        return {"type": "boolean"}
    if annotation is int:
        return {"type": "integer", "minimum": -(2**63), "maximum": 2**63 - 1}
    if annotation is float:
        return {"type": "number", "minimum": -1e300, "maximum": 1e300}
    if annotation is str:
        return {"type": "string"}
    return {}


def config_format(config_cls: type) -> dict[str, Any]:
    """The JSON Schema of a method's config dataclass: its fields, typed, and nothing else.

    A field left out takes its default (folders saved before a field existed still load).
    """
    hints = typing.get_type_hints(config_cls)
    fields = [f.name for f in dataclasses.fields(config_cls)]
    required = [
        f.name
        for f in dataclasses.fields(config_cls)
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    ]
    return {
        "title": f"the {config_cls.__name__}",
        "type": "object",
        "required": required,
        "additionalProperties": False,
        "properties": {name: _json_type(hints[name]) for name in fields},
    }


def _check_config(method: str | None, config: dict[str, Any], where: str) -> None:
    config_cls = GeneratorConfig if method is None else METHODS[method][1]
    check_document(config, config_format(config_cls), where, ModelFileError, prefix="$.config")
    try:
        build_config(method, config).validate()
    except DpforgeError as exc:
        raise ModelFileError(f"{where}: $.config: {exc}") from None


def build_config(method: str | None, config: dict[str, Any]) -> Any:
    """The config dataclass from a checked ``config`` object (lists become tuples): the
    refiner's, or the generator's when no method refined it."""
    values = {k: tuple(v) if isinstance(v, list) else v for k, v in config.items()}
    return (GeneratorConfig if method is None else METHODS[method][1])(**values)


# -- the weights ----------------------------------------------------------------------------
def check_weights(
    weights: dict[str, torch.Tensor], expected: dict[str, torch.Tensor], path: Path
) -> None:
    """The saved tensors are exactly those of the architecture model.json describes."""
    missing = sorted(set(expected) - set(weights))
    extra = sorted(set(weights) - set(expected))
    hint = "model.json and the weights do not belong together (restore the folder fit wrote)"
    if missing or extra:
        name = (missing or extra)[0]
        what = "lacks" if missing else "has an unexpected"
        raise ModelFileError(f"{path} {what} tensor {name!r}; {hint}")
    for name, reference in expected.items():
        tensor = weights[name]
        if tuple(tensor.shape) != tuple(reference.shape):
            raise ModelFileError(
                f"{path}: tensor {name!r} has shape {list(tensor.shape)} but model.json "
                f"describes {list(reference.shape)}; {hint}"
            )
        if tensor.dtype != reference.dtype:
            raise ModelFileError(
                f"{path}: tensor {name!r} is {tensor.dtype} but the generator needs "
                f"{reference.dtype}; {hint}"
            )
        if tensor.is_floating_point() and not bool(torch.isfinite(tensor).all()):
            raise ModelFileError(
                f"{path}: tensor {name!r} holds NaN or infinite values; this generator "
                "cannot sample (retrain, or restore the folder fit wrote)"
            )


def check_digest(info: dict[str, Any], metadata: dict[str, str], manifest: Path) -> None:
    """model.json is the one saved with the weights (when the weights carry its digest)."""
    saved = metadata.get(DIGEST_KEY)
    if saved is not None and saved != manifest_digest(info):
        raise ModelFileError(
            f"{manifest} was changed after the model was saved (it no longer matches the "
            "digest in the weights file); a generator means what its model.json said when it "
            "was trained: restore the original model.json"
        )
