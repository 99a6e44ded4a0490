"""The related tables' facade (``dpforge.relational``) is a user's entry point of its own level:
it composes the table facade, and no module but the command line imports it
(docs/architecture.md)."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "dpforge"


def _imports(path: Path) -> set[str]:
    """The dpforge modules a source file imports (at any depth of the file)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


def test_only_the_command_line_imports_the_related_tables_facade():
    importers = sorted(
        str(p.relative_to(SRC)) for p in SRC.rglob("*.py") if "dpforge.relational" in _imports(p)
    )
    assert importers and all(name.startswith("cli/") for name in importers), importers
