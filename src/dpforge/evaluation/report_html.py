"""HTML building blocks of the evaluation reports: the page style, number formatting, escaping,
tables, images and the page itself (self-contained: nothing is loaded from elsewhere).
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from dpforge import __version__

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


def _fmt(value: Any, digits: int = 3) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, str):
        return value
    if isinstance(value, float) and not math.isfinite(value):
        return "∞" if value > 0 else "-∞"
    return f"{value:.{digits}f}"


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
