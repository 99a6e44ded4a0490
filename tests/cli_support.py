"""Calling the command line as a user does, from tests (imported by the CLI test modules)."""

from __future__ import annotations

import sys

from dpforge.cli import main


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
