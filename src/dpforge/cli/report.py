"""``dpforge report``: one self-contained HTML page of a model's evaluation (or its release page).

Without ``--release`` the page is computed from the real training and test rows and is NOT
differentially private: it is never written into the model folder, and the command says where
it went. With ``--release`` it holds only what the model already makes public (ledger, schema,
synthetic records' statistics and pictures) and needs no real data.
"""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console

from dpforge.cli.evaluate import one_file, parse_classifiers, steps_shown
from dpforge.errors import DpforgeError, OutputExistsError
from dpforge.evaluation.classifier_names import CLASSIFIERS

__all__ = ["report"]

console = Console(stderr=True)


def _pair(text: str | None) -> tuple[str, str] | None:
    if text is None:
        return None
    names = [n.strip() for n in text.split(",") if n.strip()]
    if len(names) != 2:
        raise DpforgeError(f"--pair {text!r}: give two numeric columns as A,B")
    return names[0], names[1]


def _check_output(out: Path, model: Path, overwrite: bool) -> None:
    if out.exists() and not overwrite:
        raise OutputExistsError(f"{out} already exists; choose another name or pass --overwrite")
    if model.resolve() in out.resolve().parents:
        raise DpforgeError(
            f"{out} is inside the model folder {model}: reports must not be written into the "
            "model folder; write them elsewhere"
        )


def report(
    model: Path = typer.Argument(
        ...,
        help="a model folder written by 'dpforge fit'; with --schema, the folder of synthetic "
        "tables written by 'dpforge sample' (one CSV per table)",
    ),
    out: Path = typer.Option(..., "-o", "--out", help="the HTML file to write"),
    real_train: list[Path] = typer.Option(
        None,
        "--real-train",
        help="the real records the model was trained on (tables: CSV; images: folder or .npz; "
        "series: .npz or wide CSV); with --schema, once per table (file stem: table name)",
    ),
    real_test: list[Path] = typer.Option(
        None,
        "--real-test",
        help="held-out real records, never used in training (same format); with --schema, "
        "once per table",
    ),
    schema: Path = typer.Option(
        None, "--schema", help="related tables: their relational schema (JSON)"
    ),
    release: bool = typer.Option(
        False, "--release", help="only public content (no real data): ledger, schema, samples"
    ),
    rows: int = typer.Option(None, "--rows", help="synthetic rows to sample"),
    pair: str = typer.Option(None, "--pair", help="two numeric columns A,B for the 2-D density"),
    seed: int = typer.Option(0, "--seed", help="seed of the sampling, classifiers and attacks"),
    classifiers: str = typer.Option(
        "lr,rf,mlp,gb", "--classifiers", help=f"'all' or a list of {','.join(CLASSIFIERS)}"
    ),
    attacks: bool = typer.Option(True, "--attacks/--no-attacks", help="membership attacks"),
    overwrite: bool = typer.Option(False, "--overwrite"),
) -> None:
    """One self-contained HTML report of MODEL (NOT differentially private unless --release)."""
    from dpforge.evaluation.report import write_report

    _check_output(out, model, overwrite)
    if rows is not None and rows < 1:
        raise DpforgeError(f"--rows must be at least 1, got {rows}")
    real_train, real_test = real_train or [], real_test or []
    if release and (real_train or real_test):
        raise DpforgeError("--release reads no real data: drop --real-train and --real-test")
    if not release and (not real_train or not real_test):
        raise DpforgeError(
            "give --real-train and --real-test (the full report), or --release (public only)"
        )
    args = {
        "real_train": real_train, "real_test": real_test, "seed": seed, "rows": rows,
        "classifiers": parse_classifiers(classifiers), "attacks": attacks, "pair": _pair(pair),
    }  # fmt: skip
    if release and schema is not None:
        raise DpforgeError(
            "--release reads a model folder, and a related tables' model folder holds its "
            "schema: give the folder 'dpforge fit' wrote as MODEL and leave out --schema"
        )
    if schema is not None:
        write_report(_related_report(model, schema, args), out, model, overwrite)
        console.print(_NOT_PRIVATE.format(out=out))
        return
    if release and _related_model(model):
        _related_release(model, args, out, overwrite)
        return
    if not release:
        args["real_train"] = one_file(real_train, "--real-train")
        args["real_test"] = one_file(real_test, "--real-test")
    _model_report(model, args, release, out, overwrite)


def _related_model(model: Path) -> bool:
    from dpforge.relational_io import is_relational_folder

    return is_relational_folder(model)


def _related_release(model: Path, args: dict, out: Path, overwrite: bool) -> None:
    """The public page of a related tables' model folder (``--rows``: the parents sampled)."""
    from dpforge.evaluation.report import write_report
    from dpforge.evaluation.report_relational_release import relational_release_report
    from dpforge.relational import RelationalSynthesizer

    if args["pair"] is not None:
        raise DpforgeError("--pair applies to one table's model: leave it out for related tables")
    related = RelationalSynthesizer.load(model)
    text = relational_release_report(related, n_parents=args["rows"] or 500, seed=args["seed"])
    write_report(text, out, model, overwrite=overwrite)
    console.print(f"wrote the release report {out} (public content only)")


def _model_report(model: Path, args: dict, release: bool, out: Path, overwrite: bool) -> None:
    """The page of one model folder: full, or (``release``) public content only."""
    from dpforge.evaluation.report import release_report, write_report
    from dpforge.synthesizer import load

    rows, seed = args["rows"], args["seed"]
    synth = load(model)
    if release:
        text = release_report(synth, n_synthetic=rows or 2000, seed=seed, pair=args["pair"])
    else:
        text = _full_report(synth, args)
    write_report(text, out, model, overwrite=overwrite)
    if release:
        console.print(f"wrote the release report {out} (public content only)")
    else:
        console.print(_NOT_PRIVATE.format(out=out))


def _full_report(synth, args: dict) -> str:
    """The full page, through the frame of the model's kind (:mod:`dpforge.evaluation.frames`)."""
    from dpforge.evaluation.frames import Request, frame_of

    frame = frame_of(synth.schema_)
    request = Request(seed=args["seed"], rows=args["rows"], classifiers=args["classifiers"],
                      attacks=args["attacks"], pair=args["pair"])  # fmt: skip
    train, test = (frame.read_real(args[split], synth) for split in ("real_train", "real_test"))
    with steps_shown(frame.steps(request, report=True)) as done:
        return frame.report(synth, train, test, request, done)


_NOT_PRIVATE = (
    "[bold red]NOT differentially private[/bold red]: wrote {out}, computed from the private "
    "data; keep it with the private data, not with the model."
)


def _related_report(folder: Path, schema: Path, args: dict) -> str:
    """The related-tables page of the synthetic tables in ``folder`` (NOT private)."""
    from dpforge.cli.evaluate_related import refuse_single_table_options, related_result
    from dpforge.evaluation.report_relational import relational_page

    refuse_single_table_options({"--rows": args["rows"] is not None,
                                 "--pair": args["pair"] is not None})  # fmt: skip
    return relational_page(related_result(folder, {**args, "schema": schema}).to_dict())
