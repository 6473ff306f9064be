"""Prune `[project].dependencies` of a tree's python/pyproject.toml to what the kept code imports.

A declared distribution stays when a kept file under python/ imports a top-level name it provides
(guarded and function-local imports count: they run when reached; imports under `if TYPE_CHECKING`
do not), or when `[requirements].keep` in the rules names it (packages used by executable or by a
framework that imports them by string: ninja, py-spy, python-multipart ...).

Import names map to distributions by the release's distribution index (shrinker/upstream/
distributions.py: the wheels upstream's declared requirements resolve to on the target machine, as
PyPI had them on the release day; never what is installed here), as the static checks map them, so
`shrink verify`'s third-party check finds no new undeclared import in the pruned tree. A name no
declared distribution provides by itself (`cuda` from cuda-bindings, `huggingface_hub` ...) is
traced through the index's requirement graph: the declared distributions fewest steps away from
one providing it stay. Imports of the tree's other packages (`sgl_kernel`, from sgl-kernel/) need
that package's distribution.

The edit is line-based: tomlkit is not a dependency of shrinker, and deleting whole lines of the
one-requirement-per-line array keeps every other byte as it was (checked by re-parsing: only the
dependency list may differ). Sizes are the unpacked bytes of each distribution's wheel in the index;
a distribution the index has no wheel of is reported as not measured.
"""

from __future__ import annotations

import json
import re
import tomllib
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from shrinker.checks.factcache import tree_facts
from shrinker.checks.tree import SourceTree
from shrinker.errors import ShrinkError
from shrinker.graph.discover import IMPORT_ROOTS
from shrinker.upstream.distributions import DistIndex, provided_by
from shrinker.graph.stdlib import STDLIB

PYPROJECT = "python/pyproject.toml"

def distances(index: DistIndex, roots: dict[str, frozenset[str]]) -> dict[str, int]:
    """Every indexed distribution the roots (name -> extras) pull in on the target -> its fewest
    requirement steps from a root (roots: 0)."""
    found: dict[str, int] = {}
    seen: set[tuple[str, frozenset[str]]] = set()
    env = index.dists
    layer = [(n, e) for n, e in roots.items() if n in env]
    depth = 0
    while layer:
        nxt = []
        for item in layer:
            if item in seen:
                continue
            seen.add(item)
            found.setdefault(item[0], depth)
            nxt.extend(r for r in index.requires(*item) if r[0] in env and r not in seen)
        layer, depth = nxt, depth + 1
    return found


def closure(index: DistIndex, roots: dict[str, frozenset[str]]) -> set[str]:
    """Every indexed distribution the roots (name -> extras) pull in, roots included."""
    return set(distances(index, roots))


# ------------------------------------------------------------------------------------------------
# The pyproject's dependency array, line by line


@dataclass
class DepLine:
    index: int  # line index in the file
    text: str  # the requirement string
    name: str  # canonical distribution name
    extras: frozenset[str]


def _array_span(lines: list[str], path: Path) -> tuple[int, int]:
    """(first, last) line indexes strictly inside `dependencies = [` ... `]` of the [project] table."""
    table, start = "", None
    for i, line in enumerate(lines):
        stripped = line.strip()
        if start is None:
            if stripped.startswith("["):
                table = stripped
                continue
            if table == "[project]" and re.match(r"dependencies\s*=", stripped):
                if not re.fullmatch(r"dependencies\s*=\s*\[\s*(#.*)?", stripped):
                    raise ShrinkError(f"{path}: [project].dependencies is not one requirement per line; "
                                      "edit it by hand or reformat it")
                start = i + 1
        elif stripped == "]" or stripped.startswith("]"):
            return start, i
    raise ShrinkError(f"{path}: no multi-line [project].dependencies array")


