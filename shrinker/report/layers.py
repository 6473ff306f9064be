"""Kept vs upstream non-blank Python lines by top-level folder and by layer: layers.md and layers.svg.

Rows, by tree path of each .py file (lines counted with shrinker.graph.parse.count_lines, the unit
every report uses):
  folders: python/sglang/<top> (files directly in python/sglang: `sglang/*.py`), each package of
           sgl-kernel/python as one row, and `(other .py)` for any .py outside the import roots;
  layers:  <root>/<part> for the `[report_layers]` rule's root (python/sglang/srt for SGLang), with
           its `split` folders one level further (`layers/attention`, `layers/moe`, ...); files
           directly in a folder are `<folder>/*.py`. Without the rule, no layer rows.
The picture is a hand-written SVG (no plotting dependency): one grey bar per row for upstream and a
coloured bar inside it for what the tree keeps, both on one scale per section.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from html import escape
from pathlib import Path

from shrinker.graph.discover import IMPORT_ROOTS
from shrinker.graph.parse import count_lines


@dataclass(frozen=True)
class LayerSpec:
    root: str  # "python/sglang/srt"
    split: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return self.root.rstrip("/").rsplit("/", 1)[-1]


@dataclass
class Row:
    name: str
    upstream: int = 0
    kept: int = 0
    upstream_files: int = 0
    kept_files: int = 0

    @property
    def fraction(self) -> float:
        return self.kept / self.upstream if self.upstream else 0.0

    def to_json(self) -> dict:
        return {"name": self.name, "upstream_lines": self.upstream, "kept_lines": self.kept,
                "upstream_files": self.upstream_files, "kept_files": self.kept_files}


def python_lines(root: Path) -> dict[str, int]:
    """Tree path -> non-blank lines, for every .py file under the tree's import roots (apply's own scan)."""
    from shrinker.graph.sources import python_sources

    return {rel: count_lines(text) for rel, text in python_sources(Path(root))}


def folder_of(rel: str) -> str:
    """The top-level folder row of a tree path: under the first import root (python/) one row per
    top-level folder of each package (sglang/<top>, `sglang/*.py`); under the others (sgl-kernel/python)
    one row per package; `(other .py)` outside them."""
    for i, root in enumerate(IMPORT_ROOTS):
        if not rel.startswith(root + "/"):
            continue
        parts = rel[len(root) + 1:].split("/")
        if len(parts) == 1:
            return f"{root}/*.py"
        if i == 0:
            return f"{parts[0]}/*.py" if len(parts) == 2 else f"{parts[0]}/{parts[1]}"
        return parts[0]
    return "(other .py)"


def layer_of(rel: str, spec: LayerSpec) -> str | None:
    """The layer row of a path under the spec's root (None: elsewhere)."""
    root = spec.root.rstrip("/") + "/"
    if not rel.startswith(root):
        return None
    parts = rel[len(root):].split("/")
    if len(parts) == 1:
        return f"{spec.name}/*.py"
    if parts[0] in spec.split:
        return f"{parts[0]}/*.py" if len(parts) == 2 else f"{parts[0]}/{parts[1]}"
    return parts[0]


def tabulate(upstream: dict[str, int], kept: dict[str, int], key) -> list[Row]:
    rows: dict[str, Row] = {}
    for source, attr in ((upstream, "upstream"), (kept, "kept")):
        for rel, n in source.items():
            name = key(rel)
            if name is None:
                continue
            row = rows.setdefault(name, Row(name))
            setattr(row, attr, getattr(row, attr) + n)
            setattr(row, f"{attr}_files", getattr(row, f"{attr}_files") + 1)
    return sorted(rows.values(), key=lambda r: (-r.upstream, -r.kept, r.name))


def total(rows: list[Row], name: str = "total") -> Row:
    return Row(name, sum(r.upstream for r in rows), sum(r.kept for r in rows),
               sum(r.upstream_files for r in rows), sum(r.kept_files for r in rows))


def _table(rows: list[Row], title: str) -> list[str]:
    lines = [f"| {title} | upstream lines | kept lines | removed | kept % | files (kept / upstream) |",
             "|---|---:|---:|---:|---:|---:|"]
    for r in [*rows, total(rows, "**total**")]:
        lines.append(f"| {r.name} | {r.upstream:,} | {r.kept:,} | {r.upstream - r.kept:,} | "
                     f"{100 * r.fraction:.1f} | {r.kept_files} / {r.upstream_files} |")
    return lines


def render_markdown(folders: list[Row], layers: list[Row], tree: str, upstream: str,
                    spec: LayerSpec | None = None) -> str:
    t = total(folders)
    lines = [
        "# Kept vs upstream lines, by folder and by layer",
        "",
        f"Non-blank Python lines (`count_lines`) of tree `{tree}` against upstream `{upstream}`: "
        f"**{t.kept:,} of {t.upstream:,} kept ({100 * t.fraction:.1f} %)**, {t.upstream - t.kept:,} removed. "
        "Picture: [layers.svg](layers.svg).",
        "",
        "## Top-level folders (python/sglang/*, sgl-kernel/python/*)",
        "",
        *_table(folders, "folder"),
        "",
    ]
    if spec is not None:
        deeper = f", {', '.join(spec.split)} split one level further" if spec.split else ""
        lines += [f"## Layers ({spec.root}/*{deeper})", "", *_table(layers, "layer")]
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------------------------------------
# SVG

