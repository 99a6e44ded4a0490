"""Every ``dpforge`` command shown in README.md and docs/ exists, with the options it shows.

A reader copies the examples; one naming a command or an option that the command line does not
have fails at once. Each example in a fenced code block (and ``python -m dpforge.cli`` under
``torchrun``) is read as a shell line: its command and sub-command must be registered, and every
option it passes must be one of that command's options. Values are not checked: the examples
name files the reader has, and the commands' own tests check what they do.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import click
import pytest
import typer

from dpforge.cli import app
from dpforge.cli.options_file import read_options
from dpforge.errors import DpforgeError

ROOT = Path(__file__).resolve().parents[2]
_FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.M | re.S)
_START = re.compile(r"(?:^|&&|;|\|)\s*(?:\S*torchrun\b.*?-m dpforge\.cli|dpforge)\s+(.*)")


def examples(path: Path) -> list[str]:
    """The ``dpforge`` command lines of a file's code blocks, continuation lines joined and
    comments dropped."""
    found = []
    for block in _FENCE.findall(path.read_text(encoding="utf-8")):
        for line in block.replace("\\\n", " ").splitlines():
            code = re.split(r"(?:^|\s)#", line, maxsplit=1)[0]
            for part in re.split(r"&&|;", code):
                match = _START.search(part)
                if match:
                    found.append(match.group(1).strip())
    return found


def option_names(command: click.Command) -> set[str]:
    """Every spelling of every option of a command, --help included."""
    names = {"--help"}
    for param in command.params:
        if isinstance(param, click.Option):
            names.update(param.opts)
            names.update(param.secondary_opts)
    return names


def problem(root: click.Group, line: str) -> str | None:
    """Why an example's command or options do not exist, or None when they do."""
    words = [w for w in shlex.split(line) if w != "..."]
    command: click.Command = root
    while isinstance(command, click.Group):
        while words and words[0].startswith("-"):
            if words[0].split("=")[0] not in option_names(command):
                return f"'{words[0]}' is not an option of '{command.name}'"
            words.pop(0)
        if not words:
            return None
        name = words.pop(0)
        sub = command.commands.get(name)
        if sub is None:
            return f"'{name}' is not a command of '{command.name}'"
        command = sub
    valid = option_names(command)
    unknown = [w for w in words if w.startswith("--") and w.split("=")[0] not in valid]
    if unknown:
        return f"'{command.name}' has no option {', '.join(unknown)}"
    return None


def markdown_files() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


@pytest.fixture(scope="module")
def root() -> click.Group:
    command = typer.main.get_command(app)
    assert isinstance(command, click.Group)
    return command


def test_an_unknown_command_or_option_is_reported(root: click.Group) -> None:
    assert problem(root, "sample model/ -n 10 -o s.csv") is None
    assert problem(root, "budget show data.csv") is None
    assert "not a command" in problem(root, "train data.csv")
    assert "no option --no-such-option" in problem(root, "sample m/ --no-such-option")


def test_examples_are_read_from_code_blocks(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "dpforge fit outside a block\n```bash\n# dpforge in a comment\n"
        "dpforge fit a.csv --schema s.json \\\n  --out m  # trailing\nx && dpforge sample m\n```\n"
    )
    assert examples(page) == ["fit a.csv --schema s.json    --out m", "sample m"]


@pytest.mark.parametrize("path", markdown_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_example_is_a_real_command(path: Path, root: click.Group) -> None:
    wrong = [f"dpforge {line}: {why}" for line in examples(path) if (why := problem(root, line))]
    assert not wrong, "\n".join(wrong)


_TOML = re.compile(r"^```toml\n(.*?)^```", re.M | re.S)
KINDS = ("table", "image", "timeseries")
REFINERS = (None, "dpcgan", "dpwgan", "gswgan")


def toml_examples(path: Path) -> list[str]:
    """The options-file examples (```toml blocks) of a markdown file."""
    return _TOML.findall(path.read_text(encoding="utf-8"))


def option_file_problem(text: str, folder: Path) -> str | None:
    """Why an options-file example is refused for every data kind and refiner, or None when
    ``dpforge fit --options`` accepts it for one of them."""
    path = folder / "run.toml"
    path.write_text(text, encoding="utf-8")
    errors = []
    for kind in KINDS:
        for refiner in REFINERS:
            try:
                read_options(path, kind, refiner)
            except DpforgeError as error:
                errors.append(str(error))
            else:
                return None
    return errors[0]


@pytest.mark.parametrize("path", markdown_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_options_file_example_is_valid(path: Path, tmp_path: Path) -> None:
    wrong = [why for text in toml_examples(path) if (why := option_file_problem(text, tmp_path))]
    assert not wrong, "\n".join(wrong)


def test_a_wrong_key_in_an_options_example_is_reported(tmp_path: Path) -> None:
    assert option_file_problem("[anchor]\nshare = 0.5\n", tmp_path) is None
    assert "shar" in option_file_problem("[anchor]\nshar = 0.5\n", tmp_path)
