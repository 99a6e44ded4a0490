"""The options file of ``dpforge fit --options FILE``: TOML, or JSON by its ``.json`` extension.

``dpforge fit`` takes on its command line only what a user sets on almost every run; every
other setting lives in this file, by section. Each section is a dataclass of the Python API, so
a key the file accepts is a field Python takes, and both get the same checks: the field's type
here, the dataclass's own ``validate()`` when the run starts.

- ``[data]`` :class:`DataOptions`: how DATA is read (label, idx labels, series layout, public
  images);
- ``[privacy]`` :class:`PrivacyOptions`: the metadata's share, the budget file;
- ``[anchor]`` ``AnchorConfig`` (tables) or ``FeatureAnchorConfig`` (images, time series);
- ``[generator]`` the generator fields of the refiner's config (``DPCGANConfig`` unless
  ``--refine`` names another);
- ``[refine]`` :class:`RefineOptions` and the rest of the refiner's config (``DPCGANConfig``,
  ``DPWGANConfig``, ``GSWGANConfig``); it needs ``--refine``;
- ``[engine]`` :class:`EngineOptions`: memory or Spark;
- ``[output]`` :class:`OutputOptions`: progress bar, checkpoint interval, samples.

An unknown section or key is a one-line error that names it, suggests the closest valid name
and lists them all; a value of the wrong type names the key, the value and the type expected.
This module imports no torch: the config classes load when a file is read.
"""

from __future__ import annotations

import difflib
import json
import sys
import types
import typing
from dataclasses import MISSING, Field, dataclass, fields
from pathlib import Path
from typing import Any

from dpforge.errors import DpforgeError
from dpforge.options import GENERATOR_FIELDS

if sys.version_info >= (3, 11):
    import tomllib
else:  # the same parser, as the tomli package (a dependency on Python 3.10 only)
    import tomli as tomllib

__all__ = [
    "REFINERS",
    "SECTIONS",
    "DataOptions",
    "EngineOptions",
    "FitOptions",
    "OutputOptions",
    "PrivacyOptions",
    "RefineOptions",
    "read_options",
    "section_classes",
]

REFINERS = ("dpcgan", "dpwgan", "gswgan")
SECTIONS = ("data", "privacy", "anchor", "generator", "refine", "engine", "output")


@dataclass(frozen=True)
class DataOptions:
    """How DATA is read.

    target: the label column, instead of the schema's.
    labels: images in idx format: the labels file.
    layout: time series CSV: "wide" (one row per series) or "long" (id, time, values).
    id_column: time series in the long layout: the column that names each series.
    public_data: images: a PUBLIC image set of the same shape (folder, .npz or idx; labelled or
        not) that trains the feature extractor of perceptual anchoring; costs no budget.
    public_labels: the idx labels file of ``public_data``.
    """

    target: str | None = None
    labels: Path | None = None
    layout: str = "wide"
    id_column: str | None = None
    public_data: Path | None = None
    public_labels: Path | None = None


@dataclass(frozen=True)
class PrivacyOptions:
    """The parts of the budget not on the command line.

    metadata_share: the fraction of epsilon and delta spent on DP estimates of metadata the
        schema leaves undeclared (bounds, categories, the label prior, the record count).
    record_budget: add this run's events to the data set's budget file (see ``--budget``);
        false runs unrecorded, so runs on these data are not composed across runs.
    """

    metadata_share: float = 0.1
    record_budget: bool = True


@dataclass(frozen=True)
class RefineOptions:
    """The length of the refinement (give at most one; the other is calibrated).

    epochs: passes over the data of the private discriminator (50 when neither is given).
    noise_multiplier: sigma of DP-SGD; the epochs then follow from the budget.
    """

    epochs: float | None = None
    noise_multiplier: float | None = None


@dataclass(frozen=True)
class EngineOptions:
    """Where the records are read and their aggregates computed.

    name: "memory" (this process) or "spark" (tables: the measurements run as Spark
        aggregations; DATA is Parquet or CSV).
    spark_master: the Spark master URL (default: an embedded ``local[*]``).
    spark_remote: a Spark Connect URL (``sc://HOST:PORT``), instead of ``spark_master``.
    """

    name: str = "memory"
    spark_master: str | None = None
    spark_remote: str | None = None


