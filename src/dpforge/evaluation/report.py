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

import html
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import dp_accounting
import numpy as np
import pandas as pd

from dpforge import __version__
from dpforge.errors import DataError, DpforgeError, OutputExistsError
from dpforge.evaluation import plots
from dpforge.evaluation.association import association_matrix
from dpforge.evaluation.attacks import ATTACK_NOTE, ATTACKS
from dpforge.evaluation.evaluate import NOT_PRIVATE_NOTICE, evaluate_tables, evaluation_tables
from dpforge.evaluation.fidelity import EVAL_BINS
from dpforge.evaluation.inputs import typed_table
from dpforge.evaluation.utility import CLASSIFIERS
from dpforge.privacy.ledger import PrivacyLedger
from dpforge.schema.array import ArraySchema
from dpforge.schema.table import Schema
from dpforge.storage import atomic_write

__all__ = [
    "RELEASE_NOTICE",
    "describe_event",
    "model_description",
    "release_report",
    "table_report",
    "verdict",
    "write_report",
]

RELEASE_NOTICE = (
    "Release variant: this page holds only what the model already makes public (its privacy "
    "ledger, its schema, and statistics of synthetic records sampled from it). It contains no "
    "number computed from the real data and may be published with the model."
)
STYLE = """
body{font-family:sans-serif;max-width:1100px;margin:1em auto;padding:0 1em;color:#222}
.warn{background:#fde2e1;border:2px solid #c0392b;padding:.8em;font-weight:bold}
.public{background:#e3f4e1;border:2px solid #2e7d32;padding:.8em;font-weight:bold}
.headline{background:#f4f6f8;border:1px solid #ccd;padding:.6em 1em}
.headline td{padding:.2em 1em .2em 0}
table.data{border-collapse:collapse;margin:.5em 0;font-size:90%}
table.data td,table.data th{border:1px solid #ccc;padding:.2em .5em;text-align:left}
table.data td.num{text-align:right}
table.data th{background:#eef;text-align:left}
img{max-width:100%;display:block;margin:.5em 0}
.note{color:#555;font-size:90%}
"""


# -- words ---------------------------------------------------------------------------------
def describe_event(event: dp_accounting.DpEvent) -> str:
    """A dp-accounting event in plain words."""
    if isinstance(event, dp_accounting.GaussianDpEvent):
        return f"Gaussian noise with noise multiplier {event.noise_multiplier:.4g}"
    if isinstance(event, dp_accounting.LaplaceDpEvent):
        return f"Laplace noise with scale {event.noise_multiplier:.4g}"
    if isinstance(event, dp_accounting.PoissonSampledDpEvent):
        return (
            f"each record used with probability {event.sampling_probability:.4g} "
            f"(Poisson sampling), then {describe_event(event.event)}"
        )
    if isinstance(event, dp_accounting.SelfComposedDpEvent):
        return f"{event.count:,} times: {describe_event(event.event)}"
    if isinstance(event, dp_accounting.ComposedDpEvent):
        return "; ".join(describe_event(e) for e in event.events)
    if isinstance(event, dp_accounting.NonPrivateDpEvent):
        return "NOT private (read without noise: epsilon is infinite)"
    if isinstance(event, dp_accounting.NoOpDpEvent):
        return "no access to the records"
    return type(event).__name__


def _fmt(value: Any, digits: int = 3) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, str):
        return value
    if isinstance(value, float) and not math.isfinite(value):
        return "∞" if value > 0 else "-∞"
    return f"{value:.{digits}f}"


