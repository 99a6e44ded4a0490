"""Resume is a privacy event (design.md section 2, rule 9).

A resumed run continues a plan, a ledger and networks that were fixed by the options and the data
of the run that wrote the checkpoint. Resuming with any of them changed would make the printed
epsilon describe a run that did not happen (issue 13.1: 200 GS-WGAN steps at B = 32, resumed at
B = 1, were charged as 715 steps at B = 1: epsilon 1.12 printed for 4.03 spent). So a checkpoint
stores every setting that fixes the accounting, and a fingerprint of the data, and a resume with
any difference is refused before the first step.

The fingerprint is a SHA-256 of the encoded records and labels. It is derived from private data,
so it is stored only in the private checkpoint (never in a model folder) and never printed.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np

from dpforge.errors import PrivacyError

SETTINGS_KEY = "privacy_settings"
DATA_KEY = "data_sha256"
_MISSING = "(not recorded)"


def data_fingerprint(features: np.ndarray, labels: np.ndarray | None) -> str:
    """SHA-256 of the encoded records (shape, dtype and values) and of their labels."""
    digest = hashlib.sha256()
    for array in (features, labels):
        if array is None:
            digest.update(b"none")
            continue
        array = np.ascontiguousarray(array)
        digest.update(f"{array.dtype.str}{array.shape}".encode())
        digest.update(array.tobytes())
    return digest.hexdigest()


def flat_settings(settings: dict[str, Any]) -> dict[str, Any]:
    """Nested settings as one level of dotted keys, in their JSON form (tuples are lists)."""
    flat: dict[str, Any] = {}
    _flatten("", json.loads(json.dumps(settings, default=str)), flat)
    return flat


def _flatten(prefix: str, value: Any, out: dict[str, Any]) -> None:
    if isinstance(value, dict) and value:
        for key, item in value.items():
            _flatten(f"{prefix}{key}.", item, out)
    elif isinstance(value, list) and value and any(isinstance(v, dict | list) for v in value):
        for index, item in enumerate(value):
            _flatten(f"{prefix}{index}.", item, out)
    else:
        out[prefix[:-1]] = value


def check_resume(stored: dict[str, Any] | None, current: dict[str, Any], folder: Path) -> None:
    """Refuse to resume from ``folder`` unless every stored setting equals the current one.

    ``stored`` and ``current`` are :func:`flat_settings` results (``current`` may hold the data
    fingerprint under ``DATA_KEY``). The message names the first differing setting with its old
    and new values; for the data it says only that they differ.
    """
    if not stored:
        raise PrivacyError(
            f"the checkpoint in {folder} does not record the settings that fix its privacy "
            "accounting (an older dpforge wrote it); delete it and start the run again"
        )
    for key in sorted(set(stored) | set(current)):
        old, new = stored.get(key, _MISSING), current.get(key, _MISSING)
        if old == new:
            continue
        if key == DATA_KEY:
            raise PrivacyError(
                f"cannot resume from {folder}: the data differ from those the checkpoint was "
                "made on; resume on the same data, or use another --checkpoint-dir"
            )
        raise PrivacyError(
            f"cannot resume from {folder}: it was made with {key} = {old!r}, not {new!r}; "
            "resume with the same options, or use another --checkpoint-dir (a new run pays "
            "its budget again)"
        )