def read_dependency_lines(text: str, path: Path = Path(PYPROJECT)) -> list[DepLine]:
    lines = text.splitlines(keepends=True)
    first, last = _array_span(lines, path)
    out = []
    for i in range(first, last):
        stripped = lines[i].strip()
        if not stripped or stripped.startswith("#"):
            continue
        try:
            value = tomllib.loads(f"x = [\n{stripped}\n]")["x"]
        except tomllib.TOMLDecodeError:
            raise ShrinkError(f"{path}:{i + 1}: not one requirement per line: {stripped}") from None
        if len(value) != 1 or not isinstance(value[0], str):
            raise ShrinkError(f"{path}:{i + 1}: not one requirement per line: {stripped}")
        req = Requirement(value[0])
        out.append(DepLine(i, value[0], canonicalize_name(req.name), frozenset(req.extras)))
    return out


def rewrite_dependencies(text: str, keep: set[str], path: Path = Path(PYPROJECT)) -> str:
    """`text` without the dependency lines whose canonical name is not in `keep`; nothing else changes."""
    deps = read_dependency_lines(text, path)
    drop = {d.index for d in deps if d.name not in keep}
    lines = text.splitlines(keepends=True)
    new = "".join(line for i, line in enumerate(lines) if i not in drop)
    before, after = tomllib.loads(text), tomllib.loads(new)
    wanted = [d.text for d in deps if d.name in keep]
    if after["project"].get("dependencies") != wanted:
        raise ShrinkError(f"{path}: the edit did not give the expected dependency list")
    before["project"]["dependencies"] = wanted
    if before != after:
        raise ShrinkError(f"{path}: the edit changed more than [project].dependencies")
    return new


# ------------------------------------------------------------------------------------------------
# Which distributions the kept code needs


@dataclass
class Use:
    file: str
    line: int
    guard: str  # "" | "try"
    in_function: bool


@dataclass
class Decision:
    name: str  # canonical
    requirement: str  # the line's requirement string
    kept: bool
    reason: str
    imports: dict[str, list[Use]] = field(default_factory=dict)  # import name -> uses
    size: int | None = None  # unpacked bytes of its wheel in the index (None: no wheel there)


@dataclass
class Indirect:
    """An imported name no declared distribution provides by itself."""

    name: str
    files: int
    first: str  # "path:line"
    installed_as: list[str]  # indexed distributions providing it
    via: list[str]  # declared distributions that pull one of those in, nearest first
    kept_via: list[str]  # those among the kept ones
    guarded_only: bool = False  # every use sits in try/except ImportError

    @property
    def needs_a_look(self) -> bool:
        """Provided by an indexed wheel, imported unguarded, and no declared distribution pulls that wheel
        in on the target (only through an extra or another platform's marker): declare it, or check."""
        return bool(self.installed_as) and not self.via and not self.guarded_only


@dataclass
class RequirementsResult:
    tree: str
    upstream_declared: int
    decisions: list[Decision]
    indirect: list[Indirect]
    type_checking_only: dict[str, list[str]]  # import name -> files importing it only for typing
    freed: dict[str, int]  # indexed distributions no kept requirement pulls in any more -> bytes
    unmeasured: list[str]  # dropped distributions the index has no wheel of
    index: str = ""  # the distribution index read: "<release>, PyPI as of <cutoff>, <target>"
    changed: bool = False  # the tree's pyproject differs from the pruned text
    written: bool = False

    @property
    def kept(self) -> list[Decision]:
        return [d for d in self.decisions if d.kept]

    @property
    def dropped(self) -> list[Decision]:
        return [d for d in self.decisions if not d.kept]

    def to_json(self) -> dict:
        return {
            "tree": self.tree,
            "index": self.index,
            "upstream_declared": self.upstream_declared,
            "kept": len(self.kept),
            "dropped": len(self.dropped),
            "dropped_installed_bytes": sum(d.size or 0 for d in self.dropped),
            "freed_installed_bytes": sum(self.freed.values()),
            "unmeasured": self.unmeasured,
            "decisions": [_decision_json(d) for d in self.decisions],
            "indirect": [asdict(i) for i in self.indirect],
            "needs_a_look": [i.name for i in self.indirect if i.needs_a_look],
            "type_checking_only": self.type_checking_only,
            "freed": self.freed,
        }


def _decision_json(d: Decision) -> dict:
    return {"name": d.name, "requirement": d.requirement, "kept": d.kept, "reason": d.reason,
            "size": d.size,
            "imports": {k: {"files": len({u.file for u in v}), "uses": len(v),
                            "first": f"{v[0].file}:{v[0].line}",
                            "guarded_only": all(u.guard == "try" for u in v)} for k, v in sorted(d.imports.items())}}


