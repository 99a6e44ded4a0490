"""Save and load a released model folder.

A model folder holds exactly what may be published:
- ``generator.safetensors``: the generator's weights (post-processing of the private training);
- ``model.json``: the public schema (declared or DP-estimated), the configuration (the
  refiner's, or with ``method`` null the generator's: format 2; format 1 folders always named a
  method), the DP label prior, the privacy ledger and its epsilon, and library versions;
- ``release.safetensors`` (series and images anchored on a feature embedding): the released
  noisy per-class feature sums and counts, exactly the DP release the ledger records, with the
  public feature map's seed and parameters under ``model.json``'s ``release``; sampling moves
  generated records to match it (:mod:`dpforge.statistics.particles`); for tables, the noisy
  counts of the measured marginals, exactly as the ledger records them, described under
  ``release`` (columns, shape, the released N they are projected to); sampling weights a pool of
  generated rows to match them (:mod:`dpforge.statistics.reweight`).
Never the discriminator, training rows, row indices or any non-private statistic. Loading reads
data only: no pickle, no code from the folder is run.
"""

from __future__ import annotations

import importlib.metadata
import json
import math
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np
import torch

from dpforge.data.encoder import SOFTMAX, TableEncoder
from dpforge.errors import ModelFileError
from dpforge.generate import FittedModel
from dpforge.kinds import kind_of
from dpforge.kinds.feature_defaults import kind_views
from dpforge.kinds.generator import GeneratorConfig
from dpforge.kinds.networks import family_of
from dpforge.model_check import (
    DIGEST_KEY,
    FORMAT,
    FORMAT_VERSION,
    build_config,
    check_digest,
    check_manifest,
    check_weights,
    manifest_digest,
)
from dpforge.nets.families import build_generator
from dpforge.privacy.ledger import PrivacyLedger
from dpforge.schema.array import schema_from_dict
from dpforge.schema.validation import read_json_text
from dpforge.statistics.cells import bins_from_edges
from dpforge.statistics.codes import codes_from_dict
from dpforge.statistics.marginal_release import TABLE_RELEASE, MarginalRelease, table_release_error
from dpforge.statistics.particles import SampleRelease, release_shapes, release_tensor_error
from dpforge.storage import (
    FolderKind,
    read_tensor_metadata,
    read_tensors,
    replace_folder,
    write_json,
    write_tensors,
)
from dpforge.training import TrainingPlan

__all__ = [
    "FORMAT",
    "FORMAT_VERSION",
    "library_versions",
    "manifest",
    "read_fitted",
    "read_model",
    "restore",
    "save_model",
]
WEIGHTS = "generator.safetensors"
MANIFEST = "model.json"
RELEASE = "release.safetensors"


def library_versions() -> dict[str, str]:
    """The versions of dpforge and the libraries a model folder depends on (for its reader)."""
    names = ("dpforge", "torch", "numpy", "pandas", "dp-accounting", "safetensors")
    out = {}
    for name in names:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = "unknown"
    return out


def manifest(synth: Any) -> dict[str, Any]:
    """The JSON side of a model folder: everything public about the fitted synthesizer."""
    report = synth.privacy_spent()
    return {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "method": None if isinstance(synth.config_, GeneratorConfig) else synth.method,
        "schema": synth.schema_.to_dict(),
        "label_prior": None
        if synth.label_prior_ is None
        else [float(p) for p in synth.label_prior_],
        "config": asdict(synth.config_),
        "encoding": _encoding(synth.encoder_),
        "plan": asdict(synth.plan_),
        "privacy": {
            "target_epsilon": _json_float(synth.epsilon),
            "delta": synth.delta,
            "report": report.to_dict(),
            "ledger": synth.ledger_.to_dict(),
            **_unit(synth),
        },
        "versions": library_versions(),
    } | _release_json(synth)


def _release_json(synth: Any) -> dict[str, Any]:
    """The stored release's public parameters, when the model has one."""
    release = getattr(synth, "sample_release_", None)
    return {} if release is None else {"release": release.to_json()}


def _unit(synth: Any) -> dict[str, Any]:
    """The privacy unit's name and k, when the guarantee is per person (never a key of it)."""
    unit = synth.unit.to_dict()
    return {} if unit is None else {"unit": unit}