_W, _LABEL, _BAR, _ROW, _PAD = 760, 190, 400, 18, 12
_KEPT, _UP, _TEXT = "#2b7bb9", "#d9d9d9", "#222"


def _section(rows: list[Row], title: str, y: float) -> tuple[list[str], float]:
    out = [f'<text x="{_PAD}" y="{y + 14:.0f}" font-weight="bold">{escape(title)}</text>']
    y += 24
    scale = _BAR / max((r.upstream for r in rows), default=1) if rows else 0
    for r in rows:
        up_w, kept_w = r.upstream * scale, r.kept * scale
        x0 = _PAD + _LABEL
        out.append(f'<text x="{x0 - 6}" y="{y + 12:.0f}" text-anchor="end">{escape(r.name)}</text>')
        out.append(f'<rect x="{x0}" y="{y + 2:.0f}" width="{max(up_w, 0.5):.1f}" height="{_ROW - 5}" fill="{_UP}"/>')
        if r.kept:
            out.append(f'<rect x="{x0}" y="{y + 2:.0f}" width="{max(kept_w, 0.5):.1f}" height="{_ROW - 5}" '
                       f'fill="{_KEPT}"/>')
        out.append(f'<text x="{x0 + up_w + 6:.1f}" y="{y + 12:.0f}" fill="#555">{r.kept:,} / {r.upstream:,} '
                   f'({100 * r.fraction:.0f} %)</text>')
        y += _ROW
    return out, y + 10


def _fold_small(rows: list[Row], limit: int) -> list[Row]:
    """At most `limit` rows: the smallest upstream rows beyond it are summed into one."""
    if len(rows) <= limit:
        return rows
    head, tail = rows[:limit - 1], rows[limit - 1:]
    return [*head, total(tail, f"{len(tail)} others, summed")]


def render_svg(folders: list[Row], layers: list[Row], spec: LayerSpec | None = None, limit: int = 24) -> str:
    t = total(folders)
    body = [f'<text x="{_PAD}" y="22" font-size="15" font-weight="bold">Non-blank Python lines kept: '
            f'{t.kept:,} of {t.upstream:,} ({100 * t.fraction:.1f} %)</text>',
            f'<rect x="{_PAD}" y="32" width="12" height="12" fill="{_KEPT}"/>'
            f'<text x="{_PAD + 16}" y="42">kept</text>'
            f'<rect x="{_PAD + 60}" y="32" width="12" height="12" fill="{_UP}"/>'
            f'<text x="{_PAD + 76}" y="42">upstream</text>']
    y = 54.0
    sections = [(folders, "Top-level folders")] + ([(layers, f"Layers of {spec.root}")] if spec is not None else [])
    for rows, title in sections:
        part, y = _section(_fold_small(rows, limit), title, y)
        body += part
    height = int(y + _PAD)
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{_W}" height="{height}" viewBox="0 0 {_W} {height}" '
            f'font-family="Helvetica, Arial, sans-serif" font-size="11" fill="{_TEXT}">\n'
            f'<rect width="{_W}" height="{height}" fill="white"/>\n' + "\n".join(body) + "\n</svg>\n")


def layers_report(tree: Path, upstream: Path, out_dir: Path, spec: LayerSpec | None, *, tree_label: str = "",
                  upstream_label: str = "") -> tuple[list[Row], list[Row], list[Path]]:
    up, kept = python_lines(upstream), python_lines(tree)
    folders = tabulate(up, kept, folder_of)
    layers = tabulate(up, kept, lambda rel: layer_of(rel, spec)) if spec is not None else []
    out_dir.mkdir(parents=True, exist_ok=True)
    md, svg, js = out_dir / "layers.md", out_dir / "layers.svg", out_dir / "layers.json"
    md.write_text(render_markdown(folders, layers, tree_label or str(tree), upstream_label or str(upstream), spec))
    svg.write_text(render_svg(folders, layers, spec))
    js.write_text(json.dumps({"tree": tree_label or str(tree), "upstream": upstream_label or str(upstream),
                              "total": total(folders).to_json(),
                              "folders": [r.to_json() for r in folders],
                              "layers": [r.to_json() for r in layers]}, indent=1) + "\n")
    return folders, layers, [md, svg, js]


def main(argv: list[str] | None = None) -> int:
    """`python -m shrinker.report.layers [TREE [UPSTREAM]]`: the same as `shrink report layers`."""
    import sys

    from shrinker.report.commands import layers_command

    args = sys.argv[1:] if argv is None else argv
    layers_command(Path(args[0]) if args else None, Path(args[1]) if len(args) > 1 else None)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