def third_party_uses(tree, facts) -> tuple[dict[str, list[Use]], dict[str, list[str]]]:
    """Top-level import name -> runtime uses in files under python/; and names used only for typing."""
    internal = set(tree.top_packages)
    uses: dict[str, list[Use]] = defaultdict(list)
    typing: dict[str, set[str]] = defaultdict(set)
    for name, f in sorted(facts.items()):
        rel = tree.rel(name)
        if not rel.startswith("python/"):
            continue
        for imp in f.imports:
            top = imp.module.split(".")[0]
            if not top or top in STDLIB:
                continue
            if top in internal and tree.rel(top).startswith("python/"):
                continue  # the tree's own package
            if imp.guard == "type_checking":
                typing[top].add(rel)
            else:
                uses[top].append(Use(rel, imp.line, imp.guard, imp.in_function))
    only_typing = {k: sorted(v) for k, v in sorted(typing.items()) if k not in uses}
    return dict(uses), only_typing


def _other_package_dists(tree) -> dict[str, str]:
    """Top-level packages the tree holds outside python/ -> the distribution its pyproject names."""
    out = {}
    for top in tree.top_packages:
        rel = tree.rel(top)
        if rel.startswith("python/"):
            continue
        folder = tree.root / rel.split("/python/")[0] if "/python/" in rel else None
        pyproject = folder / "pyproject.toml" if folder else None
        if pyproject and pyproject.exists():
            name = tomllib.loads(pyproject.read_text()).get("project", {}).get("name")
            if name:
                out[top] = canonicalize_name(name)
    return out


def decide(tree, facts, upstream_text: str, index: DistIndex, keep_rules=(),
           tree_label: str = "") -> RequirementsResult:
    """Which of upstream's declared distributions the kept tree needs, each with its reason."""
    deps = read_dependency_lines(upstream_text)
    declared = {d.name for d in deps}
    uses, only_typing = third_party_uses(tree, facts)
    other = _other_package_dists(tree)
    dist_map, env = index.import_map, index.dists

    imports: dict[str, dict[str, list[Use]]] = defaultdict(dict)
    unresolved: dict[str, list[Use]] = {}
    for top, u in sorted(uses.items()):
        dist = other.get(top) or provided_by(top, declared, dist_map)
        if dist in declared:
            imports[dist][top] = u
        else:
            unresolved[top] = u

    reasons: dict[str, str] = {}
    for dist, by_name in imports.items():
        files = {x.file for v in by_name.values() for x in v}
        first = min((x for v in by_name.values() for x in v), key=lambda x: (x.file, x.line))
        names = ", ".join(sorted(by_name))
        guarded = all(x.guard == "try" for v in by_name.values() for x in v)
        reasons[dist] = (f"imported as {names} by {len(files)} kept file{'s' if len(files) != 1 else ''} "
                         f"(first {first.file}:{first.line}){', only guarded' if guarded else ''}")
    for rule in keep_rules:
        name = canonicalize_name(rule.name)
        if name not in declared or name in reasons:
            continue
        present = [p for p in map(lambda w: _present(tree.root, w), rule.when) if p]
        if rule.when and not present:
            continue
        reasons[name] = f"rule requirements.keep: {rule.reason}" + (f" (needed by {present[0]})" if present else "")

    # A name no declared distribution provides by itself: the declared distributions nearest to one
    # providing it in the requirement graph stay (cuda-python -> cuda-bindings for `cuda`, even though
    # nvidia-cutlass-dsl pulls cuda-bindings in further down): the most direct declaration survives.
    # When one distribution provides the name and a kept one is among the nearest, that one satisfies
    # it (huggingface_hub comes with transformers, kept for its own imports: timm, as near, is no reason
    # to stay). A namespace several distributions share (`cuda`: cuda-bindings, cuda-core ...) keeps all
    # the nearest: top-level names cannot tell which part kept code needs. Namespaces go first, so what
    # they keep counts for the names after them.
    by_extras = {d.name: d.extras for d in deps}
    pulls = {d: distances(index, {d: by_extras[d]}) for d in declared}
    indirect: list[Indirect] = []
    for top, u in sorted(unresolved.items(), key=lambda kv: (len(dist_map.get(kv[0], [])) == 1, kv[0])):
        installed = [canonicalize_name(x) for x in dist_map.get(top, [])]
        steps = {d: min(pulls[d][x] for x in installed if x in pulls[d])
                 for d in declared if any(x in pulls[d] for x in installed)}
        via = sorted(steps, key=lambda d: (steps[d], d))
        nearest = [d for d in via if steps[d] == steps[via[0]]] if via else []
        first = min(u, key=lambda x: (x.file, x.line))
        if not (len(installed) == 1 and any(d in reasons for d in nearest)):
            for d in nearest:
                reasons.setdefault(d, f"pulls in {'/'.join(installed)}, which kept code imports as {top} "
                                      f"({first.file}:{first.line}); the nearest declared provider")
        indirect.append(Indirect(top, len({x.file for x in u}), f"{first.file}:{first.line}", installed, via,
                                 [], all(x.guard == "try" for x in u)))
    indirect.sort(key=lambda i: i.name)
    for item in indirect:
        item.kept_via = [d for d in item.via if d in reasons]

    decisions = []
    for d in deps:
        kept = d.name in reasons
        decisions.append(Decision(d.name, d.text, kept, reasons.get(d.name, "no kept file imports it"),
                                  imports.get(d.name, {}), env[d.name].size if d.name in env else None))
    kept_names = {d.name: d.extras for d in deps if d.name in reasons}
    dropped_names = {d.name: d.extras for d in deps if d.name not in reasons}
    still = closure(index, kept_names)
    freed = {n: env[n].size or 0 for n in sorted(closure(index, dropped_names) - still)}
    unmeasured = sorted(n for n in dropped_names if env.get(n) is None or env[n].size is None)
    return RequirementsResult(tree_label, len(deps), decisions, indirect, only_typing, freed, unmeasured,
                              index=index_label(index))