@dataclass(frozen=True)
class OutputOptions:
    """What the run shows and writes besides the model folder.

    progress: show a progress bar.
    checkpoint_every: private steps between two checkpoints (with ``--checkpoint-dir``).
    samples: also write this many synthetic records after the fit (0: none).
    samples_out: where (default: ``samples.csv``, or a folder for images, in the model folder).
    """

    progress: bool = True
    checkpoint_every: int = 500
    samples: int = 0
    samples_out: Path | None = None


@dataclass(frozen=True)
class FitOptions:
    """The options file, read and type-checked: one object per section, and the keys given in
    ``[anchor]``, ``[generator]`` and ``[refine]`` (applied to the configs once the kind and
    the refiner are known)."""

    data: DataOptions = DataOptions()
    privacy: PrivacyOptions = PrivacyOptions()
    refine_run: RefineOptions = RefineOptions()
    engine: EngineOptions = EngineOptions()
    output: OutputOptions = OutputOptions()
    anchor: dict[str, Any] | None = None
    generator: dict[str, Any] | None = None
    refine: dict[str, Any] | None = None
    source: str = "options file"


def section_classes(kind: str, refiner: str | None) -> dict[str, tuple[type, ...]]:
    """The dataclasses whose fields are each section's keys, for a schema of ``kind`` ("table",
    "image", "timeseries") and the refiner named by ``--refine`` (or None)."""
    from dpforge.kinds import anchor_config_class
    from dpforge.methods import METHODS

    method = METHODS[refiner or "dpcgan"][1]
    return {
        "data": (DataOptions,),
        "privacy": (PrivacyOptions,),
        "anchor": (anchor_config_class(kind),),
        "generator": (method,),
        "refine": (RefineOptions, method),
        "engine": (EngineOptions,),
        "output": (OutputOptions,),
    }


def section_keys(section: str, classes: tuple[type, ...]) -> dict[str, Field]:
    """The valid keys of ``section``: the fields of its classes (a refiner's config split
    between ``[generator]`` and ``[refine]``)."""
    keys = {f.name: f for cls in classes for f in fields(cls)}
    if section == "generator":
        return {k: f for k, f in keys.items() if k in GENERATOR_FIELDS}
    if section == "refine":
        return {k: f for k, f in keys.items() if k not in GENERATOR_FIELDS}
    return keys


def read_options(path: Path | None, kind: str, refiner: str | None) -> FitOptions:
    """The options file at ``path`` (None: every default), checked key by key against the
    sections of ``kind`` and ``refiner``; paths in it are relative to the file's folder."""
    if path is None:
        return FitOptions()
    raw = _parse(path)
    where = str(path)
    classes = section_classes(kind, refiner)
    checked: dict[str, dict[str, Any]] = {}
    for section, table in raw.items():
        if not isinstance(table, dict):
            raise DpforgeError(
                f"{where}: '{section}' stands outside any section: each key belongs to one, "
                "such as [anchor] (what the command line takes, such as --epsilon, is not in "
                "the file)"
            )
        if section not in SECTIONS:
            raise DpforgeError(f"{where}: {_unknown('section', section, SECTIONS)}")
        keys = section_keys(section, classes[section])
        checked[section] = {
            key: _checked_value(where, section, key, value, keys, classes[section])
            for key, value in table.items()
        }
        _relative_paths(checked[section], path.parent)
    return _assembled(checked, where)


