"""The one harness every benchmark script uses: data folder, seeds, timing, results files.

Numbers are only worth keeping if one can tell how they were made, so every script records the
command as run, the date, the machine and versions next to its figures, through ONE writer
(:func:`write_results`: JSON plus the Markdown next to it, each replaced atomically). The data
folder (``--data-dir``, else $DPFORGE_DATA_DIR, the variable the library reads too, else
``../shared/datasets`` next to the repository) and the seeds (``--seeds``: a count or a comma
list) are parsed here too. Each suite writes under ``bench/results/<suite>/`` (:func:`results`),
and every row a suite logs carries the command that made it (:func:`append_jsonl`).
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import platform
import shlex
import subprocess
import sys
import time
from dataclasses import replace
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / "bench" / "results"
DATA_DIR_ENV = "DPFORGE_DATA_DIR"  # what dpforge.datasets reads on its own too
DEFAULT_DATA_DIR = REPO.parent / "shared" / "datasets"


# -- command-line values ---------------------------------------------------------------------------
def data_dir(given: str | Path | None = None) -> Path:
    """The benchmark data folder: ``given``, else $DPFORGE_DATA_DIR, else ``../shared/datasets``
    relative to the repository root."""
    if given is not None:
        return Path(given)
    env = os.environ.get(DATA_DIR_ENV)
    return Path(env) if env else DEFAULT_DATA_DIR


def results(suite: str, name: str = "") -> Path:
    """Where suite ``suite`` writes: ``bench/results/<suite>/<name>``."""
    return RESULTS / suite / name if name else RESULTS / suite


def seed_list(text: str, first: int = 0) -> list[int]:
    """``"3"`` -> [first, first + 1, first + 2] (a count); ``"0,4"`` or ``"4,"`` -> [0, 4], [4]."""
    if "," in text:
        seeds = [int(v) for v in text.split(",") if v.strip()]
    else:
        seeds = list(range(first, first + int(text)))
    if not seeds:
        raise argparse.ArgumentTypeError(
            f"--seeds {text!r} gives no seed: a count >= 1, or a comma list such as 0,1 or 4,"
        )
    return seeds


def widths(text: str) -> tuple[int, ...]:
    """``"256,512"`` -> (256, 512): layer widths or channels given on the command line."""
    return tuple(int(w) for w in text.split(",") if w.strip())


def floats(text: str) -> tuple[float, ...]:
    """``"0.1,0.2"`` -> (0.1, 0.2): a list of numbers given on the command line."""
    return tuple(float(w) for w in text.split(",") if w.strip())


def with_overrides(config: Any, given: dict[str, Any]) -> Any:
    """``config`` (a dataclass) with the options the command line actually set (not None)."""
    return replace(config, **{k: v for k, v in given.items() if v is not None})


def add_data_dir(parser: argparse.ArgumentParser) -> None:
    """``--data-dir``; read it with :func:`data_dir` (``args.data_dir`` is None when unset)."""
    parser.add_argument(
        "--data-dir",
        default=None,
        help=f"folder holding the data sets (default ${DATA_DIR_ENV}, else {DEFAULT_DATA_DIR})",
    )


def add_seeds(parser: argparse.ArgumentParser, default: str = "3", first: bool = False) -> None:
    """``--seeds`` (a count or a comma list) and, with ``first``, ``--first-seed`` (where a count
    starts); read them with :func:`seeds`."""
    parser.add_argument(
        "--seeds", default=default, help=f"a count (3: 0, 1, 2) or a comma list (0,4) [{default}]"
    )
    if first:
        parser.add_argument("--first-seed", type=int, default=0, help="where a count starts")


def seeds(args: argparse.Namespace) -> list[int]:
    """The seeds that ``--seeds`` (and ``--first-seed``) name; a bad value exits with why."""
    try:
        return seed_list(str(args.seeds), getattr(args, "first_seed", 0))
    except (ValueError, argparse.ArgumentTypeError) as exc:
        raise SystemExit(f"error: {exc}") from None


def add_out(parser: argparse.ArgumentParser, default: Path | None = None) -> None:
    """``--out``: the results JSON (the Markdown goes next to it, same stem)."""
    parser.add_argument(
        "--out", type=Path, default=default, help="results JSON (Markdown written next to it)"
    )


def add_threads(parser: argparse.ArgumentParser, default: int | None = 1) -> None:
    """``--threads``: torch threads (1 is fastest on the shared 2-core machine)."""
    parser.add_argument("--threads", type=int, default=default, help="torch threads")


# -- data ----------------------------------------------------------------------------------------
def public_split(data: Any) -> tuple[Any, Any]:
    """(train, test) of a public table: the benchmarks' one split (a permutation seeded 0, the
    first two thirds train), indices reset."""
    import numpy as np

    order = np.random.default_rng(0).permutation(len(data))
    cut = (2 * len(data)) // 3
    return (
        data.iloc[order[:cut]].reset_index(drop=True),
        data.iloc[order[cut:]].reset_index(drop=True),
    )


# -- provenance ----------------------------------------------------------------------------------
def command_line(script: str, argv: list[str] | None = None) -> str:
    """The command as run: ``python bench/x.py ...`` (``argv``: the arguments of a call from
    Python). Prefixed with ``cd <dir> &&`` when run from a sub-folder of the repository, and
    with ``OMP_NUM_THREADS=n`` when that is set."""
    if argv is not None:
        path = Path(script).resolve()
        shown = path.relative_to(REPO) if path.is_relative_to(REPO) else path
        text = shlex.join(["python", str(shown), *argv])
    else:
        text = shlex.join(["python", *sys.argv])
    threads = os.environ.get("OMP_NUM_THREADS")
    text = f"OMP_NUM_THREADS={threads} {text}" if threads else text
    here = Path.cwd().resolve()
    if argv is None and here != REPO and here.is_relative_to(REPO):
        text = f"cd {here.relative_to(REPO)} && {text}"
    return text


def now() -> str:
    """The local date and time, to the second, with its UTC offset."""
    return datetime.datetime.now().astimezone().isoformat(timespec="seconds")


def machine() -> dict[str, Any]:
    """Platform, processor, cores, load and library versions, for the results files."""
    import torch

    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):  # no load average on this platform
        load = None
    return {
        "platform": platform.platform(),
        "processor": cpu_name(),
        "cpu_count": os.cpu_count(),
        "load_average_1min": load,
        "python": platform.python_version(),
        "torch": torch.__version__,
        "torch_threads": torch.get_num_threads(),
    }


def cpu_name() -> str:
    """The CPU model from /proc/cpuinfo where there is one, else what platform says."""
    info = Path("/proc/cpuinfo")
    lines = info.read_text().splitlines() if info.is_file() else []
    names = [line.split(":", 1)[1].strip() for line in lines if line.startswith("model name")]
    return names[0] if names else platform.processor() or platform.machine()


def versions() -> dict[str, str]:
    """Installed versions of the libraries the figures depend on."""
    out = {}
    for name in ("dpforge", "torch", "numpy", "pandas", "scikit-learn", "dp-accounting", "opendp"):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


def git_state() -> dict[str, Any]:
    """The commit the code ran at and the files under src/ and bench/ (results aside) that
    differed from it (taken at the start: others may commit while a benchmark runs)."""

    def git(*cmd: str) -> str:
        try:
            done = subprocess.run(["git", *cmd], cwd=REPO, capture_output=True, text=True)
        except OSError:
            return ""
        return done.stdout.rstrip("\n") if done.returncode == 0 else ""

    changed = git("status", "--porcelain", "--", "src", "bench", ":!bench/results")
    files = [line[3:] for line in changed.splitlines() if line.strip()]
    return {"commit": git("rev-parse", "HEAD").strip() or "unknown", "changed": files}


def provenance(script: str, argv: list[str] | None = None) -> dict[str, Any]:
    """What every results file starts with: command, date, machine, versions, git state."""
    return {
        "command": command_line(script, argv),
        "date": now(),
        "machine": machine(),
        "versions": versions(),
        "git": git_state(),
    }


# -- timing ----------------------------------------------------------------------------------------
class Timer:
    """Wall-clock and process CPU seconds of a ``with`` block (``.seconds``, ``.cpu_seconds``);
    ``.elapsed``: the wall time so far since the block (or, outside one, the Timer) started."""

    def __init__(self) -> None:
        self.__enter__()

    def __enter__(self) -> Timer:
        self._wall, self._cpu = time.perf_counter(), time.process_time()
        self.seconds = self.cpu_seconds = math.nan
        return self

    def __exit__(self, *exc: object) -> None:
        self.seconds = time.perf_counter() - self._wall
        self.cpu_seconds = time.process_time() - self._cpu

    @property
    def elapsed(self) -> float:
        return time.perf_counter() - self._wall


# -- results files ---------------------------------------------------------------------------------
def jsonable(value: Any) -> Any:
    """``value`` as plain JSON: infinite and NaN floats as "inf", "-inf", "nan"; tuples and
    arrays as lists; NumPy scalars as Python numbers; anything else unknown as its str."""
    if isinstance(value, float | np.floating):
        value = float(value)
        return value if math.isfinite(value) else str(value)
    if isinstance(value, dict):
        return {str(k) if not isinstance(k, str) else k: jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | np.ndarray):
        return [jsonable(v) for v in value]
    if isinstance(value, np.integer | np.bool_):
        return value.item()
    if value is None or isinstance(value, str | int | bool):
        return value
    return str(value)


def restored(value: Any) -> Any:
    """Undo :func:`jsonable` for floats: "inf", "-inf" and "nan" become floats again."""
    if isinstance(value, str) and value in ("inf", "-inf", "nan"):
        return float(value)
    if isinstance(value, dict):
        return {k: restored(v) for k, v in value.items()}
    if isinstance(value, list):
        return [restored(v) for v in value]
    return value


def read_results(path: Path) -> dict[str, Any]:
    """A results JSON written by :func:`write_results`, infinities restored."""
    return restored(json.loads(Path(path).read_text()))


def header(record: dict[str, Any], title: str) -> list[str]:
    """The Markdown title and provenance lines of a results file."""
    m = record.get("machine") or {}
    lines = [f"# {title}", "", f"Command: `{record.get('command', '?')}`", ""]
    if m:
        lines += [
            f"Date: {record.get('date', '?')}. Machine: {m.get('cpu_count')} CPU cores "
            f"({m.get('processor')}), {m.get('platform')}, Python {m.get('python')}, torch "
            f"{m.get('torch')} ({m.get('torch_threads')} thread(s)); shared with other jobs, so "
            "wall times are indicative.",
            "",
        ]
    return lines


def write_results(out: Path, record: dict[str, Any], title: str, body: list[str] | None) -> None:
    """Write ``record`` to ``out`` (JSON) and, next to it (``.md``), the title, the provenance
    of :func:`header` and ``body`` (Markdown lines). Each file is replaced atomically.
    ``body=None``: JSON only (where the ``.md`` next to it is a hand-written analysis)."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    record = {"command": command_line(sys.argv[0]), **record}
    _atomic(out, json.dumps(jsonable(record), indent=2) + "\n")
    if body is not None:
        text = "\n".join([*header(record, title), *body]).rstrip() + "\n"
        _atomic(out.with_suffix(".md"), text)


def _atomic(path: Path, text: str) -> None:
    (tmp := path.with_name(f".{path.name}.tmp")).write_text(text)
    tmp.replace(path)


def read_jsonl(path: str | Path | None) -> list[dict[str, Any]]:
    """The rows of a JSON-lines file (a tuning log); [] when there is none."""
    if path is None or not Path(path).is_file():
        return []
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]


def append_jsonl(path: str | Path, row: dict[str, Any]) -> None:
    """Append one row to a JSON-lines file (a tuning log), with the command that made it (the
    row's own ``command`` where it has one)."""
    row = {"command": command_line(sys.argv[0]), **row}
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with Path(path).open("a") as f:
        f.write(json.dumps(jsonable(row)) + "\n")


def log_row(path: str | Path, row: dict[str, Any]) -> None:
    """Print ``row`` as one JSON line (progress) and append it to ``path``."""
    print(json.dumps(row), flush=True)
    append_jsonl(path, row)
