"""Small HTML helpers for reports/index.html: escaped text, keyed cells, bars, links, the style sheet.

Every figure the page shows sits in an element with a `data-key` attribute, so a test can read the page
back (after a browser parsed it) and compare each figure with the JSON it came from.
"""

from __future__ import annotations

import html
import os
from pathlib import Path
from typing import Any

DASH = "–"  # what a missing figure (null in the JSON) shows


def esc(value: Any) -> str:
    return html.escape(str(value), quote=True)


def fmt(value: Any, digits: int | None = None) -> str:
    """Integers with thousands separators, floats with `digits` decimals, booleans as passed/failed."""
    if value is None:
        return DASH
    if isinstance(value, bool):
        return "passed" if value else "failed"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:.{1 if digits is None else digits}f}"
    return str(value)


def pct(part: float, whole: float) -> float | None:
    return 100.0 * part / whole if whole else None


def val(tag: str, key: str, value: Any, digits: int | None = None, cls: str = "") -> str:
    """One keyed element: `<td data-key="..." class="n">1,234</td>`; numbers are right-aligned."""
    classes = " ".join(c for c in (cls, "n" if isinstance(value, (int, float)) and not isinstance(value, bool)
                                   else "") if c)
    attr = f' class="{classes}"' if classes else ""
    return f'<{tag}{attr} data-key="{esc(key)}">{esc(fmt(value, digits))}</{tag}>'


def td(key: str, value: Any, digits: int | None = None, cls: str = "") -> str:
    return val("td", key, value, digits, cls)


def tds(prefix: str, row: dict[str, Any], *names: str) -> str:
    """`td` for each named field of a JSON row, keyed `<prefix>/<name>`."""
    return "".join(td(f"{prefix}/{n}", row.get(n)) for n in names)


def result_class(text: str) -> str:
    """Colour of a gate/check result: green passed, red failed, grey otherwise (skipped, not run)."""
    return {"passed": "ok", "pass": "ok", "failed": "bad", "fail": "bad"}.get(text, "muted")


def bar(kept_pct: float | None, title: str) -> str:
    """A two-colour bar: the kept share in green, the removed rest in red (pure CSS, no script)."""
    width = f"{kept_pct:.1f}" if kept_pct is not None else "0.0"
    return f'<div class="bar" title="{esc(title)}"><span style="width:{width}%"></span></div>'


def link(reports_root: Path, path: Path, text: str | None = None) -> str:
    """A relative link from reports/index.html to `path`, or the plain name when the file is absent."""
    rel = Path(os.path.relpath(path, reports_root)).as_posix()
    if not path.is_file():
        return f'<span class="muted">{esc(text or rel)} (missing)</span>'
    return f'<a href="{esc(rel)}">{esc(text or rel)}</a>'


def table(head: list[str], rows: list[str], cls: str = "") -> str:
    """`rows` are ready `<tr>...</tr>` strings; header cells after the first are right-aligned."""
    ths = "".join(f"<th>{esc(h)}</th>" for h in head)
    attr = f' class="{cls}"' if cls else ""
    return f"<table{attr}>\n<thead><tr>{ths}</tr></thead>\n<tbody>\n" + "\n".join(rows) + "\n</tbody>\n</table>"


def not_run(key: str, what: str) -> str:
    return f'<p class="not-run">{esc(what)}: <span data-key="{esc(key)}">not run</span></p>'


STYLE = """
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2em auto; max-width: 84em;
       color: #1d1f21; padding: 0 1em; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; }
h2 { border-bottom: 2px solid #d0d7de; padding-bottom: 0.2em; margin-top: 2em; }
h3 { margin: 1.6em 0 0.4em; }
h3 .links { font-size: 0.8em; font-weight: normal; margin-left: 0.6em; }
table { border-collapse: collapse; margin: 0.4em 0 1em; }
th, td { border: 1px solid #d0d7de; padding: 0.2em 0.6em; text-align: left; vertical-align: top; }
th { background: #f6f8fa; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
tr.total td { font-weight: 600; background: #f6f8fa; }
.headline { font-size: 1.25em; margin: 0.4em 0 1em; }
.headline b { font-size: 1.3em; }
.bar { width: 14em; height: 0.9em; background: #e5534b; border-radius: 2px; overflow: hidden; }
.bar span { display: block; height: 100%; background: #2da44e; }
.ok { color: #1a7f37; font-weight: 600; }
.bad { color: #cf222e; font-weight: 600; }
.muted, .not-run { color: #6e7781; }
.kv { white-space: nowrap; margin-right: 0.8em; display: inline-block; }
.legend span { display: inline-block; width: 0.9em; height: 0.9em; vertical-align: middle; margin: 0 0.3em 0 0.8em; }
code { font-size: 0.95em; }
""".strip()
