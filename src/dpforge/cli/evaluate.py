"""``dpforge evaluate``: utility, fidelity, attacks and the privacy ledger of a model, as JSON.

The model samples synthetic rows (as many as the real training rows unless ``--rows``); the
metrics compare them with the real training rows and score classifiers on the real test rows,
through the frame of the model's kind (:mod:`dpforge.evaluation.frames`: tables
:mod:`dpforge.evaluation.evaluate`; images and series
:func:`dpforge.evaluation.array_report.evaluate_arrays`). The metrics file is computed from
private data and is NOT differentially private: it is never written into the model folder, and
the command says so.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import typer
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from dpforge.errors import DpforgeError, OutputExistsError
from dpforge.evaluation.classifier_names import CLASSIFIERS
from dpforge.storage import atomic_write

# The metrics (scikit-learn, torch) and the kinds' frames are imported where used: --help
# stays light.
__all__ = ["evaluate", "one_file", "parse_classifiers", "steps_shown"]

console = Console(stderr=True)


def parse_classifiers(text: str) -> tuple[str, ...]:
    """``"lr,rf"`` as ``("lr", "rf")``; ``"all"`` is every classifier."""
    if text.strip() == "all":
        return CLASSIFIERS
    chosen = tuple(dict.fromkeys(c.strip() for c in text.split(",") if c.strip()))
    unknown = [c for c in chosen if c not in CLASSIFIERS]
    if not chosen or unknown:
        raise DpforgeError(
            f"--classifiers {text!r}: give 'all' or a comma-separated list of "
            f"{', '.join(CLASSIFIERS)}"
        )
    return chosen


def _check_output(out: Path, model: Path, overwrite: bool) -> None:
    if out.exists() and not overwrite:
        raise OutputExistsError(f"{out} already exists; choose another name or pass --overwrite")
    if model.resolve() in out.resolve().parents:
        raise DpforgeError(
            f"{out} is inside the model folder {model}: the metrics are computed from private "
            "data and must not travel with the model; write them elsewhere"
        )


@contextmanager
def steps_shown(total: int) -> Iterator[Callable[[str], None]]:
    """A transient progress bar of ``total`` steps; yields what each finished step calls."""
    columns = (TextColumn("{task.description}"), BarColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=True) as progress:
        task = progress.add_task("evaluating", total=total)

        def done(name: str) -> None:
            progress.update(task, advance=1, description=f"done: {name}")

        yield done


def _privacy_lines(result: dict, out: Path) -> None:
    if result["attacks"] is not None:
        scores = ", ".join(
            f"{name} AUC {a['auc']:.3f}"
            + (f" (floor {a['floor_auc']:.3f})" if "floor_auc" in a else "")
            for name, a in result["attacks"]["attacks"].items()
        )
        console.print(
            f"membership attacks (0.5 = guessing; floor: real non-target training rows "
            f"released): {scores}"
        )
    console.print(f"privacy of the model: {result['privacy']['summary']}")
    console.print(
        "[bold red]NOT differentially private[/bold red]: these metrics are computed from "
        f"private data. Wrote {out}; keep it with the private data, not with the model."
    )


def one_file(paths: list[Path], flag: str) -> Path:
    """The one file of ``flag`` for a model (several files are related tables: --schema)."""
    if len(paths) != 1:
        raise DpforgeError(
            f"{flag} was given {len(paths)} times: one file for a model folder; several files "
            "(one per table) need --schema, the related tables' schema"
        )
    return paths[0]


def evaluate(
    model: Path = typer.Argument(
        ...,
        help="a model folder written by 'dpforge fit'; with --schema, the folder of synthetic "
        "tables written by 'dpforge sample' (one CSV per table)",
    ),
    real_train: list[Path] = typer.Option(
        ...,
        "--real-train",
        help="the real records the model was trained on (tables: CSV; images: folder or .npz; "
        "series: .npz or wide CSV); with --schema, once per table (file stem: table name)",
    ),
    real_test: list[Path] = typer.Option(
        ...,
        "--real-test",
        help="held-out real records, never used in training (same format); with --schema, "
        "once per table: parents never used in the fit, with all their rows",
    ),
    out: Path = typer.Option(..., "-o", "--out", help="the metrics file to write (JSON)"),
    schema: Path = typer.Option(
        None, "--schema", help="related tables: their relational schema (JSON)"
    ),
    rows: int = typer.Option(
        None, "--rows", help="synthetic rows to sample (default: as many as --real-train)"
    ),
    seed: int = typer.Option(0, "--seed", help="seed of the sampling and the classifiers"),
    classifiers: str = typer.Option(
        "all", "--classifiers", help=f"'all' or a comma-separated list of {','.join(CLASSIFIERS)}"
    ),
    attacks: bool = typer.Option(
        True, "--attacks/--no-attacks", help="run the membership-inference attacks"
    ),
    overwrite: bool = typer.Option(False, "--overwrite"),
) -> None:
    """Utility, fidelity, membership attacks and ledger of MODEL as JSON (NOT private)."""
    _check_output(out, model, overwrite)
    chosen = parse_classifiers(classifiers)
    if schema is not None:
        from dpforge.cli.evaluate_related import evaluate_related, refuse_single_table_options

        refuse_single_table_options({"--rows": rows is not None})
        options = {"schema": schema, "real_train": real_train, "real_test": real_test,
                   "classifiers": chosen, "attacks": attacks, "seed": seed}  # fmt: skip
        evaluate_related(model, out, options, overwrite)
        return
    paths = (one_file(real_train, "--real-train"), one_file(real_test, "--real-test"))
    _evaluate_model(model, paths, out, (rows, seed, attacks, chosen), overwrite)


def _evaluate_model(model: Path, paths: tuple[Path, Path], out: Path, options, overwrite: bool):
    """One model folder, through the frame of its kind (:mod:`dpforge.evaluation.frames`)."""
    from dpforge.evaluation.frames import Request, frame_of
    from dpforge.synthesizer import load

    rows, seed, attacks, chosen = options
    if rows is not None and rows < 1:
        raise DpforgeError(f"--rows must be at least 1, got {rows}")
    synth = load(model)
    frame = frame_of(synth.schema_)
    request = Request(seed=seed, rows=rows, classifiers=chosen, attacks=attacks)
    train, test = (frame.read_real(path, synth) for path in paths)
    with steps_shown(frame.steps(request, report=False)) as done:
        result = frame.evaluate(synth, train, test, request, done)
    text = json.dumps(result, indent=2, allow_nan=False) + "\n"
    atomic_write(out, lambda p: p.write_text(text), overwrite=overwrite)
    for line in frame.summary(result):
        console.print(line)
    _privacy_lines(result, out)
