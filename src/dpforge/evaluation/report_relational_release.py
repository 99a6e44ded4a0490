"""The release page of related tables: only what their model folder already makes public.

``dpforge report MODEL --release`` on a related tables' model folder: the composed ledger with
the unit (the parent with all its rows), and statistics of synthetic tables sampled from the
model: each table's first rows and columns, and each child's number of rows per parent. Nothing
here reads a real record, so the page may be published with the model (as the single table's
release page, :func:`dpforge.evaluation.report.release_report`).
"""

from __future__ import annotations

from typing import Protocol

import pandas as pd

from dpforge.evaluation import plots
from dpforge.evaluation.inputs import typed_table
from dpforge.evaluation.report import RELEASE_NOTICE
from dpforge.evaluation.report_html import esc, img_html, page_html, table_html
from dpforge.evaluation.report_privacy import ledger_section
from dpforge.privacy.ledger import PrivacyLedger
from dpforge.privacy.relational import unit_words
from dpforge.schema.relational import RelationalSchema, RelationalTable
from dpforge.schema.table import Column, Schema

__all__ = ["RelatedModel", "relational_release_report"]


class RelatedModel(Protocol):
    """What the page reads of a fitted related tables' model (its public parts)."""

    schema: RelationalSchema
    delta: float
    ledger_: PrivacyLedger

    def sample(self, n: int, seed: int | None = None) -> dict[str, pd.DataFrame]: ...


def relational_release_report(model: RelatedModel, n_parents: int = 500, seed: int = 0) -> str:
    """The public HTML page: the ledger and ``n_parents`` synthetic parents with their children
    (sampled with ``seed``)."""
    schema = model.schema
    tables = model.sample(n_parents, seed=seed)
    sections = [
        f"<h1>dpforge release report: related tables {esc(', '.join(schema.names))}</h1>",
        f'<p class="public">{esc(RELEASE_NOTICE)}</p>',
        ledger_section(model.ledger_, model.delta, unit_words(schema)),
        f"<h2>Synthetic tables ({n_parents} parents sampled with seed {seed})</h2>",
        _table_section(schema.parent.name, schema.parent.schema, tables[schema.parent.name]),
    ]
    for child in schema.children:
        sections.append(_children_section(schema, child, tables))
    sections.append("<h2>Schema</h2><pre>" + esc(schema.to_json()) + "</pre>")
    return page_html("dpforge release report", sections)


def _table_section(name: str, schema: Schema, frame: pd.DataFrame) -> str:
    """One synthetic table: its first 10 rows and a histogram of every modelled column."""
    modelled = schema.modelled  # keys and other identifiers are new surrogates, not modelled
    typed = typed_table(frame, modelled, "synthetic")
    return "\n".join(
        [
            f"<h3>Table '{esc(name)}': {len(frame):,} rows</h3>",
            table_html(modelled.names, typed.head(10).itertuples(index=False)),
            img_html(
                plots.histograms(modelled, [("synthetic", typed)]),
                f"histograms of the synthetic table {name}",
            ),
        ]
    )


def _children_section(
    schema: RelationalSchema, child: RelationalTable, tables: dict[str, pd.DataFrame]
) -> str:
    """A child table, with the distribution of its rows per synthetic parent (0..k)."""
    parent = schema.parent
    keys = tables[parent.name][parent.key]
    per_parent = tables[child.name][child.link.foreign_key].value_counts()
    counts = pd.DataFrame({"n": keys.map(per_parent).fillna(0).astype(int)})
    column = Column("n", "integer", lower=0, upper=child.max_rows)
    counts_schema = Schema((column,))
    return "\n".join(
        [
            _table_section(child.name, child.schema, tables[child.name]),
            f"<h4>Rows of '{esc(child.name)}' per parent (at most k = {child.max_rows})</h4>",
            img_html(
                plots.histograms(counts_schema, [("synthetic", counts)]),
                f"rows of {child.name} per synthetic parent",
            ),
        ]
    )