def verdict(
    epsilon: float,
    utility_ratio: float | None,
    attack_auc: float | None,
    floor_auc: float | None = None,
) -> list[str]:
    """Plain-words reading of the headline numbers (rules of thumb, stated as such).

    ``attack_auc`` is read against the attacks' floor: pass the strongest AUC above its own
    floor (``max_auc_over_floor``) and the highest floor, so that a difference between the
    training and held-out files is not taken for leakage."""
    words = []
    if not math.isfinite(epsilon):
        words.append("No privacy guarantee: this model was trained without differential privacy.")
    elif epsilon <= 1:
        words.append(f"Strong formal guarantee (ε = {epsilon:.2f} ≤ 1).")
    elif epsilon <= 5:
        words.append(f"Moderate formal guarantee (ε = {epsilon:.2f}).")
    else:
        words.append(f"Weak formal guarantee (ε = {epsilon:.2f} > 5): read it as a ceiling only.")
    if utility_ratio is not None:
        if utility_ratio >= 0.95:
            words.append(
                "Classifiers trained on the synthetic data score about as well as on real data."
            )
        elif utility_ratio >= 0.85:
            words.append(
                "Classifiers trained on the synthetic data score somewhat below real data."
            )
        else:
            words.append(
                "Classifiers trained on the synthetic data score clearly below real data: "
                "check whether it is good enough for its intended use."
            )
    if attack_auc is not None:
        if attack_auc <= 0.55:
            words.append("The membership attacks do no better than guessing (AUC ≤ 0.55).")
        elif attack_auc <= 0.6:
            words.append("The membership attacks see a weak signal (AUC ≤ 0.6).")
        else:
            words.append(
                f"A membership attack reaches AUC {attack_auc:.2f}: records of the training data "
                "can be recognised. Do not publish without review."
            )
    if floor_auc is not None and floor_auc > 0.55:
        words.append(
            f"The attacks read AUC up to {floor_auc:.2f} even when the release is real training "
            "rows that are not targets: part of what they see is a difference between the "
            "training and held-out files, not membership. The attack figure above is read "
            "against that floor."
        )
    words.append(
        "Thresholds used: ε ≤ 1 strong, ≤ 5 moderate; utility ratio ≥ 0.95 / 0.85; attack AUC "
        "(above its floor) ≤ 0.55 / 0.6. They are rules of thumb, not guarantees."
    )
    return words


# -- html helpers --------------------------------------------------------------------------
def esc(text: Any) -> str:
    return html.escape(str(text))


def _cell(value: Any) -> str:
    if value is None:
        return "<td>n/a</td>"
    if isinstance(value, bool) or not isinstance(value, int | float | np.number):
        return f"<td>{esc(value)}</td>"
    text = _fmt(float(value)) if isinstance(value, float | np.floating) else str(value)
    return f'<td class="num">{esc(text)}</td>'


def table_html(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(_cell(c) for c in row) + "</tr>" for row in rows)
    return f'<table class="data"><tr>{head}</tr>{body}</table>'


def img_html(uri: str, alt: str) -> str:
    return f'<img src="{uri}" alt="{esc(alt)}">'


def page_html(title: str, sections: Sequence[str]) -> str:
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{esc(title)}</title><style>{STYLE}</style></head><body>"
        + "\n".join(sections)
        + f'<p class="note">dpforge {__version__}</p></body></html>\n'
    )


# -- privacy sections ----------------------------------------------------------------------
def ledger_html(model: Any) -> str:
    report = model.privacy_spent()
    ledger: PrivacyLedger = model.ledger_
    rows = []
    for entry in ledger.entries:
        alone = PrivacyLedger([entry])
        rows.append(
            (
                entry.name,
                describe_event(entry.event),
                _eps(alone, model.delta, "pld"),
                _eps(alone, model.delta, "rdp"),
            )
        )
    parts = [
        "<h2>Privacy ledger</h2>",
        f"<p>Every access to the private records during <code>fit</code> is one entry; the "
        f"total is {esc(report.summary())}, computed by the dp-accounting accountants from the "
        "whole ledger (composition). The per-entry ε below are each entry alone, for scale; they "
        "do not add up to the total (composition is tighter).</p>",
        f"<p>The guarantee is {esc(model.unit.describe())}.</p>",
        table_html(
            ("entry", "what happened, in plain words", "ε alone (PLD)", "ε alone (RDP)"), rows
        ),
        f"<p>Total at δ = {model.delta:g}: ε = {_fmt(report.epsilon_pld)} under PLD (reported), "
        f"{_fmt(report.epsilon_rdp)} under RDP. A Bayesian (data-dependent) bound is not part "
        "of the model folder and is not shown.</p>",
        _public_private(model),
    ]
    return "\n".join(parts)


def _eps(ledger: PrivacyLedger, delta: float, accountant: str) -> str:
    try:
        return _fmt(ledger.epsilon(delta, accountant=accountant))
    except DpforgeError:
        return "n/a"


def _prior_words(prior: Any) -> str:
    return prior if isinstance(prior, str) else "given in the schema"


