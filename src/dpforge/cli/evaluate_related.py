"""``dpforge evaluate`` and ``dpforge report`` on related tables (``--schema``, issue 45).

``dpforge evaluate out/ --schema hospital.json --real-train pbc.csv --real-train pbcseq.csv
--real-test test/pbc.csv --real-test test/pbcseq.csv -o metrics.json``: ``out/`` is the folder
``dpforge sample`` wrote (one CSV per table, ``<table>.csv``); the real files are matched to the
schema's tables by file stem, as ``dpforge fit`` matches them. The training files are those the
model was fitted on; the test files hold parents never used in the fit, with all their rows.
The metrics (:func:`dpforge.evaluation.relational.evaluate_relational`; the task predicts the
parent table's label) are computed from private data and are NOT differentially private.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rich.console import Console

from dpforge.errors import DpforgeError
from dpforge.storage import atomic_write

__all__ = ["evaluate_related", "refuse_single_table_options", "related_result"]

console = Console(stderr=True)


def refuse_single_table_options(given: dict[str, object]) -> None:
    """Options that read a model (flag -> value) are refused with --schema, naming the flag."""
    for flag, value in given.items():
        if value:
            raise DpforgeError(
                f"{flag} applies to a model folder; with --schema the synthetic tables are the "
                "folder given, as 'dpforge sample' wrote them: leave it out"
            )


def _tables(paths: list[Path], schema, role: str) -> dict:
    from dpforge.data.relational import read_tables

    tables = read_tables(paths)
    if sorted(tables) != sorted(schema.names):
        raise DpforgeError(
            f"the {role} files name the tables {sorted(tables)} (by file stem); the schema's "
            f"tables are {schema.names}: give one file per table, named <table>.csv"
        )
    return tables


def _synthetic(folder: Path, schema) -> dict:
    if not folder.is_dir():
        raise DpforgeError(
            f"{folder} is not a folder: with --schema, give the folder of synthetic tables "
            "that 'dpforge sample' wrote (one <table>.csv per table)"
        )
    return _tables([folder / f"{name}.csv" for name in schema.names], schema, "synthetic")


def related_result(folder: Path, options: dict[str, Any]) -> Any:
    """The :class:`RelationalEvaluation` of the synthetic tables in ``folder`` (``options``:
    schema, real_train, real_test, classifiers, attacks, seed)."""
    from dpforge.evaluation.attacks import ATTACKS
    from dpforge.evaluation.relational import evaluate_relational
    from dpforge.schema.relational import RelationalSchema

    schema = RelationalSchema.load(options["schema"])
    synthetic = _synthetic(folder, schema)
    train = _tables(options["real_train"], schema, "--real-train")
    test = _tables(options["real_test"], schema, "--real-test")
    return evaluate_relational(
        train, test, synthetic, schema, classifiers=options["classifiers"],
        attacks=ATTACKS if options["attacks"] else (), seed=options["seed"],
    )  # fmt: skip


def evaluate_related(folder: Path, out: Path, options: dict[str, Any], overwrite: bool) -> None:
    """Write the metrics JSON of the related tables and print their headline."""
    result = related_result(folder, options)
    text = json.dumps(result.to_dict(), indent=2, allow_nan=False) + "\n"
    atomic_write(out, lambda p: p.write_text(text), overwrite=overwrite)
    head = result.headline()
    console.print(
        f"related tables: mean TVD per table 1-way {_number(head['table_tvd_1way'])}, 2-way "
        f"{_number(head['table_tvd_2way'])}; parent x child {_number(head['parent_child_tvd'])}; "
        f"rows per parent {_number(head['child_count_tvd'])}"
    )
    if result.task is not None:
        console.print(
            f"parent-level task ('{result.meta['label']}'): mean AuROC synthetic "
            f"{_number(head['task_auc_synthetic'])} / real {_number(head['task_auc_real'])}"
        )
    if result.attacks is not None:
        console.print(
            f"parent-level membership attacks: max AUC {_number(head['attack_auc'])} "
            "(0.5 = guessing)"
        )
    console.print(
        "[bold red]NOT differentially private[/bold red]: these metrics are computed from "
        f"private data. Wrote {out}; keep it with the private data."
    )


def _number(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"