def _parse(path: Path) -> dict[str, Any]:
    """The file's top-level table; a syntax error names the file and the line."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise DpforgeError(f"--options {path}: cannot read it ({exc.strerror})") from None
    try:
        raw = json.loads(text) if path.suffix.lower() == ".json" else tomllib.loads(text)
    except (tomllib.TOMLDecodeError, json.JSONDecodeError) as exc:
        kind = "JSON" if path.suffix.lower() == ".json" else "TOML"
        raise DpforgeError(f"--options {path}: not valid {kind} ({exc})") from None
    if not isinstance(raw, dict):
        raise DpforgeError(f"--options {path}: the file must hold sections such as [anchor]")
    return raw


def _unknown(what: str, name: str, valid: typing.Iterable[str]) -> str:
    """'unknown key 'x' (did you mean 'y'?); valid keys: ...' on one line."""
    valid = sorted(valid)
    close = difflib.get_close_matches(name, valid, n=1)
    hint = f" (did you mean '{close[0]}'?)" if close else ""
    return f"unknown {what} '{name}'{hint}; valid {what}s: {', '.join(valid)}"


def _checked_value(
    where: str, section: str, key: str, value: Any, keys: dict[str, Field], classes: tuple
) -> Any:
    """``value`` as the field ``key`` of ``section`` takes it, or a one-line error."""
    if key not in keys:
        raise DpforgeError(f"{where}: [{section}] {_unknown('key', key, keys)}")
    owner = next(cls for cls in classes if key in {f.name for f in fields(cls)})
    hint = typing.get_type_hints(owner)[key]
    try:
        return _as_type(value, hint)
    except TypeError:
        raise DpforgeError(
            f"{where}: [{section}] {key} = {value!r} must be {type_name(hint)}"
        ) from None


def _as_type(value: Any, hint: Any) -> Any:
    """``value`` converted to ``hint`` (int, float, bool, str, Path, tuple[X, ...], X | None);
    TypeError when it is not of that type (a bool is never a number)."""
    options = typing.get_args(hint)
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        if value is None and type(None) in options:
            return None
        inner = [o for o in options if o is not type(None)]
        return _as_type(value, inner[0])
    if typing.get_origin(hint) is tuple:
        if not isinstance(value, list | tuple):
            raise TypeError(value)
        return tuple(_as_type(v, options[0]) for v in value)
    if hint is bool:
        if not isinstance(value, bool):
            raise TypeError(value)
        return value
    if hint is float and isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if hint is Path and isinstance(value, str):
        return Path(value)
    if hint in (int, str) and isinstance(value, hint) and not isinstance(value, bool):
        return value
    raise TypeError(value)


def type_name(hint: Any) -> str:
    """The type a user reads in an error and in docs/options-file.md."""
    options = typing.get_args(hint)
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        inner = [type_name(o) for o in options if o is not type(None)]
        return f"{inner[0]} or null"
    if typing.get_origin(hint) is tuple:
        return f"a list of {_plural(options[0])}"
    names = {bool: "true or false", int: "a whole number", float: "a number",
             str: "a string", Path: "a path (string)"}  # fmt: skip
    return names[hint]


def _plural(hint: Any) -> str:
    return {int: "whole numbers", float: "numbers", str: "strings"}[hint]


def _relative_paths(values: dict[str, Any], folder: Path) -> None:
    """Paths written in the file are relative to the file's own folder."""
    for key, value in values.items():
        if isinstance(value, Path) and not value.expanduser().is_absolute():
            values[key] = folder / value


def _assembled(checked: dict[str, dict[str, Any]], where: str) -> FitOptions:
    """The checked sections as a :class:`FitOptions`."""
    refine = dict(checked.get("refine", {}))
    run = {k: refine.pop(k) for k in [f.name for f in fields(RefineOptions)] if k in refine}
    return FitOptions(
        data=DataOptions(**checked.get("data", {})),
        privacy=PrivacyOptions(**checked.get("privacy", {})),
        refine_run=RefineOptions(**run),
        engine=EngineOptions(**checked.get("engine", {})),
        output=OutputOptions(**checked.get("output", {})),
        anchor=checked.get("anchor"),
        generator=checked.get("generator"),
        refine=refine if "refine" in checked else None,
        source=where,
    )


def default_of(field: Field) -> Any:
    """A field's default value (for docs/options-file.md)."""
    if field.default is not MISSING:
        return field.default
    if field.default_factory is not MISSING:
        return field.default_factory()
    return None