def _public_private(model: Any) -> str:
    names = [entry.name for entry in model.ledger_.entries]
    private = [n.removeprefix("metadata: ") for n in names if n.startswith("metadata:")]
    schema = model.schema_
    rows = []
    if isinstance(schema, Schema):
        for column in schema.columns:
            what = "bounds" if column.is_numeric else "categories"
            estimated = any(n.startswith(f"{what} of '{column.name}'") for n in private)
            rows.append(
                (
                    column.name,
                    column.type,
                    what,
                    "estimated under DP" if estimated else "declared public",
                )
            )
        if schema.label is not None:
            estimated = any(n.startswith(f"label prior of '{schema.label}'") for n in private)
            prior = (
                "estimated under DP"
                if estimated
                else f"declared public ({_prior_words(schema.label_prior)})"
            )
            rows.append((schema.label, "label", "class proportions", prior))
    else:
        for item in private:
            rows.append((item, "", "", "estimated under DP"))
    return (
        "<h3>What was public and what was estimated privately</h3>"
        "<p>Declared values came from the schema the user wrote (public knowledge, free); "
        "estimated values were measured from the records with noise and are charged in the ledger "
        "above.</p>" + table_html(("column", "type", "metadata", "source"), rows)
    )


# -- what ran ------------------------------------------------------------------------------
def model_description(model: Any) -> str:
    """What actually trained the released generator, read from the model's public metadata
    (its ledger and its plan), not from the method name alone: a model anchored on measured
    marginals (tables), moments or feature embeddings (images, series) with no discriminator
    steps is not a GAN run, though its method field still names the GAN that would refine it."""
    names = [entry.name for entry in model.ledger_.entries]
    anchors = [n for n in names if n.startswith("anchor:")]
    kind = ""
    if anchors:
        kind = "marginal anchoring"
        if any("random features" in n for n in anchors):
            kind = "feature anchoring"
        if any("principal subspace" in n for n in anchors):
            kind = "moment anchoring (class-conditional Gaussians)"
    steps = int(getattr(model.plan_, "steps", 0) or 0)
    gan = f"{model.method} ({steps} discriminator steps)"
    if kind and steps == 0:
        return f"{kind} (no discriminator steps)"
    if kind:
        return f"{kind} + {model.method} refinement ({steps} discriminator steps)"
    return gan


# -- the full table report -----------------------------------------------------------------
def headline_html(model: Any, result: dict | None) -> str:
    report = model.privacy_spent()
    rows = [
        ("what ran", model_description(model)),
        (
            "ε (PLD, reported)",
            _fmt(report.epsilon_pld if report.epsilon_pld is not None else report.epsilon),
        ),
        ("ε (RDP)", _fmt(report.epsilon_rdp)),
        ("δ", f"{model.delta:g}"),
    ]
    ratio = auc = floor = None
    if result is not None:
        utility = result["utility"]
        if utility is not None:
            mean = utility["mean"]
            ratio = mean["ratio"]["auroc_macro"]
            rows.append(
                (
                    f"utility ({utility.get('measure', 'macro AuROC, mean of classifiers')})",
                    f"synthetic {_fmt(mean['synthetic']['auroc_macro'])} / real "
                    f"{_fmt(mean['real']['auroc_macro'])} (ratio {_fmt(ratio)})",
                )
            )
        if result["fidelity"] is not None:
            tvd = result["fidelity"]["tvd"]["mean_one_way"]
            rows.append(("fidelity (mean 1-way TVD)", _fmt(tvd)))
        reference = result.get("reference")
        if reference is not None:
            rows.append(
                (
                    "label fidelity (reference CNN)",
                    f"{_fmt(reference['label_fidelity'])} (real training images "
                    f"{_fmt(reference['label_fidelity_real_train'])}, chance "
                    f"{_fmt(reference['chance'])})",
                )
            )
        if result["attacks"] is not None:
            attacks = result["attacks"]
            auc = attacks.get("max_auc_over_floor", attacks["max_auc"])
            floor = attacks.get("max_floor_auc")
            rows.append(
                (
                    "strongest membership attack",
                    f"AUC {_fmt(attacks['max_auc'])}, TPR at 1% FPR "
                    f"{_fmt(attacks['max_tpr_at_1pct_fpr'])}; floor (real non-target "
                    f"training rows released) {_fmt(floor)}",
                )
            )
    body = "".join(f"<tr><td><b>{esc(k)}</b></td><td>{esc(v)}</td></tr>" for k, v in rows)
    words = (
        "".join(f"<li>{esc(w)}</li>" for w in verdict(report.epsilon, ratio, auc, floor))
        if result is not None
        else ""
    )
    verdict_html = f"<h3>Verdict</h3><ul>{words}</ul>" if words else ""
    return f'<div class="headline"><h2>Headline</h2><table>{body}</table>{verdict_html}</div>'


