"""A table's part of the reports (:func:`dpforge.kinds.reports.report_of`): its synthetic
records in the release report, and which column metadata were public and which estimated
under DP in the ledger section.

The release section reads only the model (its public schema and records sampled from it);
the full report of a table is :func:`dpforge.evaluation.report.table_report`.
"""

from __future__ import annotations

from typing import Any

from dpforge.evaluation import plots
from dpforge.evaluation.association import association_matrix
from dpforge.evaluation.inputs import typed_table
from dpforge.evaluation.report_html import esc, img_html, table_html
from dpforge.evaluation.report_sections import check_pair
from dpforge.schema.table import Schema

__all__ = ["TableReport"]


class TableReport:
    """A table's sections: synthetic rows, their columns and associations, a 2-D density."""

    @staticmethod
    def release_section(model: Any, n: int, seed: int, pair: tuple[str, str] | None) -> str:
        """``n`` records sampled with ``seed``: the first ten, every column's histogram, the
        association matrix and the density of ``pair`` (checked; default: the first two
        numeric columns). Identifiers ("drop", "surrogate") are never sampled."""
        schema = model.schema_.modelled
        pair = check_pair(schema, pair)
        synthetic = typed_table(model.sample(n, seed=seed), schema, "synthetic")
        matrix = association_matrix(synthetic, schema, "synthetic").abs()
        parts = [
            f"<h2>Synthetic records ({n} sampled with seed {seed})</h2>",
            "<h3>The first 10 records</h3>",
            table_html(schema.names, synthetic.head(10).itertuples(index=False)),
            "<h3>Every column</h3>",
            img_html(
                plots.histograms(schema, [("synthetic", synthetic)]),
                "histograms of synthetic records",
            ),
            "<h3>Association matrix</h3>",
            img_html(
                plots.association_heatmaps([("synthetic", matrix)]),
                "association matrix of synthetic records",
            ),
        ]
        if pair is not None:
            parts += [
                f"<h3>2-D density of {esc(pair[0])} × {esc(pair[1])}</h3>",
                img_html(
                    plots.density_pair(schema, pair, [("synthetic", synthetic)]), "2-D density"
                ),
            ]
        return "\n".join(parts)

    @staticmethod
    def metadata_rows(schema: Schema, private: list[str]) -> list[tuple[str, str, str, str]]:
        """(column, type, metadata, source) of each column and the label's prior: declared
        public, or estimated under DP (``private``: the ledger's metadata entries)."""
        rows = []
        for column in schema.columns:
            what = "bounds" if column.is_numeric else "categories"
            estimated = any(n.startswith(f"{what} of '{column.name}'") for n in private)
            source = "estimated under DP" if estimated else "declared public"
            rows.append((column.name, column.type, what, source))
        if schema.label is not None:
            estimated = any(n.startswith(f"label prior of '{schema.label}'") for n in private)
            prior = (
                "estimated under DP"
                if estimated
                else f"declared public ({_prior_words(schema.label_prior)})"
            )
            rows.append((schema.label, "label", "class proportions", prior))
        return rows


def _prior_words(prior: Any) -> str:
    return prior if isinstance(prior, str) else "given in the schema"
