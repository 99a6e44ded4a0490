"""Save and load a released model folder.

A model folder holds exactly what may be published:
- ``generator.safetensors``: the generator's weights (post-processing of the private training);
- ``model.json``: the public schema (declared or DP-estimated), the configuration, the DP label
  prior, the privacy ledger and its epsilon, and library versions.
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

from dpforge.data.encoder import TableEncoder
from dpforge.data.kinds import kind_of
from dpforge.errors import ModelFileError
from dpforge.methods import METHODS
from dpforge.nets.families import build_networks
from dpforge.privacy.ledger import PrivacyLedger
from dpforge.schema.array import schema_from_dict
from dpforge.statistics.cells import bins_from_edges
from dpforge.storage import (
    FolderKind,
    read_json,
    read_tensors,
    replace_folder,
    write_json,
    write_tensors,
)
from dpforge.training import TrainingPlan

FORMAT = "dpforge-model"
FORMAT_VERSION = 1
WEIGHTS = "generator.safetensors"
MANIFEST = "model.json"


def _versions() -> dict[str, str]:
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
        "method": synth.method,
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
        },
        "versions": _versions(),
    }


def _encoding(encoder: Any) -> dict[str, Any]:
    """How numeric columns are encoded: public cells (n_bins) and DP-placed cell edges."""
    n_bins = getattr(encoder, "n_bins", None)
    if n_bins is None:
        return {"n_bins": None}
    edges = {name: [float(e) for e in b.edges] for name, b in encoder.placed_cells.items()}
    return {"n_bins": n_bins, "edges": edges}


def _json_float(x: float) -> float | str:
    return x if math.isfinite(x) else "inf"


def is_model_folder(path: Path) -> bool:
    """Whether ``path`` holds a model.json with the dpforge-model format marker."""
    try:
        info = json.loads((Path(path) / MANIFEST).read_text())
    except (OSError, ValueError):
        return False
    return isinstance(info, dict) and info.get("format") == FORMAT


# A model folder holds these two files and nothing else; only such a folder is ever replaced.
MODEL_FOLDER = FolderKind("model folder", frozenset({WEIGHTS, MANIFEST}), is_model_folder)


def save_model(synth: Any, path: Path, *, overwrite: bool) -> Path:
    """Write the folder atomically: built beside ``path``, then renamed into place; an existing
    ``path`` is replaced only when it is a dpforge model folder (see ``storage.replace_folder``)."""

    def build(staging: Path) -> None:
        write_tensors(staging / WEIGHTS, synth.generator_.state_dict())
        write_json(staging / MANIFEST, manifest(synth))

    return replace_folder(Path(path), build, MODEL_FOLDER, overwrite=overwrite)


def read_model(path: str | Path) -> tuple[dict[str, Any], dict[str, torch.Tensor]]:
    """Read and check a model folder's manifest and weights (data only, nothing executed)."""
    path = Path(path)
    if not path.is_dir():
        raise ModelFileError(f"{path} is not a folder; give the model folder written by 'fit'")
    info = read_json(path / MANIFEST)
    if info.get("format") != FORMAT or info.get("format_version") != FORMAT_VERSION:
        raise ModelFileError(
            f"{path} is not a dpforge model folder (format {info.get('format')!r})"
        )
    return info, read_tensors(path / WEIGHTS)


def restore(cls: type, info: dict[str, Any], weights: dict[str, torch.Tensor]) -> Any:
    """Rebuild a fitted ``cls`` (the Synthesizer) from what :func:`read_model` returned."""
    try:
        return _rebuild(cls, info, weights)
    except (KeyError, TypeError, ValueError, RuntimeError) as exc:
        raise ModelFileError(f"model.json or weights are inconsistent ({exc})") from None


def _rebuild(cls: type, info: dict[str, Any], weights: dict[str, torch.Tensor]) -> Any:
    schema = schema_from_dict(info["schema"], allow_review=True)
    method = info["method"]
    if method not in METHODS:
        raise ModelFileError(f"unknown method '{method}' in model.json; known: {sorted(METHODS)}")
    config = METHODS[method][1](**_tuples(info["config"]))
    privacy = info["privacy"]
    synth = cls(
        schema,
        method=method,
        epsilon=float(privacy["target_epsilon"]),
        delta=float(privacy["delta"]),
        method_options=config,
        progress=False,
    )
    n_bins = (info.get("encoding") or {}).get("n_bins")
    if n_bins is None:
        encoder = kind_of(schema).encoder(schema)
    else:
        edges = info["encoding"].get("edges") or {}
        cells = bins_from_edges(schema.feature_columns, edges)
        encoder = TableEncoder(schema, n_bins=int(n_bins), cells=cells)
    generator = build_networks(encoder.layout, config, encoder.n_classes).make_generator()
    generator.load_state_dict(weights, strict=True)
    synth.schema_, synth.encoder_, synth.config_ = schema, encoder, config
    synth.generator_ = generator.eval()
    synth.ledger_ = PrivacyLedger.from_dict(privacy["ledger"])
    prior = info.get("label_prior")
    synth.label_prior_ = None if prior is None else np.asarray(prior, dtype=np.float64)
    synth.plan_ = TrainingPlan(**info["plan"])
    return synth


def _tuples(config: dict[str, Any]) -> dict[str, Any]:
    return {k: tuple(v) if isinstance(v, list) else v for k, v in config.items()}
