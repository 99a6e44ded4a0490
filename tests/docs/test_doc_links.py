"""Every link in README.md and docs/ resolves, and the documentation site builds.

A reader follows the README into docs/ and from page to page; a link that leads nowhere is a
defect like any other. Checked without a network: a relative link must name a file that exists
(a docs page may link only inside docs/, since the site holds docs/ alone; the README may name
any file of the repository) and an ``#anchor`` must be a heading of its target. External
``http(s)`` links are checked for syntax only. If MkDocs is installed, ``mkdocs build --strict``
must pass as well: the site that ``mkdocs.yml`` describes builds with no warning.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"

# [text](target) or [text](target "title"); images (![alt](target)) are links too.
_LINK = re.compile(r"\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_REFERENCE = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+\"[^\"]*\")?\s*$", re.M)
_FENCE = re.compile(r"^(```|~~~).*?^\1", re.M | re.S)
_CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1", re.S)
_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.M)


def markdown_files() -> list[Path]:
    """README.md and every page under docs/."""
    return [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]


def _prose(text: str) -> str:
    """The text without fenced code blocks and code spans, where brackets are not links."""
    return _CODE_SPAN.sub("", _FENCE.sub("", text))


def links(path: Path) -> list[str]:
    """Every link target written in a markdown file, in order."""
    text = _prose(path.read_text(encoding="utf-8"))
    return _LINK.findall(text) + _REFERENCE.findall(text)


def slug(heading: str) -> str:
    """A heading's anchor as MkDocs (Python-Markdown's toc) and GitHub both write it for the
    plain headings these pages use: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*_]|\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = re.sub(r"[^\w\s-]", "", text.encode("ascii", "ignore").decode()).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def anchors(path: Path) -> set[str]:
    """The anchors a markdown file's headings define."""
    text = _FENCE.sub("", path.read_text(encoding="utf-8"))
    return {slug(h) for h in _HEADING.findall(text)}


def problem(source: Path, target: str) -> str | None:
    """Why a link target does not resolve, or None when it does."""
    parsed = urlparse(target)
    if parsed.scheme in ("http", "https"):
        return None if parsed.netloc and "." in parsed.netloc else "malformed URL"
    if parsed.scheme == "mailto":
        return None if "@" in parsed.path else "malformed address"
    if parsed.scheme or target.startswith("/"):
        return "only relative links and http(s) URLs are allowed"
    file = (source.parent / unquote(parsed.path)).resolve() if parsed.path else source
    if not file.exists():
        return "no such file"
    if source.is_relative_to(DOCS) and not file.is_relative_to(DOCS):
        return "a docs page may link only inside docs/ (name other files as `path`)"
    if parsed.fragment and file.suffix == ".md" and parsed.fragment not in anchors(file):
        return f"no heading #{parsed.fragment} in {file.relative_to(ROOT)}"
    return None


def test_the_pages_exist() -> None:
    assert (ROOT / "README.md").is_file()
    assert len(list(DOCS.rglob("*.md"))) >= 6


def test_slug_matches_the_site() -> None:
    assert slug("What the guarantee means, in plain words") == (
        "what-the-guarantee-means-in-plain-words"
    )
    assert slug("Spark and `torchrun`") == "spark-and-torchrun"


@pytest.mark.skipif(importlib.util.find_spec("markdown") is None, reason="needs mkdocs")
def test_slug_is_the_one_mkdocs_writes() -> None:
    from markdown.extensions.toc import slugify

    for path in DOCS.rglob("*.md"):
        for heading in _HEADING.findall(_FENCE.sub("", path.read_text(encoding="utf-8"))):
            plain = re.sub(r"`([^`]*)`", r"\1", heading)
            assert slug(heading) == slugify(plain, "-"), f"{path.name}: {heading}"


def test_a_missing_target_or_heading_is_reported() -> None:
    readme = ROOT / "README.md"
    assert problem(readme, "docs/privacy.md#the-privacy-unit") is None
    assert problem(readme, "docs/privacy.md#no-such-heading").startswith("no heading")
    assert problem(readme, "docs/no-such-page.md") == "no such file"
    assert problem(DOCS / "index.md", "../README.md").startswith("a docs page may link only")
    assert problem(readme, "https://example.org/x") is None
    assert problem(readme, "https:/broken") == "malformed URL"


def test_links_in_code_are_not_links() -> None:
    assert _LINK.findall(_prose("`[a](nowhere.md)` and\n```\n[b](gone.md)\n```\n[c](x.md)")) == [
        "x.md"
    ]


@pytest.mark.parametrize("path", markdown_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_link_resolves(path: Path) -> None:
    broken = [f"{t}: {why}" for t in links(path) if (why := problem(path, t))]
    assert not broken, f"{path.relative_to(ROOT)}: " + "; ".join(broken)


def test_readme_is_short() -> None:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").count("\n")
    assert lines <= 250, f"README.md has {lines} lines; the rest belongs in docs/"


@pytest.mark.skipif(
    importlib.util.find_spec("mkdocs") is None,
    reason="mkdocs is not installed (the test extra installs it: pip install -e '.[test]')",
)
def test_the_site_builds_strictly(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    assert (tmp_path / "site" / "index.html").is_file()
