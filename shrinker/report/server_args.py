"""Which ServerArgs fields only removed code read (issue 7, item 4: the list; not yet their removal).

The class is the one `shrink verify` probes (`[server_args].target` in rules/<profile>-verify.toml). A
field is read as an attribute (`server_args.enable_lmcache`, `self.enable_lmcache`,
`get_global_server_args().enable_lmcache`) or by its name in a string (`getattr(args, "...")`). For
every field the report counts such reads OUTSIDE the class's own module, in upstream and in the kept
tree: a field upstream reads elsewhere and the kept tree reads nowhere else served only code that is
gone; its CLI option still parses and does nothing. Fields read only inside server_args.py (checks,
defaults) are listed apart: whether they matter takes reading the checks.

A text scan (word-bounded `.name` and quoted "name"), so a field that shares its name with another
attribute read elsewhere counts as read: the list errs towards keeping.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass
from pathlib import Path

from shrinker.apply.run import python_sources
from shrinker.errors import ShrinkError
from shrinker.graph.discover import module_paths


@dataclass
class FieldReads:
    name: str
    line: int
    upstream_elsewhere: int  # files outside the class's module reading it, upstream
    kept_elsewhere: int  # the same in the kept tree
    first_upstream_reader: str  # one such upstream file, for the report

    @property
    def only_removed_code(self) -> bool:
        return self.upstream_elsewhere > 0 and self.kept_elsewhere == 0


def dataclass_fields(source: str, class_name: str) -> list[tuple[str, int]]:
    """(name, line) of the annotated fields of `class_name` (class-body `name: T [= default]`)."""
    for node in ast.parse(source).body:
        if isinstance(node, ast.ClassDef) and node.name == class_name:
            return [(s.target.id, s.lineno) for s in node.body
                    if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)
                    and not s.target.id.startswith("_")]
    return []


def _readers(tree: Path, names: list[str], own: str) -> dict[str, list[str]]:
    """name -> tree paths (other than `own`) reading it as `.name` or "name"."""
    if not names:
        return {}
    words = re.compile(r"\.(" + "|".join(map(re.escape, names)) + r")\b|[\"'](" +
                       "|".join(map(re.escape, names)) + r")[\"']")
    found: dict[str, list[str]] = {n: [] for n in names}
    for rel, text in python_sources(tree):
        if rel == own:
            continue
        for name in {m.group(1) or m.group(2) for m in words.finditer(text)}:
            found[name].append(rel)
    return found


def _module_path(tree: Path, module: str) -> str:
    """The tree path of `module` under one of the import roots (ShrinkError: none holds it)."""
    for candidate in module_paths(module):
        if (tree / candidate).is_file():
            return candidate
    raise ShrinkError(f"{module} (rules: [server_args].target) is in no import root of {tree}")


def server_args_reads(tree: Path, upstream: Path, target: str) -> list[FieldReads]:
    module, _, class_name = target.partition(":")
    own = _module_path(upstream, module)
    source = (upstream / own).read_text()
    fields = dataclass_fields(source, class_name)
    names = [n for n, _ in fields]
    up, kept = _readers(upstream, names, own), _readers(tree, names, own)
    return [FieldReads(n, line, len(up[n]), len(kept[n]), sorted(up[n])[0] if up[n] else "")
            for n, line in fields]


def write_report(reads: list[FieldReads], out_dir: Path, target: str, labels: dict[str, str]) -> list[Path]:
    gone = [r for r in reads if r.only_removed_code]
    inside = [r for r in reads if r.upstream_elsewhere == 0]
    data = {"target": target, "fields": len(reads), "only_removed_code": [r.name for r in gone],
            "read_only_in_own_module": [r.name for r in inside], **labels}
    out_dir.mkdir(parents=True, exist_ok=True)
    json_path, md_path = out_dir / "server-args.json", out_dir / "server-args.md"
    json_path.write_text(json.dumps(data, indent=1) + "\n")
    lines = [f"# {target}: fields only removed code read", "",
             f"Trees: kept {labels.get('tree', '')}, upstream {labels.get('upstream', '')}. "
             f"{len(reads)} fields; a read is `.field` or \"field\" in a file other than the class's module.", "",
             f"**{len(gone)} fields** are read elsewhere upstream and nowhere else in the kept tree: their CLI "
             f"options still parse and do nothing here (candidates to remove with their options; not removed yet).", "",
             "| field | line | upstream files reading it | e.g. |", "|---|---:|---:|---|"]
    lines += [f"| `{r.name}` | {r.line} | {r.upstream_elsewhere} | {r.first_upstream_reader} |" for r in gone]
    lines += ["", f"{len(inside)} fields are read only inside their own module upstream too (defaults and "
                  f"checks; not judged here): " + ", ".join(f"`{r.name}`" for r in inside) + "."]
    md_path.write_text("\n".join(lines) + "\n")
    return [md_path, json_path]

