"""docs/architecture.md states how many branches on the kind are left outside ``kinds/``, and
names the grep that counts them: the figure it states is the one the grep gives.

A check of an input's type added outside ``kinds/`` (or a branch on the kind's name) changes
the count; the page must then say where it is and why, or the branch moves into its kind.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "architecture.md"


def grep_command(text: str) -> str:
    """The page's one indented ``grep`` command line."""
    found = [line.strip() for line in text.splitlines() if line.startswith("    grep -rnE")]
    if len(found) != 1:
        raise ValueError(f"the page holds {len(found)} indented grep commands, not one")
    return found[0]


def stated_count(text: str) -> int:
    """The figure the page states for now ("..., 19 now, ...")."""
    match = re.search(r"\b(\d+) now\b", text)
    if match is None:
        raise ValueError("the page states no count 'N now'")
    return int(match.group(1))


def test_the_page_states_the_count_its_grep_gives():
    text = PAGE.read_text(encoding="utf-8")
    command = grep_command(text)
    out = subprocess.run(command, shell=True, cwd=ROOT, capture_output=True, text=True, check=True)
    assert int(out.stdout.strip()) == stated_count(text)


def test_a_branch_added_outside_kinds_is_counted(tmp_path):
    """The grep counts a branch on the kind's name in a room outside ``kinds/`` and not one
    inside it."""
    command = grep_command(PAGE.read_text(encoding="utf-8"))
    for room in ("kinds", "cli"):
        (tmp_path / "src" / "dpforge" / room).mkdir(parents=True)
        branch = 'def f(schema):\n    return schema.kind == "image"\n'
        (tmp_path / "src" / "dpforge" / room / "branchy.py").write_text(branch)
    out = subprocess.run(command, shell=True, cwd=tmp_path, capture_output=True, text=True)
    assert out.stdout.strip() == "1"