def index_label(index: DistIndex) -> str:
    t = index.target
    where = f"CPython {t.get('python_version', '?')} on {t.get('sys_platform', '?')} {t.get('platform_machine', '?')}"
    return f"{index.release or 'no declared distributions'}: PyPI as of {index.cutoff or '-'}, {where}"


def run_requirements(tree_root: Path, upstream_root: Path, *, index: DistIndex, keep_rules=(),
                     write: bool = False, jobs: int = 2, tree_label: str = "") -> tuple[RequirementsResult, str]:
    """Decide for the tree; return the result and the pruned pyproject text (written with `write`).
    `index`: the upstream release's distribution index (upstream.distributions.load_index)."""
    target = tree_root / PYPROJECT
    upstream_py = upstream_root / PYPROJECT
    for p in (target, upstream_py):
        if not p.exists():
            raise ShrinkError(f"no {p}")
    tree = SourceTree.load(tree_root)
    facts = tree_facts(tree, jobs=jobs)
    result = decide(tree, facts, upstream_py.read_text(), index, keep_rules,
                    tree_label=tree_label or str(tree_root))
    current = target.read_text()
    keep = {d.name for d in result.kept}
    extra = {d.name for d in read_dependency_lines(current, target)} - {d.name for d in result.decisions}
    new = rewrite_dependencies(current, keep | extra, target)  # not upstream's: the tree's own, kept
    result.changed = new != current
    if write and result.changed:
        target.write_text(new)
        result.written = True
    return result, new


# ------------------------------------------------------------------------------------------------
# Reports


def _mb(n: int | None) -> str:
    return "-" if n is None else f"{n / 1e6:.1f}"


