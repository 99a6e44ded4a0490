"""``dpforge evaluate``: utility, fidelity, attacks and the privacy ledger of a model, as JSON.

The model samples synthetic rows (as many as the real training rows unless ``--rows``); the
metrics compare them with the real training rows and score classifiers on the real test rows
(tables: :mod:`dpforge.evaluation.evaluate`; images and series:
:func:`dpforge.evaluation.array_report.evaluate_arrays`). The metrics file is computed from
private data and is NOT differentially private: it is never written into the model folder, and
the command says so.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from dpforge.cli.io import read_data
from dpforge.errors import DpforgeError, OutputExistsError
from dpforge.evaluation.classifier_names import CLASSIFIERS
from dpforge.schema.table import Schema
from dpforge.storage import atomic_write

if TYPE_CHECKING:  # the metrics (scikit-learn, torch) are imported where used: --help stays light
    import pandas as pd

    from dpforge.data.arrays import ArrayData
    from dpforge.synthesizer import Synthesizer

__all__ = ["evaluate", "one_file", "parse_classifiers", "real_arrays", "real_table"]

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


def real_table(path: Path, synth: Synthesizer) -> pd.DataFrame:
    """The real CSV checked and typed against the model's schema. Values outside its bounds
    are kept (the metrics compare them); values of columns whose categories the model estimated
    under DP are not checked here: rows holding a category the threshold did not release are
    set aside by the evaluation (see :mod:`dpforge.evaluation.released`), not refused."""
    from dpforge.data.tables import read_csv, validate_table
    from dpforge.evaluation.released import dp_category_columns, without_dp_categories

    names = [entry.name for entry in synth.ledger_.entries]
    schema = without_dp_categories(synth.schema_, dp_category_columns(synth.schema_, names))
    return validate_table(read_csv(path), schema, out_of_bounds="clip")


def real_arrays(path: Path, synth) -> ArrayData:
    """Real images or series read like ``dpforge fit`` reads them (image folder or .npz; series
    as .npz or a wide CSV with the label column) and checked against the model's schema.
    Records of a class the model's DP threshold did not release are set aside, the rule the
    fit applied (see :mod:`dpforge.evaluation.released`)."""
    from dpforge.data.arrays import keep_released_records, validate_arrays

    schema = synth.schema_
    data = read_data(schema.kind, path, schema)
    names = [entry.name for entry in synth.ledger_.entries]
    dp_classes = any(n.startswith(f"metadata: classes of '{schema.label}'") for n in names)
    checked = validate_arrays(data, schema.with_classes(None) if dp_classes else schema, "clip")
    return keep_released_records(checked, schema)


def _summary(result: dict, out: Path) -> None:
    from dpforge.evaluation.evaluate import HEADLINE_SCORES

    rows = result["rows"]
    console.print(
        f"evaluated {rows['synthetic']} synthetic rows against {rows['real_train']} real "
        f"training rows (fidelity, utility baseline) and {rows['real_test']} real test rows "
        "(scoring only)"
    )
    released = result["released_categories"]
    if released["dp_estimated_columns"]:
        shares = ", ".join(
            f"{released[split]['share_set_aside']:.1%} of {split}"
            for split in ("real_train", "real_test")
        )
        console.print(
            f"set aside real rows holding a category the DP threshold did not release ({shares}; "
            f"columns estimated under DP: {', '.join(released['dp_estimated_columns'])})"
        )
    utility = result["utility"]
    if utility is not None:
        for name, scores in utility["classifiers"].items():
            syn, real = scores["synthetic"]["auroc_macro"], scores["real"]["auroc_macro"]
            console.print(f"  {name:>4}: macro AuROC synthetic {syn:.3f} / real {real:.3f}")
        mean = utility["mean"]
        ratios = ", ".join(f"{k} {mean['ratio'][k]:.3f}" for k in HEADLINE_SCORES)
        console.print(f"  mean synthetic/real ratio: {ratios}")
    fidelity = result["fidelity"]
    console.print(
        f"fidelity: mean TVD 1-way {fidelity['tvd']['mean_one_way']:.3f}, 2-way "
        f"{_number(fidelity['tvd']['mean_two_way'])}; mean KS {_number(fidelity['ks']['mean'])}; "
        f"association difference {fidelity['association']['mean_abs_difference']:.3f}"
    )
    _privacy_lines(result, out)


def _evaluate_arrays(synth, paths, out: Path, options, overwrite: bool) -> None:
    """Images and series: :func:`evaluate_arrays` with a progress bar, then a short summary."""
    from dpforge.evaluation.array_report import evaluate_arrays
    from dpforge.evaluation.attacks import ATTACKS

    rows, seed, attacks = options
    train, test = (real_arrays(path, synth) for path in paths)
    columns = (TextColumn("{task.description}"), BarColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=True) as progress:
        task = progress.add_task("evaluating", total=3 + (len(ATTACKS) if attacks else 0))

        def done(name: str) -> None:
            progress.update(task, advance=1, description=f"done: {name}")

        result, _ = evaluate_arrays(
            synth, train, test, seed, rows, done, ATTACKS if attacks else ()
        )
    text = json.dumps(result, indent=2, allow_nan=False) + "\n"
    atomic_write(out, lambda p: p.write_text(text), overwrite=overwrite)
    _array_summary(result, out)


def _array_summary(result: dict, out: Path) -> None:
    rows = result["rows"]
    console.print(
        f"evaluated {rows['synthetic']} synthetic {result['data_type']} records against "
        f"{rows['real_train']} real training and {rows['real_test']} real test records"
    )
    utility = result["utility"]
    if utility is not None:
        mean = utility["mean"]
        console.print(
            f"utility, {utility['measure']}: synthetic {mean['synthetic']['auroc_macro']:.3f} / "
            f"real {mean['real']['auroc_macro']:.3f}"
        )
    reference = result["reference"]
    if reference is not None:
        console.print(
            f"reference CNN: label fidelity {reference['label_fidelity']:.3f} (real "
            f"{reference['label_fidelity_real_train']:.3f}), Fréchet distance "
            f"{reference['frechet_to_test']:.3g} (real "
            f"{reference['frechet_real_train_to_test']:.3g}), inception score "
            f"{reference['inception_score']:.2f} (real "
            f"{reference['inception_score_real_train']:.2f})"
        )
    if result["dtw"] is not None:
        d = result["dtw"]
        console.print(
            f"median DTW to the nearest real training series: synthetic "
            f"{d['synthetic_to_train_median']:.3g}, real test {d['test_to_train_median']:.3g}"
        )
    if result["autocorrelation"] is not None:
        acf = result["autocorrelation"]
        console.print(
            f"autocorrelation, mean |difference| from real training: synthetic "
            f"{acf['mean_abs_diff_synthetic']:.3f}, real test {acf['mean_abs_diff_real_test']:.3f}"
        )
    _privacy_lines(result, out)


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


def _number(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


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
    """One model folder: tables through :func:`evaluate_table`, images and series through
    :func:`_evaluate_arrays`."""
    from dpforge.evaluation.attacks import ATTACKS
    from dpforge.evaluation.evaluate import evaluate_table
    from dpforge.synthesizer import load

    rows, seed, attacks, chosen = options
    if rows is not None and rows < 1:
        raise DpforgeError(f"--rows must be at least 1, got {rows}")
    synth = load(model)
    if not isinstance(synth.schema_, Schema):
        _evaluate_arrays(synth, paths, out, (rows, seed, attacks), overwrite)
        return
    train, test = (real_table(path, synth) for path in paths)
    result = evaluate_table(
        synth, train, test, classifiers=chosen, seed=seed, n_synthetic=rows,
        attacks=ATTACKS if attacks else (),
    )  # fmt: skip
    text = json.dumps(result, indent=2, allow_nan=False) + "\n"
    atomic_write(out, lambda p: p.write_text(text), overwrite=overwrite)
    _summary(result, out)
