"""reports/index.html: one static page over every release's JSON reports (`shrink report index`).

Reads reports/<profile>/v<version>/{apply,layers,verify,requirements,plan}.json, every gpu-verify.json
in a release folder or one folder below it, and reports/<profile>/regen-*.json; writes one
self-contained HTML file (inline CSS, no script, no external URL) whose links to the markdown reports
are relative, so the page works from a checkout, a CI artifact or a static file server alike.
Deterministic: the same JSON gives the same bytes (sorted walks, no clock), so a stale page shows as a
diff and a test can compare the committed page with a fresh rendering.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from packaging.version import InvalidVersion, Version

from shrinker.report import index_sections as sec
from shrinker.report.index_html import STYLE, esc, link

INDEX_NAME = "index.html"


@dataclass(frozen=True)
class Release:
    profile: str
    version: str  # "0.5.16", from the folder name v0.5.16
    folder: Path

    @property
    def key(self) -> str:  # the prefix of every data-key in its section
        return f"{self.profile}/v{self.version}"


def _version_order(version: str) -> tuple[int, Any]:
    try:
        return (1, Version(version))
    except InvalidVersion:  # an odd folder name sorts after the real releases
        return (0, version)


def find_releases(reports_root: Path) -> list[Release]:
    """reports/<profile>/v<version>/ folders holding at least one JSON report; newest release first."""
    found = []
    for profile in sorted(p for p in reports_root.iterdir() if p.is_dir()) if reports_root.is_dir() else []:
        for folder in profile.iterdir():
            if folder.is_dir() and folder.name.startswith("v") and next(folder.rglob("*.json"), None):
                found.append(Release(profile.name, folder.name[1:], folder))
    found.sort(key=lambda r: _version_order(r.version), reverse=True)
    return sorted(found, key=lambda r: r.profile)  # stable: newest first within each profile


def _load(path: Path) -> dict | None:
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def _links(root: Path, folder: Path, *names: str) -> str:
    return " ".join(link(root, folder / n) for n in names if (folder / n).is_file())


def _gpu_reports(root: Path, folder: Path) -> list[tuple[str, dict, str]]:
    """(label, json, link to its md) for gpu-verify.json here and one folder down (e.g. gpu-final/)."""
    paths = sorted([folder / "gpu-verify.json"] + list(folder.glob("*/gpu-verify.json")))
    out = []
    for path in paths:
        if path.is_file():
            label = path.relative_to(folder).with_suffix("").as_posix()  # gpu-verify, gpu-final/gpu-verify
            out.append((label, _load(path), link(root, path.with_suffix(".md"), label)))
    return out


def release_section(root: Path, r: Release) -> str:
    f, p = r.folder, r.key
    apply = _load(f / "apply.json")
    gpu = _gpu_reports(root, f)
    other = sorted(f.rglob("*.md"))
    parts = [
        f'<h2 id="{esc(p)}">{esc(r.profile)} v{esc(r.version)}</h2>',
        sec.headline(p, apply),
        sec.layers(p, _load(f / "layers.json"), _links(root, f, "layers.md", "layers.svg")),
        sec.batches(p, apply, _links(root, f, "apply.md")),
        sec.verify(p, _load(f / "verify.json"), _links(root, f, "verify.md")),
        sec.gpu(p, gpu, ""),
        sec.requirements(p, _load(f / "requirements.json"), _links(root, f, "requirements.md")),
        sec.plan(p, _load(f / "plan.json"), _links(root, f, "plan.md")),
        sec.heading("All reports of this release", ""),
        "<ul>" + "".join(f"<li>{link(root, m)}</li>" for m in other) + "</ul>",
    ]
    return "\n".join(parts)


def regen_section(root: Path, profile: Path) -> str:
    files = sorted(profile.glob("regen-*.json"))
    reports = [(p.stem[len("regen-"):], _load(p), link(root, p.with_suffix(".md"), f"{p.stem}.md")) for p in files]
    body = sec.regen(profile.name, reports) if reports else sec.not_run(f"{profile.name}/regen/status", "regen")
    return f'<h2 id="{esc(profile.name)}/regen">{esc(profile.name)}: regen (release to release)</h2>\n{body}'


def render_index(reports_root: Path) -> str:
    root = Path(reports_root)
    releases = find_releases(root)
    profiles = sorted({r.profile for r in releases} | {p.parent.name for p in root.glob("*/regen-*.json")})
    toc = "".join(f'<li><a href="#{esc(r.key)}">{esc(r.profile)} v{esc(r.version)}</a></li>' for r in releases)
    toc += "".join(f'<li><a href="#{esc(p)}/regen">{esc(p)}: regen</a></li>' for p in profiles)
    body = [release_section(root, r) for r in releases] + [regen_section(root, root / p) for p in profiles]
    if not releases and not profiles:
        body = ['<p class="not-run">No reports yet: run <code>shrink plan</code>, <code>shrink apply</code>, '
                '<code>shrink verify</code>.</p>']
    return "\n".join([
        "<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        "<title>shrinker reports</title>", f"<style>\n{STYLE}\n</style>", "</head>", "<body>",
        "<h1>shrinker reports</h1>",
        '<p class="muted">Upstream SGLang pruned to a DeepSeek-only, CUDA-only tree: what each release kept, '
        "how each batch passed its gate, what verification found. Generated from the JSON reports next to "
        "this page by <code>shrink report index</code>; the links open the markdown reports.</p>",
        f"<ul>{toc}</ul>", *body, "</body>", "</html>", ""])


def write_index(reports_root: Path) -> tuple[Path, bool]:
    """Write reports/index.html; (path, whether its bytes changed)."""
    path = Path(reports_root) / INDEX_NAME
    text = render_index(reports_root)
    changed = not path.is_file() or path.read_text(encoding="utf-8") != text
    if changed:
        path.write_text(text, encoding="utf-8")
    return path, changed