def render_markdown(r: RequirementsResult) -> str:
    dropped_bytes = sum(d.size or 0 for d in r.dropped)
    lines = [
        "# Requirements: python/pyproject.toml `[project].dependencies`",
        "",
        f"Tree `{r.tree}`. Upstream declares **{r.upstream_declared}** distributions; the kept code needs "
        f"**{len(r.kept)}**; **{len(r.dropped)}** go.",
        "",
        f"Import names and sizes come from the distribution index ({r.index}; each distribution's wheel, "
        f"read from PyPI, never what is installed here). Install size saved (unpacked wheel bytes): "
        f"**{_mb(dropped_bytes)} MB** in the dropped distributions "
        f"themselves, **{_mb(sum(r.freed.values()))} MB** with the dependencies no kept requirement pulls in "
        f"({len(r.freed)} distributions). No wheel for the target, so not measured: "
        f"{', '.join(r.unmeasured) or 'none'}.",
        "",
        "Kept when a kept file under python/ imports it (guarded or inside a function counts; `if "
        "TYPE_CHECKING` does not), when it is the nearest declared provider of a name kept code imports "
        "(below), or when `[requirements].keep` in the rules names it. `shrink requirements --write` rewrites the tree's "
        "pyproject (only the dependency lines change).",
        "",
        f"## Dropped ({len(r.dropped)})",
        "",
        "| distribution | requirement | unpacked MB | why |",
        "|---|---|---:|---|",
    ]
    for d in sorted(r.dropped, key=lambda d: (-(d.size or 0), d.name)):
        lines.append(f"| {d.name} | `{d.requirement}` | {_mb(d.size)} | {d.reason} |")
    lines += ["", f"## Kept ({len(r.kept)})", "", "| distribution | requirement | unpacked MB | why |",
              "|---|---|---:|---|"]
    for d in r.kept:
        lines.append(f"| {d.name} | `{d.requirement}` | {_mb(d.size)} | {d.reason} |")
    lines += ["", f"## Imported names no declared distribution provides by itself ({len(r.indirect)})", "",
              "Satisfied through a declared distribution's own requirements (as upstream); `-`: by none "
              "upstream declares either (the verify check compares with upstream).", "",
              "| import | files | first | provided by | pulled in by (kept) |", "|---|---:|---|---|---|"]
    for i in r.indirect:
        lines.append(f"| {i.name} | {i.files} | {i.first} | {', '.join(i.installed_as) or '-'} | "
                     f"{', '.join(i.kept_via) or '-'} |")
    look = [i for i in r.indirect if i.needs_a_look]
    if look:
        lines += ["", f"## Needs a look ({len(look)})", "",
                  "Imported without a guard and provided by a wheel of the index, but no declared distribution "
                  "pulls that wheel in on the target (only through an extra or another platform's marker): make "
                  "sure a kept requirement still provides it, or declare it.", ""]
        lines += [f"- {i.name} ({', '.join(i.installed_as)}): {i.files} file{'s' if i.files != 1 else ''}, "
                  f"first {i.first}" for i in look]
    if r.type_checking_only:
        lines += ["", "## Imported only under `if TYPE_CHECKING` (no requirement)", ""]
        lines += [f"- {k}: {len(v)} file{'s' if len(v) != 1 else ''} ({v[0]})" for k, v in r.type_checking_only.items()]
    if r.freed:
        lines += ["", "## Indexed distributions no kept requirement pulls in any more", "",
                  ", ".join(f"{k} ({_mb(v)})" for k, v in sorted(r.freed.items(), key=lambda kv: -kv[1]))]
    return "\n".join(lines) + "\n"


def write_reports(r: RequirementsResult, out_dir: Path) -> tuple[Path, Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    md, js = out_dir / "requirements.md", out_dir / "requirements.json"
    md.write_text(render_markdown(r))
    js.write_text(json.dumps(r.to_json(), indent=1) + "\n")
    return md, js


def _present(root: Path, when: str) -> str | None:
    """The kept file a `[requirements].keep` condition names, or None: a tree path as written, or a
    module (dotted: its file or its package's __init__ under an import root, so a module that became a
    package, as 0.5.18's kernels.jit.utils.compile did, still counts, and rule moves follow it)."""
    if "/" in when:
        return when if (root / when).exists() else None
    bases = [f"{import_root}/" + when.replace(".", "/") for import_root in IMPORT_ROOTS]
    return next((rel for base in bases for rel in (f"{base}.py", f"{base}/__init__.py") if (root / rel).exists()), None)
