"""The real-data sections of the full (NOT differentially private) table report: utility, the
released-row use, fidelity and the membership attacks; and the density pair a table's reports
draw (:func:`check_pair`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from dpforge.errors import DataError
from dpforge.evaluation import plots
from dpforge.evaluation.attacks import ATTACK_NOTE
from dpforge.evaluation.report_html import _fmt, esc, img_html, table_html
from dpforge.schema.table import Schema


def default_pair(schema: Schema) -> tuple[str, str] | None:
    """The first two numeric columns of the schema (None if it has fewer than two)."""
    numeric = [c.name for c in schema.columns if c.is_numeric]
    return (numeric[0], numeric[1]) if len(numeric) >= 2 else None


def check_pair(schema: Schema, pair: tuple[str, str] | None) -> tuple[str, str] | None:
    """The 2-D density pair of a table report: ``pair`` checked (two numeric columns of
    ``schema``), or the first two numeric columns when none is given."""
    if pair is None:
        return default_pair(schema)
    for name in pair:
        if name not in schema.names or not schema.column(name).is_numeric:
            numeric = [c.name for c in schema.columns if c.is_numeric]
            raise DataError(
                f"the density pair needs two numeric columns of {numeric}; got '{name}'"
            )
    return pair


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
        f"<p>Mean absolute difference {_fmt(association['mean_abs_difference'])}. "
        f"{esc(_worst_pair_text(matrices))}</p>",
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


def _worst_pair_text(matrices: list[tuple[str, pd.DataFrame]]) -> str:
    """The pair whose association differs most between real and synthetic rows: where a
    dependence the data do not have (or one the model lost) shows first."""
    real, synthetic = matrices[0][1], matrices[1][1]
    gap = (synthetic - real).abs().to_numpy(dtype=float, copy=True)
    np.fill_diagonal(gap, np.nan)
    if np.all(np.isnan(gap)):
        return ""
    i, j = np.unravel_index(np.nanargmax(gap), gap.shape)
    a, b = real.columns[i], real.columns[j]
    return (
        f"Largest difference: {a} × {b}, real {real.iloc[i, j]:.2f} against synthetic "
        f"{synthetic.iloc[i, j]:.2f}."
    )


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