def _utility_section(result: dict) -> str:
    utility = result["utility"]
    if utility is None:
        return "<h2>Utility</h2><p>The schema has no label: no classifier was trained.</p>"
    rows = []
    for name, scores in utility["classifiers"].items():
        syn, real, ratio = scores["synthetic"], scores["real"], scores["ratio"]
        rows.append(
            (
                name,
                syn["auroc_macro"],
                real["auroc_macro"],
                ratio["auroc_macro"],
                syn["accuracy"],
                real["accuracy"],
                syn["balanced_accuracy"],
                real["balanced_accuracy"],
            )
        )
    mean = utility["mean"]
    rows.append(
        (
            "mean",
            mean["synthetic"]["auroc_macro"],
            mean["real"]["auroc_macro"],
            mean["ratio"]["auroc_macro"],
            mean["synthetic"]["accuracy"],
            mean["real"]["accuracy"],
            mean["synthetic"]["balanced_accuracy"],
            mean["real"]["balanced_accuracy"],
        )
    )
    headers = (
        "classifier",
        "AuROC syn",
        "AuROC real",
        "ratio",
        "acc syn",
        "acc real",
        "bal. acc syn",
        "bal. acc real",
    )
    return (
        f"<h2>Utility: train on synthetic, test on real (label '{esc(utility['label'])}')</h2>"
        f"<p>{esc(result['row_use']['utility_synthetic'])}; "
        f"{esc(result['row_use']['utility_real'])}. "
        f"Real test rows: {result['rows']['real_test']}.</p>" + table_html(headers, rows)
    )


def _fidelity_section(
    result: dict, schema: Schema, real: pd.DataFrame, synthetic: pd.DataFrame, pair
) -> str:
    tvd, ks, w1 = (
        result["fidelity"]["tvd"],
        result["fidelity"]["ks"],
        result["fidelity"]["wasserstein1"],
    )
    one = sorted(tvd["one_way"].items(), key=lambda kv: -kv[1])
    two = sorted(tvd["two_way"].items(), key=lambda kv: -kv[1])[:10]
    numeric = [c.name for c in schema.columns if c.is_numeric]
    ks_rows = [
        (
            n,
            ks["per_column"].get(n),
            (w1.get("per_column", {}).get(n) or {}).get("normalized"),
        )
        for n in numeric
    ]
    association = result["fidelity"]["association"]
    columns = association["columns"]
    matrices = [
        (
            title,
            pd.DataFrame(
                np.abs(np.asarray(association[key], dtype=float)), index=columns, columns=columns
            ),
        )
        for title, key in (
            ("real", "real"),
            ("synthetic", "synthetic"),
            ("|synthetic - real|", "difference"),
        )
    ]
    parts = [
        "<h2>Fidelity: synthetic rows against the real training rows</h2>",
        f"<p>Total-variation distance (0: same, 1: disjoint) of each marginal; numeric columns on "
        f"{tvd['bins']} public cells. Mean 1-way {_fmt(tvd['mean_one_way'])}, mean 2-way "
        f"{_fmt(tvd['mean_two_way'])}.</p>",
        "<h3>1-way TVD per column (worst first)</h3>",
        table_html(("column", "TVD"), one),
        "<h3>2-way TVD, the 10 worst pairs</h3>",
        table_html(("pair", "TVD"), two),
    ]
    if numeric:
        parts += [
            "<h3>Numeric columns: Kolmogorov–Smirnov and Wasserstein-1</h3>",
            "<p>W1 divided by the width of the column's public bounds.</p>",
            table_html(("column", "KS", "W1 (normalised)"), ks_rows),
        ]
    parts += [
        "<h3>Association matrices (Cramér's V / correlation ratio / |Pearson|)</h3>",
        f"<p>Mean absolute difference {_fmt(association['mean_abs_difference'])}.</p>",
        img_html(
            plots.association_heatmaps(matrices),
            "association matrices: real, synthetic, difference",
        ),
        "<h3>Every column, side by side (shares)</h3>",
        img_html(
            plots.histograms(schema, [("real", real), ("synthetic", synthetic)]),
            "histograms real and synthetic",
        ),
    ]
    if pair is not None:
        parts += [
            f"<h3>2-D density of {esc(pair[0])} × {esc(pair[1])}</h3>",
            img_html(
                plots.density_pair(
                    schema, pair, [("real (training)", real), ("synthetic", synthetic)]
                ),
                "2-D density",
            ),
        ]
    return "\n".join(parts)


