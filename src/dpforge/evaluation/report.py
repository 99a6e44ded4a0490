"""The evaluation report: one self-contained HTML page a data steward can read and pass on.

Two variants:

* the full report (:func:`table_report`): computed from the real training and test rows, so it
  is NOT differentially private, and says so at the top. Headline first (ε and δ from the
  model's ledger, utility against real data, the strongest membership attack, a verdict in
  plain words), then the ledger in plain words, utility tables, fidelity (1-/2-way TVD, KS,
  W1, association matrices, histograms side by side, a 2-D density of a chosen pair) and the
  attacks with their ROC curves;
* the release report (:func:`release_report`): only what is already public, the ledger, the
  schema, statistics and pictures of synthetic records sampled from the model; no real-data
  number at all. It may travel with the model.

Figures are PNG images embedded as base64 data URIs (:mod:`dpforge.evaluation.plots`); the page
loads nothing from elsewhere. :func:`write_report` writes it atomically and refuses a path
inside the model folder (the full report must stay with the private data).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from dpforge.errors import DataError, DpforgeError, OutputExistsError
from dpforge.evaluation.attacks import ATTACKS
from dpforge.evaluation.evaluate import NOT_PRIVATE_NOTICE, evaluate_tables, evaluation_tables
from dpforge.evaluation.fidelity import EVAL_BINS
from dpforge.evaluation.report_headline import headline_html, verdict
from dpforge.evaluation.report_html import STYLE, esc, img_html, page_html, table_html
from dpforge.evaluation.report_privacy import describe_event, ledger_html, model_description
from dpforge.evaluation.report_sections import (
    _fidelity_section,
    _released_section,
    _utility_section,
    attack_html,
    check_pair,
)
from dpforge.evaluation.utility import CLASSIFIERS
from dpforge.kinds.reports import report_of
from dpforge.schema.table import Schema
from dpforge.storage import atomic_write

# The names below moved to report_html, report_privacy, report_headline and report_sections;
# they are re-exported here so that ``from dpforge.evaluation.report import ...`` keeps working.
__all__ = [
    "RELEASE_NOTICE",
    "STYLE",
    "attack_html",
    "describe_event",
    "esc",
    "headline_html",
    "img_html",
    "ledger_html",
    "page_html",
    "model_description",
    "release_report",
    "table_html",
    "table_report",
    "verdict",
    "write_report",
]

RELEASE_NOTICE = (
    "Release variant: this page holds only what the model already makes public (its privacy "
    "ledger, its schema, and statistics of synthetic records sampled from it). It contains no "
    "number computed from the real data and may be published with the model."
)


def table_report(
    model: Any,
    real_train: pd.DataFrame,
    real_test: pd.DataFrame,
    seed: int = 0,
    classifiers: Sequence[str] = CLASSIFIERS,
    attacks: Sequence[str] = ATTACKS,
    n_synthetic: int | None = None,
    pair: tuple[str, str] | None = None,
    on_step: Callable[[str], None] | None = None,
) -> tuple[str, dict[str, Any]]:
    """The full (NOT differentially private) HTML report of a fitted table model, and the
    metrics it shows (the dict of :func:`~dpforge.evaluation.evaluate.evaluate_table`)."""
    if not isinstance(model.schema_, Schema):
        raise DataError(
            "the full report supports table models; use the release report for images and series"
        )
    schema = model.schema_.modelled  # identifiers ("drop", "surrogate") are never sampled
    pair = check_pair(schema, pair)
    tables = evaluation_tables(model, real_train, real_test, schema, seed, n_synthetic)
    result = evaluate_tables(tables, model, classifiers, seed, EVAL_BINS, attacks, on_step)
    step = on_step or (lambda name: None)
    sections = [
        f"<h1>dpforge evaluation report: {esc(model_description(model))}</h1>",
        f'<p class="warn">NOT DIFFERENTIALLY PRIVATE. {esc(NOT_PRIVATE_NOTICE)} Do not write it '
        "into the model folder.</p>",
        headline_html(model, result),
        ledger_html(model),
        _utility_section(result),
        _released_section(result),
        _fidelity_section(result, schema, tables.train, tables.synthetic, pair),
        attack_html(result),
    ]
    step("report")
    return page_html("dpforge evaluation report (NOT differentially private)", sections), result


# -- the release report --------------------------------------------------------------------
def release_report(
    model: Any, n_synthetic: int = 2000, seed: int = 0, pair: tuple[str, str] | None = None
) -> str:
    """The public HTML report: ledger, schema and synthetic-only statistics and pictures."""
    schema = model.schema_
    sections = [
        f"<h1>dpforge release report: {esc(model_description(model))}</h1>",
        f'<p class="public">{esc(RELEASE_NOTICE)}</p>',
        headline_html(model, None),
        ledger_html(model),
    ]
    sections.append(report_of(schema).release_section(model, n_synthetic, seed, pair))
    sections.append("<h2>Schema</h2><pre>" + esc(schema.to_json()) + "</pre>")
    return page_html("dpforge release report", sections)


# -- writing -------------------------------------------------------------------------------
def write_report(
    text: str, out: str | Path, model_dir: str | Path | None, overwrite: bool = False
) -> Path:
    """Write the page atomically; refuse a path inside ``model_dir`` (the report is computed
    from private data and must not travel with the model) or an existing file."""
    out = Path(out)
    if out.exists() and not overwrite:
        raise OutputExistsError(f"{out} already exists; choose another name or pass --overwrite")
    if model_dir is not None and Path(model_dir).resolve() in out.resolve().parents:
        raise DpforgeError(
            f"{out} is inside the model folder {model_dir}: reports must not be written into the "
            "model folder; write them elsewhere"
        )
    atomic_write(out, lambda p: p.write_text(text, encoding="utf-8"), overwrite=overwrite)
    return out
