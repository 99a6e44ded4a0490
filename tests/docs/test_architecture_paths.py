"""Every source file the architecture and contributing pages name exists.

docs/architecture.md says where each part of the house lives (``statistics/rounds.py``,
``pipeline/plan.py``, ``fitting.py``, ...). A module that was removed or moved while the page
still names it leads a maintainer nowhere, as a dead link does a reader. A name is a path in
backticks ending in ``.py``; it exists when a file of ``src/``, ``tests/`` or ``bench/`` is
that path or ends with it (the pages name modules relative to the room they describe).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = ("docs/architecture.md", "docs/contributing.md")
_NAMED = re.compile(r"`([A-Za-z0-9_./]+\.py)`")


def _files() -> list[str]:
    return [p.relative_to(ROOT).as_posix() for d in ("src", "tests", "bench")
            for p in (ROOT / d).rglob("*.py")]  # fmt: skip


def named_paths(text: str) -> list[str]:
    """The ``.py`` paths a page names in code spans, in order, once each."""
    return list(dict.fromkeys(_NAMED.findall(text)))


def test_named_paths_are_found_in_code_spans():
    text = "see `statistics/rounds.py` and `plan.py`, not plan.py or `dpforge fit`"
    assert named_paths(text) == ["statistics/rounds.py", "plan.py"]


@pytest.mark.parametrize("page", PAGES)
def test_every_module_a_page_names_exists(page):
    files = _files()
    named = named_paths((ROOT / page).read_text(encoding="utf-8"))
    assert named, f"{page} names no module: the pattern no longer matches the page"
    missing = [n for n in named if not any(f == n or f.endswith("/" + n) for f in files)]
    assert not missing, f"{page} names modules that do not exist: {missing}"