def _encoding(encoder: Any) -> dict[str, Any]:
    """How numeric columns are encoded: public cells (n_bins) and DP-placed cell edges."""
    n_bins = getattr(encoder, "n_bins", None)
    if n_bins is None:
        return {"n_bins": None}
    edges = {name: [float(e) for e in b.edges] for name, b in encoder.placed_cells.items()}
    masses = {
        name: [float(m) for m in b.fine_mass]
        for name, b in encoder.placed_cells.items()
        if b.fine_mass is not None
    }
    out = {"n_bins": n_bins, "edges": edges} | ({"cell_mass": masses} if masses else {})
    codes = {name: c.to_dict() for name, c in encoder.codes.items()}
    return out | {"codes": codes} if codes else out


def _json_float(x: float) -> float | str:
    return x if math.isfinite(x) else "inf"


def is_model_folder(path: Path) -> bool:
    """Whether ``path`` holds a model.json with the dpforge-model format marker."""
    try:
        info = json.loads((Path(path) / MANIFEST).read_text())
    except (OSError, ValueError):
        return False
    return isinstance(info, dict) and info.get("format") == FORMAT


# A model folder holds these files and nothing else; only such a folder is ever replaced.
MODEL_FOLDER = FolderKind("model folder", frozenset({WEIGHTS, MANIFEST, RELEASE}), is_model_folder)


def save_model(synth: Any, path: Path, *, overwrite: bool) -> Path:
    """Write the folder atomically: built beside ``path``, then renamed into place; an existing
    ``path`` is replaced only when it is a dpforge model folder (see ``storage.replace_folder``)."""

    def build(staging: Path) -> None:
        info = manifest(synth)
        digest = {DIGEST_KEY: manifest_digest(info)}  # catches later edits of model.json
        write_tensors(staging / WEIGHTS, synth.generator_.state_dict(), metadata=digest)
        release = getattr(synth, "sample_release_", None)
        if release is not None:
            write_tensors(staging / RELEASE, release.tensors(), metadata=digest)
        write_json(staging / MANIFEST, info)

    return replace_folder(Path(path), build, MODEL_FOLDER, overwrite=overwrite)


def read_model(
    path: str | Path,
) -> tuple[dict[str, Any], dict[str, torch.Tensor], SampleRelease | MarginalRelease | None]:
    """Read and check a model folder's manifest, weights and stored release (data only,
    nothing executed).

    ``model.json`` is checked against its declared format and its values against each other
    (:mod:`dpforge.model_check`), and against the digest the weights file carries.
    """
    path = Path(path)
    if not path.is_dir():
        raise ModelFileError(f"{path} is not a folder; give the model folder written by 'fit'")
    if not (path / MANIFEST).is_file():
        raise ModelFileError(
            f"{path / MANIFEST} is missing: {path} is not a complete dpforge model folder"
        )
    info = read_json_text(path / MANIFEST, "model file", ModelFileError)
    check_manifest(info, path / MANIFEST)
    weights = read_tensors(path / WEIGHTS)
    check_digest(info, read_tensor_metadata(path / WEIGHTS), path / MANIFEST)
    with torch.device("meta"):  # shapes only: a hand-edited size allocates nothing
        expected = _architecture(info, path / MANIFEST)[3].state_dict()
    check_weights(weights, expected, path / WEIGHTS)
    return info, weights, _read_release(path, info)


def _read_release(path: Path, info: dict[str, Any]) -> SampleRelease | MarginalRelease | None:
    """The stored release, checked against model.json (its digest, the tensor shapes)."""
    if "release" not in info:
        if (path / RELEASE).exists():
            raise ModelFileError(
                f"{path / RELEASE} is there but {path / MANIFEST} has no 'release': restore the "
                "model.json that fit wrote, or remove the stray file"
            )
        return None
    tensors = read_tensors(path / RELEASE)
    check_digest(info, read_tensor_metadata(path / RELEASE), path / MANIFEST)
    stored = info["release"]
    if stored["kind"] == TABLE_RELEASE:
        return _table_release(path, info, tensors)
    schema = schema_from_dict(info["schema"], allow_review=True)
    views = kind_views(stored["kind"])
    problem = release_tensor_error(tensors, release_shapes(stored, schema, views))
    if problem or (stored["kind"], tuple(stored["shape"])) != _kind_shape(schema):
        _refuse_release(path, problem or "another kind or shape")
    return SampleRelease.from_parts(info["release"], tensors, views)


