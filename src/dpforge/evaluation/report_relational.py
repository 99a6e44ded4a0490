"""The related-tables section of a report, from :meth:`RelationalEvaluation.to_dict`: as
Markdown (benchmarks, notes) and as HTML (``dpforge report`` on related tables). Both are
computed from private data and say so."""

from __future__ import annotations

from typing import Any

from dpforge.evaluation.report_html import _fmt, esc, page_html, table_html

__all__ = ["relational_html", "relational_markdown", "relational_page", "summary_rows"]

HEADERS = {
    "tables": ("table", "rows real", "rows synthetic", "mean TVD 1-way", "mean TVD 2-way"),
    "children": ("child", "k", "parent x child mean TVD", "child-count TVD"),
    "counts": ("child", "rows per parent", "share of parents real", "synthetic"),
    "task": ("classifier", "AuROC synthetic", "AuROC real", "ratio"),
    "attacks": ("attack", "AUC", "floor AUC", "TPR at 1% FPR"),
}


def summary_rows(result: dict[str, Any]) -> dict[str, list[tuple]]:
    """The section's tables as rows of values (shared by the Markdown and the HTML)."""
    rows = result["rows"]
    out: dict[str, list[tuple]] = {
        "tables": [
            (
                name,
                rows["real_train"][name],
                rows["synthetic"][name],
                t["mean_one_way"],
                t["mean_two_way"],
            )
            for name, t in result["tables"].items()
        ],  # fmt: skip
        "children": [
            (name, c["k"], result["parent_child"][name]["mean"], c["tvd"])
            for name, c in result["child_counts"].items()
        ],
        "task": [],
        "attacks": [],
    }
    if result["task"] is not None:
        for name, scores in result["task"]["classifiers"].items():
            syn, real = scores["synthetic"]["auroc_macro"], scores["real"]["auroc_macro"]
            out["task"].append((name, syn, real, scores["ratio"]["auroc_macro"]))
        mean = result["task"]["mean"]
        out["task"].append(("mean", mean["synthetic"]["auroc_macro"],
                            mean["real"]["auroc_macro"], mean["ratio"]["auroc_macro"]))  # fmt: skip
    if result["attacks"] is not None:
        for name, a in result["attacks"]["attacks"].items():
            out["attacks"].append((name, a["auc"], a.get("floor_auc"), a["tpr_at_1pct_fpr"]))
    return out


def _count_rows(result: dict[str, Any]) -> list[tuple]:
    """Per child and cell (0..k, more than k): the share of parents, real and synthetic."""
    return [
        (name, cell, real, synthetic)
        for name, c in result["child_counts"].items()
        for cell, real, synthetic in zip(c["cells"], c["real"], c["synthetic"], strict=True)
    ]


def _text(value: Any) -> str:
    if value is None:
        return "n/a"
    return (
        value if isinstance(value, str) else str(value) if isinstance(value, int) else _fmt(value)
    )


def _markdown_table(headers, rows) -> list[str]:
    lines = ["| " + " | ".join(headers) + " |", "|" + " --- |" * len(headers)]
    return lines + ["| " + " | ".join(_text(v) for v in row) + " |" for row in rows]


def relational_markdown(result: dict[str, Any]) -> str:
    """The section as Markdown."""
    parts = summary_rows(result)
    lines = ["## Related tables", "", f"_{result['notice']}_", "", "### Per table", ""]
    lines += _markdown_table(HEADERS["tables"], parts["tables"])
    lines += ["", "### Parent x child and rows per parent", ""]
    lines += _markdown_table(HEADERS["children"], parts["children"])
    lines += ["", *_markdown_table(HEADERS["counts"], _count_rows(result))]
    if parts["task"]:
        lines += ["", f"### Parent-level task (label '{result['label']}')", ""]
        lines += _markdown_table(HEADERS["task"], parts["task"])
    if parts["attacks"]:
        lines += ["", "### Parent-level membership attacks", ""]
        lines += _markdown_table(HEADERS["attacks"], parts["attacks"])
    return "\n".join(lines) + "\n"


def relational_html(result: dict[str, Any]) -> str:
    """The section as HTML (for ``dpforge report``)."""
    parts, use = summary_rows(result), result["row_use"]
    html = [
        "<h2>Related tables</h2>",
        f"<p class=\"note\">{esc(use['fidelity'])}.</p>",
        "<h3>Per table</h3>", table_html(HEADERS["tables"], parts["tables"]),
        "<h3>Parent x child, and rows per parent</h3>",
        table_html(HEADERS["children"], parts["children"]),
        table_html(HEADERS["counts"], _count_rows(result)),
    ]  # fmt: skip
    if parts["task"]:
        html += [
            f"<h3>Parent-level task: predict '{esc(result['label'])}' from the parent and its "
            "children's aggregates</h3>",
            f'<p class="note">{esc(use["task"])}.</p>',
            table_html(HEADERS["task"], parts["task"]),
        ]
    if parts["attacks"]:
        html += [
            "<h3>Parent-level membership attacks</h3>",
            f'<p class="note">{esc(use["attacks"])}. AUC 0.5 is guessing.</p>',
            table_html(HEADERS["attacks"], parts["attacks"]),
        ]
    return "\n".join(html)


def relational_page(result: dict[str, Any]) -> str:
    """The whole report page of related tables: the notice, then the section."""
    notice = f'<p class="warn">NOT differentially private. {esc(result["notice"])}</p>'
    return page_html("dpforge report: related tables", [
        "<h1>Evaluation of synthetic related tables</h1>", notice, relational_html(result),
    ])  # fmt: skip
