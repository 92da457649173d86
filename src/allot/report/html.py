"""HTML building blocks for the report: escaping, tables, sections, figures, the page.

Everything is inline (CSS in a <style> element, images as data: URIs), so
the file reads the same offline, attached to a ticket or opened from disk.
No script runs in the page.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence

CSS = """
:root { --fg: #1d2430; --muted: #5b6575; --line: #d9dee7; --bg: #ffffff; --soft: #f4f6fa; --accent: #2f5fb3; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 -apple-system, BlinkMacSystemFont, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif;
       color: var(--fg); background: var(--bg); }
header { padding: 24px 32px 12px; border-bottom: 1px solid var(--line); background: var(--soft); }
header h1 { margin: 0 0 4px; font-size: 22px; }
header p { margin: 4px 0; color: var(--muted); max-width: 1100px; }
nav { padding: 8px 32px; border-bottom: 1px solid var(--line); position: sticky; top: 0; background: var(--bg); z-index: 1; }
nav a { margin-right: 16px; color: var(--accent); text-decoration: none; font-weight: 600; }
main { padding: 8px 32px 48px; max-width: 1500px; }
section { margin-top: 28px; }
section h2 { font-size: 18px; margin: 0 0 6px; padding-bottom: 4px; border-bottom: 2px solid var(--line); }
section > p.lead { color: var(--muted); margin: 4px 0 12px; max-width: 1100px; }
.grid { display: grid; gap: 16px; grid-template-columns: repeat(var(--cols, 1), minmax(0, 1fr)); }
.card { border: 1px solid var(--line); border-radius: 6px; padding: 10px 12px; background: var(--bg); }
.card h3 { margin: 0 0 6px; font-size: 15px; }
figure { margin: 0; }
figure img { width: 100%; height: auto; display: block; }
figcaption { color: var(--muted); font-size: 12px; margin-top: 4px; }
table { border-collapse: collapse; width: 100%; font-variant-numeric: tabular-nums; }
th, td { padding: 4px 8px; border-bottom: 1px solid var(--line); text-align: right; vertical-align: top; }
th:first-child, td:first-child { text-align: left; }
th { background: var(--soft); font-weight: 600; }
td.text { text-align: left; }
.good { color: #1d7a3a; font-weight: 600; }
.bad { color: #b3261e; font-weight: 600; }
.note { color: var(--muted); font-size: 12px; }
.swatch { display: inline-block; width: 10px; height: 10px; border-radius: 2px; margin-right: 6px; vertical-align: baseline; }
footer { padding: 16px 32px; color: var(--muted); border-top: 1px solid var(--line); font-size: 12px; }
"""


def esc(text: object) -> str:
    return html.escape(str(text), quote=True)


def table(
    headers: Sequence[str],
    rows: Iterable[Sequence[str]],
    *,
    raw: bool = False,
    text_columns: Sequence[int] = (),
) -> str:
    """A table, first column left-aligned and the rest right-aligned except `text_columns`;
    cells are escaped unless `raw` (for cells that already hold markup)."""
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    body = []
    for row in rows:
        cells = []
        for index, cell in enumerate(row):
            value = cell if raw else esc(cell)
            cells.append(f'<td class="text">{value}</td>' if index in text_columns else f"<td>{value}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def figure(uri: str, alt: str, caption: str = "") -> str:
    cap = f"<figcaption>{esc(caption)}</figcaption>" if caption else ""
    return f'<figure><img src="{uri}" alt="{esc(alt)}">{cap}</figure>'


def card(title: str, body: str) -> str:
    return f'<div class="card"><h3>{esc(title)}</h3>{body}</div>'


def grid(cards: Sequence[str], columns: int | None = None) -> str:
    cols = columns if columns is not None else max(1, min(len(cards), 3))
    return f'<div class="grid" style="--cols: {cols}">{"".join(cards)}</div>'


def section(anchor: str, title: str, lead: str, body: str) -> str:
    return f'<section id="{esc(anchor)}"><h2>{esc(title)}</h2><p class="lead">{esc(lead)}</p>{body}</section>'


def page(
    *, title: str, subtitle: Sequence[str], nav: Sequence[tuple[str, str]], body: str, footer: str
) -> str:
    links = "".join(f'<a href="#{esc(a)}">{esc(t)}</a>' for a, t in nav)
    lines = "".join(f"<p>{esc(s)}</p>" for s in subtitle)
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)}</title><style>{CSS}</style></head><body>"
        f"<header><h1>{esc(title)}</h1>{lines}</header><nav>{links}</nav>"
        f"<main>{body}</main><footer>{esc(footer)}</footer></body></html>\n"
    )
