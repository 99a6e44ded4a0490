"""Files on disk: atomic writes, and tensors as safetensors + everything else as JSON.

Nothing here pickles or executes anything it reads: a model folder or checkpoint is data.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from safetensors import safe_open
from safetensors.torch import load_file, save_file

from dpforge.errors import ModelFileError, OutputExistsError


def atomic_write(path: Path, write: Callable[[Path], None], *, overwrite: bool) -> None:
    """Call ``write(tmp)`` on a temporary file beside ``path``, then rename it into place.

    An interrupted or failed write leaves no partial ``path`` behind.
    """
    path = Path(path)
    if path.exists() and not overwrite:
        raise OutputExistsError(f"{path} already exists; choose another name or pass --overwrite")
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        write(tmp)
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; give the user's usual mode
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def _umask() -> int:
    """The process's file-creation mask (read by setting it, then restoring it)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_json(path: Path, payload: dict[str, Any], *, overwrite: bool = True) -> None:
    atomic_write(path, lambda p: p.write_text(json.dumps(payload, indent=2)), overwrite=overwrite)


def read_json(path: Path) -> dict[str, Any]:
    try:
        return json.loads(Path(path).read_text())
    except FileNotFoundError:
        raise ModelFileError(f"{path} is missing: this is not a complete dpforge folder") from None
    except json.JSONDecodeError as exc:
        raise ModelFileError(f"{path} is not valid JSON ({exc.msg}, line {exc.lineno})") from None


def write_tensors(
    path: Path,
    tensors: dict[str, torch.Tensor],
    *,
    overwrite: bool = True,
    metadata: dict[str, str] | None = None,
) -> None:
    """Write ``tensors`` (and text ``metadata`` in the same file) atomically as safetensors."""
    cpu = {k: v.detach().to("cpu").contiguous() for k, v in tensors.items()}
    atomic_write(path, lambda p: save_file(cpu, str(p), metadata=metadata), overwrite=overwrite)


def read_tensors(path: Path) -> dict[str, torch.Tensor]:
    if not Path(path).is_file():
        raise ModelFileError(f"{path} is missing: this is not a complete dpforge folder")
    try:
        return load_file(str(path))
    except Exception as exc:  # safetensors raises its own error types for corrupt files
        raise ModelFileError(f"{path} is not a valid safetensors file: {exc}") from None


def read_tensor_metadata(path: Path) -> dict[str, str]:
    """The text metadata stored with the tensors of a safetensors file ({} if none)."""
    if not Path(path).is_file():
        raise ModelFileError(f"{path} is missing: this is not a complete dpforge folder")
    try:
        with safe_open(str(path), framework="pt") as handle:
            return dict(handle.metadata() or {})
    except Exception as exc:  # safetensors raises its own error types for corrupt files
        raise ModelFileError(f"{path} is not a valid safetensors file: {exc}") from None


def flatten_state(prefix: str, state: Any, tensors: dict[str, torch.Tensor]) -> Any:
    """Move every tensor of a nested state (e.g. an optimizer's) into ``tensors``.

    Returns the JSON-safe skeleton, where each tensor is replaced by {"tensor": key}.
    """
    if isinstance(state, torch.Tensor):
        tensors[prefix] = state
        return {"tensor": prefix}
    if isinstance(state, dict):
        return {"dict": [[k, flatten_state(f"{prefix}.{k}", v, tensors)] for k, v in state.items()]}
    if isinstance(state, list | tuple):
        return {"list": [flatten_state(f"{prefix}.{i}", v, tensors) for i, v in enumerate(state)]}
    if state is None or isinstance(state, bool | int | float | str):
        return {"value": state}
    raise TypeError(f"cannot store {type(state).__name__} at {prefix}")


def unflatten_state(skeleton: Any, tensors: dict[str, torch.Tensor]) -> Any:
    """Inverse of :func:`flatten_state`."""
    if "tensor" in skeleton:
        return tensors[skeleton["tensor"]]
    if "dict" in skeleton:
        return {k: unflatten_state(v, tensors) for k, v in skeleton["dict"]}
    if "list" in skeleton:
        return [unflatten_state(v, tensors) for v in skeleton["list"]]
    return skeleton["value"]
