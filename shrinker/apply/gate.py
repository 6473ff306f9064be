"""The gate after each batch: what must hold before a batch is committed.

Always: the codemods failed on no file, left no finding (a removed name still used), and no import in
the tree names a module that is not there. When the verify stage is installed, its static checks run
too (`shrink verify` runs the full set, including the differential import check).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from shrinker.checks.static import static_gate
from shrinker.graph.build import build_graph
from shrinker.graph.records import MODULE


@dataclass
class GateResult:
    passed: bool
    checks: dict[str, int] = field(default_factory=dict)  # check → problems found
    findings: list[str] = field(default_factory=list)

    def add(self, check: str, findings: list[str]) -> None:
        self.checks[check] = len(findings)
        self.findings.extend(f"[{check}] {f}" for f in findings)
        if findings:
            self.passed = False


def unresolved_imports(tree: Path, packages: list[str]) -> dict[tuple[str, str], str]:
    """Imports of internal modules that do not exist in the tree, outside try/except ImportError.

    Keyed by (path, target) so upstream's own dangling imports (e.g. an optional private package)
    can be subtracted as a baseline. Parse results come from the shared cache.
    """
    g = build_graph(tree)
    known = set(g.module_path)
    out: dict[tuple[str, str], str] = {}
    for facts in g.facts.values():
        for imp in facts.imports:
            if imp.target.split(".")[0] not in packages or imp.target in known or imp.where.try_import:
                continue
            scope = "" if imp.where.scope == MODULE else f" (in {imp.where.function or imp.where.scope})"
            out[(facts.path, imp.target)] = f"{facts.path}:{imp.line}: imports missing module {imp.target}{scope}"
    return out


def missing_names(tree: Path, packages: list[str]) -> dict[tuple[str, str, str], str]:
    """`from X import n` at run time (not TYPE_CHECKING, not try/except) where kept X has no `n`.

    X provides `n` when it defines, assigns or imports it, when `X.n` is a module, or when X has a
    star import or a module `__getattr__` (then nothing can be said). Keyed for a baseline.
    """
    g = build_graph(tree)
    known = set(g.module_path)
    out: dict[tuple[str, str, str], str] = {}
    for facts in g.facts.values():
        for imp in facts.imports:
            if (not imp.is_from or imp.where.type_checking or imp.where.try_import
                    or imp.target.split(".")[0] not in packages or imp.target not in g.facts):
                continue
            source = g.facts[imp.target]
            if "__getattr__" in source.defined or any(i.names == ["*"] for i in source.imports):
                continue
            provided = set(source.defined)
            for name in imp.names:
                if name != "*" and name not in provided and f"{imp.target}.{name}" not in known:
                    out[(facts.path, imp.target, name)] = (
                        f"{facts.path}:{imp.line}: imports {name} from {imp.target}, which no longer provides it")
    return out


def run_gate(tree: Path, packages: list[str], codemod_failures: list[str], codemod_findings: list[str],
             baseline: set[tuple[str, str]] = frozenset(), later: set[str] = frozenset(),
             use_verify: bool = True, name_baseline: set[tuple[str, str, str]] = frozenset(),
             upstream_root: Path | None = None, rules=None) -> GateResult:
    """`later`: paths a later batch deletes; they may still import what this batch removed."""
    result = GateResult(passed=True)
    result.add("codemod failures", codemod_failures)
    result.add("removed names still used", codemod_findings)
    missing = unresolved_imports(tree, packages)
    result.add("imports of missing modules", sorted(v for k, v in missing.items()
                                                       if k not in baseline and k[0] not in later))
    names = missing_names(tree, packages)
    result.add("imports of missing names", sorted(v for k, v in names.items()
                                                     if k not in name_baseline and k[0] not in later))
    if use_verify:
        # Against this tree's own upstream, ignoring files a later batch deletes (like the checks above).
        for name, findings in static_gate(tree, upstream_root, later=frozenset(later), rules=rules).items():
            result.add(name, findings)
    return result