def attack_html(result: dict) -> str:
    attacks = result["attacks"]
    if attacks is None:
        return "<h2>Membership attacks</h2><p>Not run.</p>"
    rows = [
        (name, a["description"], a["auc"], a["tpr_at_1pct_fpr"], a.get("floor_auc"))
        for name, a in attacks["attacks"].items()
    ]
    t = attacks["targets"]
    return "\n".join(
        [
            "<h2>Membership-inference attacks</h2>",
            f"<p>{esc(ATTACK_NOTE)} Targets: {t['members']} members, "
            f"{t['non_members']} non-members; "
            f"reference rows: {t['reference']}; synthetic rows: {attacks['synthetic_rows']}.</p>",
            table_html(("attack", "what it does", "AUC", "TPR at 1% FPR", "floor AUC"), rows),
            f"<p>{esc(attacks.get('floor_note', ''))} Floor release: "
            f"{attacks.get('floor_rows', 0)} rows.</p>",
            img_html(plots.roc_curves(attacks["attacks"]), "ROC curves of the attacks"),
            "<p class='note'>An AUC near 0.5 is what a DP guarantee predicts; it does not prove "
            "privacy (these attacks are specific). An AUC clearly above 0.5 shows leakage.</p>",
        ]
    )


def _released_section(result: dict) -> str:
    released = result["released_categories"]
    if not released["dp_estimated_columns"]:
        return ""
    rows = [
        (
            split,
            released[split]["set_aside"],
            released[split]["share_set_aside"],
            ", ".join(f"{k}: {v}" for k, v in released[split]["per_column"].items()),
        )
        for split in ("real_train", "real_test")
    ]
    return (
        "<h3>Real rows outside the released categories</h3>"
        f"<p>{esc(result['row_use']['released_categories'])}</p>"
        + table_html(("split", "rows set aside", "share", "per column"), rows)
    )


def default_pair(schema: Schema) -> tuple[str, str] | None:
    """The first two numeric columns of the schema (None if it has fewer than two)."""
    numeric = [c.name for c in schema.columns if c.is_numeric]
    return (numeric[0], numeric[1]) if len(numeric) >= 2 else None


def _check_pair(schema: Schema, pair: tuple[str, str] | None) -> tuple[str, str] | None:
    if pair is None:
        return default_pair(schema)
    for name in pair:
        if name not in schema.names or not schema.column(name).is_numeric:
            numeric = [c.name for c in schema.columns if c.is_numeric]
            raise DataError(
                f"the density pair needs two numeric columns of {numeric}; got '{name}'"
            )
    return pair


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
    schema = model.schema_
    if not isinstance(schema, Schema):
        raise DataError(
            "the full report supports table models; use the release report for images and series"
        )
    pair = _check_pair(schema, pair)
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
    if isinstance(schema, Schema):
        sections.append(
            _synthetic_table_section(model, schema, n_synthetic, seed, _check_pair(schema, pair))
        )
    elif isinstance(schema, ArraySchema):
        sections.append(_synthetic_array_section(model, schema, seed))
    sections.append("<h2>Schema</h2><pre>" + esc(schema.to_json()) + "</pre>")
    return page_html("dpforge release report", sections)


def _synthetic_table_section(model: Any, schema: Schema, n: int, seed: int, pair) -> str:
    synthetic = typed_table(model.sample(n, seed=seed), schema, "synthetic")
    matrix = association_matrix(synthetic, schema, "synthetic").abs()
    parts = [
        f"<h2>Synthetic records ({n} sampled with seed {seed})</h2>",
        "<h3>The first 10 records</h3>",
        table_html(schema.names, synthetic.head(10).itertuples(index=False)),
        "<h3>Every column</h3>",
        img_html(
            plots.histograms(schema, [("synthetic", synthetic)]), "histograms of synthetic records"
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
            img_html(plots.density_pair(schema, pair, [("synthetic", synthetic)]), "2-D density"),
        ]
    return "\n".join(parts)


def _synthetic_array_section(model: Any, schema: ArraySchema, seed: int) -> str:
    n = 8 * max(1, schema.n_classes if schema.label is not None else 4)
    data = model.sample(n, seed=seed)
    values = np.asarray(data.values, dtype=float)
    labels = None if data.labels is None else data.labels
    if schema.kind == "image":
        lower = np.array([c.lower for c in schema.channels]).reshape(1, -1, 1, 1)
        upper = np.array([c.upper for c in schema.channels]).reshape(1, -1, 1, 1)
        picture = plots.image_grid((values - lower) / (upper - lower), labels)
        return f"<h2>Synthetic images (seed {seed})</h2>" + img_html(
            picture, "synthetic image grid"
        )
    return f"<h2>Synthetic series (seed {seed})</h2>" + img_html(
        plots.series_panels(values, labels, "synthetic"), "synthetic series: mean and 10-90% band"
    )


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
