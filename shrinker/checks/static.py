"""Static checks over a tree's facts, each judged against the same check on upstream.

Every finding has a key that does not depend on line numbers (file, kind, target); a pruned finding
is a regression only when upstream does not have the same key as often (upstream itself has a few
broken references, e.g. optional private modules). Imports inside try/except ImportError are
allowed to be missing: they are listed as notes, not failures. `self_attributes`: a `self.X` read
that no code of the tree sets X for (shrinker/checks/attributes.py). `kernel_ops`: a key kept code asks a
`records` inventory of the rules for (`get_kernel("gemm.qwen3x_nvfp4", ...)`) that no record of the tree
serves (shrinker/checks/inventory_keys.py): the call raises KeyError where upstream dispatched it.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from shrinker.graph.stdlib import STDLIB
from shrinker.upstream.distributions import declared_distributions, load_index, provided_by
from shrinker.checks.attributes import unset_attributes
from shrinker.checks.facts import FileFacts
from shrinker.checks.inventory_keys import unserved_asks
from shrinker.checks.platform_names import split_undefined, split_unset
from shrinker.checks.tree import SourceTree

STATIC_CHECKS = ("syntax", "internal_imports", "import_names", "third_party", "registry_strings",
                 "kernel_ops", "undefined_names", "self_attributes")


@dataclass(frozen=True)
class Finding:
    key: tuple[str, ...]
    text: str  # "path:line message"


@dataclass
class StaticFindings:
    by_check: dict[str, list[Finding]] = field(default_factory=lambda: {c: [] for c in STATIC_CHECKS})
    notes: dict[str, list[str]] = field(default_factory=lambda: {c: [] for c in STATIC_CHECKS})
    counts: dict[str, Counter] = field(default_factory=lambda: {c: Counter() for c in STATIC_CHECKS})


class _Resolver:
    """Names a module provides: its own, its star imports' (transitively) and its submodules."""

    def __init__(self, tree: SourceTree, facts: dict[str, FileFacts]) -> None:
        self.tree, self.facts = tree, facts
        self._names: dict[str, set[str]] = {}

    def names(self, module: str, seen: frozenset[str] = frozenset()) -> set[str]:
        if module in self._names:
            return self._names[module]
        f = self.facts.get(module)
        out = set(f.defined) if f else set()
        if f:
            for star in f.star_imports:
                if star not in seen and star in self.facts:
                    out |= {n for n in self.names(star, seen | {module}) if not n.startswith("_")}
        self._names[module] = out
        return out

    def provides(self, module: str, name: str) -> bool:
        if self.tree.has(f"{module}.{name}"):
            return True
        m = self.tree.modules.get(module)
        if m is None or m.kind == "extension":
            return m is not None  # compiled: cannot look inside
        f = self.facts.get(module)
        if f is None:  # namespace package: only submodules
            return False
        return f.dynamic or name in self.names(module)

    def string_target_exists(self, text: str) -> bool:
        """"pkg.mod", "pkg.mod:attr.sub" or "pkg.mod.Attr" names something in the tree."""
        module, _, attr = text.partition(":")
        if attr:
            return self.tree.has(module) and self.provides(module, attr.split(".")[0])
        if self.tree.has(module):
            return True
        parent, _, last = module.rpartition(".")
        return self.tree.has(parent) and self.provides(parent, last)


def collect(tree: SourceTree, facts: dict[str, FileFacts], dist_map: dict[str, list[str]],
            registries=()) -> StaticFindings:
    """The static findings of one tree; `registries`: the rules' registries (kernel_ops reads their
    `records` inventories)."""
    out = StaticFindings()
    resolver = _Resolver(tree, facts)
    internal = tree.top_packages
    declared = {"python": declared_distributions(tree.root / "python" / "pyproject.toml"),
                "sgl-kernel/python": declared_distributions(tree.root / "sgl-kernel" / "pyproject.toml")}

    for name, f in sorted(facts.items()):
        rel = tree.rel(name)
        out.counts["syntax"]["files"] += 1
        if f.syntax_error:
            line, _, msg = f.syntax_error.partition(": ")
            out.by_check["syntax"].append(Finding((rel, "syntax"), f"{rel}:{line} syntax error: {msg}"))
            continue
        root = "sgl-kernel/python" if rel.startswith("sgl-kernel/") else "python"
        for imp in f.imports:
            top = imp.module.split(".")[0]
            if top in internal:
                _check_internal(tree, resolver, out, rel, imp)
            elif top and top not in STDLIB and imp.guard != "type_checking":
                out.counts["third_party"]["imports"] += 1
                if provided_by(top, declared[root], dist_map) is None:
                    text = f"{rel}:{imp.line} imports {top!r}, which no dependency in {root.split('/')[0]}/pyproject.toml provides"
                    if imp.guard == "try":
                        out.notes["third_party"].append(text + " (guarded)")
                    else:
                        out.by_check["third_party"].append(Finding((rel, "undeclared", top), text))
        for line, text in f.strings:
            out.counts["registry_strings"]["strings"] += 1
            if not resolver.string_target_exists(text):
                out.by_check["registry_strings"].append(
                    Finding((rel, "dead-string", text), f"{rel}:{line} string {text!r} names no module or attribute in the tree"))
        for line, kind, undefined in f.undefined:
            out.counts["undefined_names"]["uses"] += 1
            out.by_check["undefined_names"].append(
                Finding((rel, "undefined", undefined), f"{rel}:{line} undefined name {undefined!r} ({kind})"))
    _check_kernel_ops(tree, facts, out, registries)
    out.counts["self_attributes"]["classes"] = sum(len(f.classes) for f in facts.values())
    for module, line, cls, attr, instances in unset_attributes(facts):
        rel = tree.rel(module)
        shown = ", ".join(instances[:3]) + (f" and {len(instances) - 3} more" if len(instances) > 3 else "")
        out.by_check["self_attributes"].append(Finding(
            (rel, "unset-attribute", cls, attr),
            f"{rel}:{line} {cls} reads self.{attr}, which no code of the tree sets on {shown}"))
    return out


