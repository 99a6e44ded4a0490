"""docs/walkthrough.md runs as written (issue 46): a raw semicolon CSV with a repeated id,
missing values and a date column, through schema, review, fit, sample and report, to a page
that headless Chromium renders.

Every ```python block is executed and every ``$ `` line of a ```console block is run, in order,
in one empty folder: ``dpforge`` lines through the console script's entry point, the
``chromium`` line as a program.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from cli_support import run

pytestmark = pytest.mark.slow
PAGE = Path(__file__).resolve().parents[2] / "docs" / "walkthrough.md"
BLOCK = re.compile(r"```(python|console)\n(.*?)```", re.S)
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
QUIET_BROWSER = ["--disable-background-networking", "--disable-component-update", "--no-first-run"]


def steps() -> list[tuple[str, str]]:
    """The page's steps in order: ("python", code) or ("console", one command line)."""
    found = []
    for kind, body in BLOCK.findall(PAGE.read_text()):
        if kind == "python":
            found.append((kind, body))
        else:
            found += [(kind, line[2:]) for line in body.splitlines() if line.startswith("$ ")]
    return found


def _chromium(args: list[str], folder: Path) -> None:
    if CHROMIUM is None:
        pytest.fail("Chromium is not installed: apt-get install -y chromium (.ci/run does)")
    page = (folder / args[-1]).resolve().as_uri()
    profile = f"--user-data-dir={folder / 'chromium-profile'}"
    command = [CHROMIUM, *args[:-1], *QUIET_BROWSER, profile, page]
    subprocess.run(command, cwd=folder, capture_output=True, timeout=120, check=True)


def test_the_page_has_every_step_of_the_walkthrough():
    commands = [text.split()[:2] for kind, text in steps() if kind == "console"]
    assert [c[1] for c in commands if c[0] == "dpforge"] == [
        "schema", "fit", "sample", "report",
    ]  # fmt: skip
    assert commands[-1][0] == "chromium"


def test_the_walkthrough_runs_as_written(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    for kind, text in steps():
        if kind == "python":
            exec(compile(text, str(PAGE), "exec"), {"__name__": "walkthrough"})  # noqa: S102
            continue
        args = shlex.split(text)
        if args[0] == "chromium":
            _chromium(args[1:], tmp_path)
            continue
        code, printed = run(args[1:], monkeypatch, capsys)
        assert code == 0, f"{text}\n{printed}"
    first_line = (tmp_path / "flights_train.csv").read_text().splitlines()[0]
    assert ";" in first_line and "," not in first_line  # the raw file is semicolon-separated
    report = (tmp_path / "report.html").read_text()
    assert "per person (5 rows)" in report and "plane_id" in report
    assert (tmp_path / "report.png").stat().st_size > 10_000
    assert os.listdir(tmp_path / "flights-model")
