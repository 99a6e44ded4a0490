"""Calling the command line as a user does, from tests (imported by the CLI test modules)."""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from dpforge.cli import main

# The fastest private fit: the discriminator alone (no anchoring) at a fixed noise multiplier.
FAST_OPTIONS = {
    "anchor": {"share": 0},
    "refine": {"batch_size": 64, "noise_multiplier": 1.5},
    "output": {"progress": False},
}
QUIET = {"output": {"progress": False}}


def run(args, monkeypatch, capsys, *, unwrap: bool = False) -> tuple[int, str]:
    """Call the console script's entry point; return (exit code, stderr + stdout).

    ``unwrap`` joins the lines Rich wrapped at the terminal's width into one.
    """
    monkeypatch.setattr(sys, "argv", ["dpforge", *map(str, args)])
    code = 0
    try:
        main()
    except SystemExit as exc:
        code = exc.code or 0
    captured = capsys.readouterr()
    text = captured.err + captured.out
    return code, " ".join(text.split()) if unwrap else text


def save_without_release(synth, folder) -> None:
    """Save ``synth`` as a folder saved before dpforge stored its release (no
    release.safetensors), leaving ``synth`` as it was."""
    release, synth.sample_release_ = synth.sample_release_, None
    try:
        synth.save(folder)
    finally:
        synth.sample_release_ = release


def options_file(sections: dict[str, dict[str, Any]], folder: Path | None = None) -> Path:
    """An options file for ``dpforge fit --options`` holding ``sections`` (JSON: the same keys
    and checks as TOML). Without ``folder``: one file per content in the temporary folder,
    so that a test's own folder holds only what the command wrote."""
    text = json.dumps(sections, sort_keys=True)
    if folder is None:
        folder = Path(tempfile.gettempdir()) / "dpforge-test-options"
        folder.mkdir(exist_ok=True)
    path = Path(folder) / f"{hashlib.sha256(text.encode()).hexdigest()[:16]}.json"
    if not path.exists():
        partial = path.with_suffix(f".{os.getpid()}.part")
        partial.write_text(text)
        partial.replace(path)
    return path


def merged(base: dict[str, dict[str, Any]], more: dict[str, dict[str, Any]]) -> dict:
    """``base`` with the keys of ``more`` added section by section."""
    out = {section: dict(keys) for section, keys in base.items()}
    for section, keys in more.items():
        out.setdefault(section, {}).update(keys)
    return out


def fast(more: dict[str, dict[str, Any]] | None = None, seed: int | None = 0) -> list[str]:
    """Arguments of the fastest private fit (``FAST_OPTIONS``, refined by dpcgan), with the
    sections of ``more`` added."""
    args = ["--refine", "dpcgan", "--options", str(options_file(merged(FAST_OPTIONS, more or {})))]
    return args if seed is None else [*args, "--seed", str(seed)]


def quiet(more: dict[str, dict[str, Any]] | None = None) -> list[str]:
    """``--options`` with no progress bar, and the sections of ``more``."""
    return ["--options", str(options_file(merged(QUIET, more or {})))]