def _check_kernel_ops(tree: SourceTree, facts: dict[str, FileFacts], out: StaticFindings, registries) -> None:
    asks, unserved = unserved_asks(tree, facts, registries)
    out.counts["kernel_ops"]["asks"] = asks
    for ask in unserved:
        module, _, line = ask.where.rpartition(":")
        rel = tree.rel(module)
        out.by_check["kernel_ops"].append(Finding(
            (rel, "unserved-key", ask.registry, ask.key),
            f"{rel}:{line} asks {ask.registry} for {ask.key!r}, which no record of the tree serves"))


def split_platform(check: str, new: list[Finding], upstream_root, rules) -> tuple[list[Finding], list[str]]:
    """Regressions -> (real ones, notes for what failed on CUDA upstream too: a name bound or an
    attribute set there only in code dead on CUDA)."""
    if check == "undefined_names":
        return split_undefined(new, upstream_root, rules)
    if check == "self_attributes":
        return split_unset(new, upstream_root, rules)
    return new, []


def _check_internal(tree: SourceTree, resolver: _Resolver, out: StaticFindings, rel: str, imp) -> None:
    out.counts["internal_imports"]["imports"] += 1
    where = f"{rel}:{imp.line}"
    if not tree.has(imp.module):
        text = f"{where} imports {imp.module}, which is not in the tree"
        if imp.guard == "try":
            out.notes["internal_imports"].append(text + " (guarded)")
        else:
            out.by_check["internal_imports"].append(Finding((rel, "missing-module", imp.module), text))
        return
    for name in imp.names or []:
        out.counts["import_names"]["names"] += 1
        if not resolver.provides(imp.module, name):
            text = f"{where} imports {name!r} from {imp.module}, which does not define it"
            if imp.guard == "try":
                out.notes["import_names"].append(text + " (guarded)")
            else:
                out.by_check["import_names"].append(Finding((rel, "missing-name", imp.module, name), text))


def regressions(pruned: list[Finding], upstream: list[Finding]) -> list[Finding]:
    """Pruned findings beyond upstream's count for the same key (first occurrences kept as allowed)."""
    budget = Counter(f.key for f in upstream)
    new = []
    for f in pruned:
        if budget[f.key] > 0:
            budget[f.key] -= 1
        else:
            new.append(f)
    return new


def static_gate(tree, upstream_root=None, *, jobs: int = 2, later: frozenset[str] | set[str] = frozenset(),
                rules=None) -> dict[str, list[str]]:
    """The quick subset for `shrink apply`'s gate: static check name -> regressions against upstream.

    `later`: tree-relative paths a later batch deletes; their findings are not this batch's.
    Parse results are cached by content, so after the first run only changed files are parsed.
    """
    from pathlib import Path

    from shrinker.checks.factcache import tree_facts

    if upstream_root is None:
        from shrinker.upstream import load

        upstream_root = load().root
    pruned, upstream = SourceTree.load(Path(tree)), SourceTree.load(Path(upstream_root))
    facts_pr, facts_up = tree_facts(pruned, jobs=jobs), tree_facts(upstream, jobs=jobs)  # before the index:
    dist_map = load_index(Path(upstream_root), rules.requirements.target if rules else {}).import_map  # apply prefetches it
    registries = rules.registries if rules else ()
    found_pr = collect(pruned, facts_pr, dist_map, registries)
    found_up = collect(upstream, facts_up, dist_map, registries)
    out = {}
    for check in STATIC_CHECKS:
        new, _ = split_platform(check, regressions(found_pr.by_check[check], found_up.by_check[check]),
                                Path(upstream_root), rules)
        out[check] = [f.text for f in new if f.key[0] not in later]
    return out