def _table_release(path: Path, info: dict[str, Any], tensors: dict) -> MarginalRelease:
    """A table's stored marginals, checked against the cells of the encoder model.json gives."""
    with torch.device("meta"):
        encoder = _architecture(info, path / MANIFEST)[2]
    cells = {s.column: s.dim for s in encoder.spans if s.activation == SOFTMAX}
    label = encoder.schema.label_column
    if label is not None:
        cells[label.name] = encoder.n_classes
    problem = table_release_error(info["release"], tensors, cells)
    if problem:
        _refuse_release(path, problem)
    return MarginalRelease.from_parts(info["release"], tensors)


def _refuse_release(path: Path, problem: str) -> None:
    raise ModelFileError(
        f"{path / RELEASE} does not fit {path / MANIFEST}'s release and schema "
        f"({problem}): restore the files that fit wrote"
    )


def _kind_shape(schema: Any) -> tuple[str, tuple[int, ...]]:
    """The schema's kind and record shape."""
    kind = kind_of(schema)
    return kind.kind_name(schema), kind.record_shape(schema)


def restore(
    cls: type,
    info: dict[str, Any],
    weights: dict[str, torch.Tensor],
    release: SampleRelease | MarginalRelease | None = None,
) -> Any:
    """Rebuild a fitted ``cls`` (the Synthesizer) from what :func:`read_model` returned.

    ``info`` and ``weights`` must have passed the checks of :func:`read_model`.
    """
    try:
        synth = _rebuild(cls, info, weights)
        synth.sample_release_ = release
        return synth
    except (KeyError, TypeError, ValueError, RuntimeError) as exc:  # a gap in the checks
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ModelFileError(f"model.json and the weights do not fit together ({first})") from None


def _architecture(info: dict[str, Any], where: Path = Path(MANIFEST)) -> tuple:
    """The schema, config, encoder and (untrained) generator that model.json describes: the
    generator alone, whatever refined it (a version 1 folder's GAN config gives its generator
    fields; no discriminator is built)."""
    schema = schema_from_dict(info["schema"], allow_review=True)
    config = build_config(info["method"], info["config"])
    n_bins = (info.get("encoding") or {}).get("n_bins")
    if n_bins is None:
        encoder = kind_of(schema).encoder(schema)
    else:
        edges = info["encoding"].get("edges") or {}
        cells = bins_from_edges(
            schema.generated_columns, edges, info["encoding"].get("cell_mass") or {}
        )
        try:
            codes = codes_from_dict(schema.feature_columns, info["encoding"].get("codes") or {})
        except (ValueError, TypeError, IndexError) as exc:
            raise ModelFileError(f"{where}: $.encoding.codes: {exc}") from None
        encoder = TableEncoder(schema, n_bins=int(n_bins), cells=cells, codes=codes)
    try:
        spec = GeneratorConfig.of(config)
        generator = build_generator(
            encoder.layout, family_of(encoder.layout), spec, encoder.n_classes
        )
    except (ValueError, TypeError, RuntimeError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ModelFileError(f"{where}: $.config describes no generator ({first})") from None
    return schema, config, encoder, generator


def read_fitted(path: str | Path) -> FittedModel:
    """What sampling needs of a model folder (its schema, encoder, generator, label prior and
    stored release), without the facade: for workers that only sample."""
    info, weights, release = read_model(path)
    try:
        schema, _, encoder, generator = _architecture(info)
        generator.load_state_dict(weights, strict=True)
    except (KeyError, TypeError, ValueError, RuntimeError) as exc:  # a gap in the checks
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ModelFileError(f"model.json and the weights do not fit together ({first})") from None
    return FittedModel(schema, encoder, generator.eval(), _prior(info), "cpu", release)


def _prior(info: dict[str, Any]) -> np.ndarray | None:
    prior = info.get("label_prior")
    return None if prior is None else np.asarray(prior, dtype=np.float64)


def _rebuild(cls: type, info: dict[str, Any], weights: dict[str, torch.Tensor]) -> Any:
    schema, config, encoder, generator = _architecture(info)
    privacy = info["privacy"]
    synth = cls(
        schema,
        method=info["method"],
        epsilon=float(privacy["target_epsilon"]),
        delta=float(privacy["delta"]),
        progress=False,
        privacy_unit=(privacy.get("unit") or {}).get("column"),
        max_rows_per_unit=(privacy.get("unit") or {}).get("max_rows"),
    )
    generator.load_state_dict(weights, strict=True)
    synth.schema_, synth.encoder_, synth.config_ = schema, encoder, config
    synth.generator_ = generator.eval()
    synth.ledger_ = PrivacyLedger.from_dict(privacy["ledger"])
    synth.label_prior_ = _prior(info)
    synth.plan_ = TrainingPlan(**info["plan"])
    return synth
