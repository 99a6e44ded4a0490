"""``dpforge schema patients.csv visits.csv --out hospital.json``: the relational draft.

Called by the ``schema`` command when it is given more than one data file: each CSV file is a
table named by its file stem (:mod:`dpforge.data.relational`).
"""

from __future__ import annotations

from pathlib import Path

from dpforge.data.relational import draft_relational_schema, read_tables
from dpforge.errors import DataError
from dpforge.storage import atomic_write

__all__ = ["draft_relational", "refuse_table_options"]


def refuse_table_options(given: dict[str, object]) -> None:
    """Options of one file's draft (flag -> value) are refused with several files, naming
    the option."""
    for flag, value in given.items():
        if value:
            raise DataError(
                f"{flag} applies to one data file; with several CSV files (related tables) "
                "leave it out and edit the drafted schema instead"
            )


def draft_relational(paths: list[Path], out: Path, values: bool, overwrite: bool) -> str:
    """Write the relational draft of the CSV files ``paths`` to ``out``; returns the message
    for the steward (what to review)."""
    drafted = draft_relational_schema(read_tables(paths), with_values=values)
    atomic_write(out, lambda p: p.write_text(drafted.to_json() + "\n"), overwrite=overwrite)
    what = "column types and values" if values else "column types"
    return (
        f"[bold red]REVIEW NEEDED[/bold red]: the keys, links and {what} in {out} were read "
        "from the private data and are not private. Check each table's keys and types, set "
        "every max_rows_per_parent to a public bound, then delete the 'review' entries."
    )
