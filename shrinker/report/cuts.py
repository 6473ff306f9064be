"""`shrink report cuts`: which kept modules free the most lines if cut, and what imports them.

On the planned import graph (kept modules; an edge where the planner found a live import record,
plus the registry scan edges), a virtual root joins every root and pinned module. A module M's
*freed lines* are the non-blank lines of its dominator-tree subtree: exactly the modules that no
root reaches once M is gone. Every edge from outside that subtree enters M itself (else M would not
dominate its target), so M's importers outside the subtree are the import sites a cut must rewrite.

A *feature* (a set of module patterns, rules/<profile>-cuts.toml) is measured the same way: remove
the set, count what the roots no longer reach, and list the edges from modules that still are.
Whole modules only: a module kept for one helper counts nothing here; symbol level is separate.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import networkx as nx

from shrinker.graph.build import ImportGraph
from shrinker.graph.records import IMPLICIT_PARENT, REGISTRY, STRING
from shrinker.plan.reach import Reach, arch_table, feature_table, pattern_matches, record_dead
from shrinker.rules.predicates import PredicateTable
from shrinker.rules.schema import Rules

VROOT = "<roots>"  # the virtual root; not a module name (has no dots, has brackets)
ROOT_CODES = ("root", "pinned")  # kept_code values the planner starts from


@dataclass
class PlannedGraph:
    graph: nx.DiGraph  # kept modules + VROOT; edge attribute "records": the live import records
    roots: list[str]
    lines: dict[str, int]  # module → non-blank lines upstream (0 for namespace packages)
    paths: dict[str, str]  # module → tree path ("" for namespace packages)


def planned_graph(g: ImportGraph, reach: Reach, rules: Rules) -> PlannedGraph:
    """The graph the planner walked, restricted to live edges between kept modules."""
    table, view, features = PredicateTable(rules.platform), reach.registries, feature_table(rules)
    archs = arch_table(rules, view)
    pg = nx.DiGraph()
    pg.add_node(VROOT)
    pg.add_nodes_from(sorted(reach.kept))
    for u in sorted(reach.kept):
        for v, data in g.graph.adj[u].items():
            if v not in reach.kept or (u, v) in reach.dead_edges:
                continue
            # Keep every live record (not just the first the planner stopped at): each is a site to cut.
            live = [r for r in data["imports"] if record_dead(r, u, view, table, rules, features, archs) is None]
            if live:
                pg.add_edge(u, v, records=live)
    for scanner, module, reason in view.scan_edges:
        if scanner in reach.kept and module in reach.kept:
            rec = {"kind": REGISTRY, "line": 0, "names": [], "scope": "module", "guards": [],
                   "try_import": False, "function": "", "reason": reason}
            if pg.has_edge(scanner, module):
                pg.edges[scanner, module]["records"].append(rec)
            else:
                pg.add_edge(scanner, module, records=[rec])
    roots = sorted(m for m, code in reach.kept_code.items() if code in ROOT_CODES)
    for r in roots:
        pg.add_edge(VROOT, r, records=[])
    lines = {m: (g.facts[m].lines if m in g.facts else 0) for m in reach.kept}
    return PlannedGraph(pg, roots, lines, {m: g.module_path.get(m, "") for m in reach.kept})


# ------------------------------------------------------------------------------------------------
# Module cuts: the dominator tree


@dataclass
class ModuleCut:
    module: str
    path: str
    own_lines: int
    freed_lines: int  # the dominator subtree, upstream lines
    freed_modules: int
    idom: str
    subtree: list[str] = field(default_factory=list)
    applied_lines: int | None = None  # the same subtree in the applied work tree (None: no tree)


def dominator_tree(pg: PlannedGraph) -> dict[str, str]:
    """module → immediate dominator (VROOT for modules reached by two independent paths from the roots)."""
    idom = nx.immediate_dominators(pg.graph, VROOT)
    idom.pop(VROOT, None)  # networkx < 3.5 maps the start to itself; newer ones leave it out
    return idom


def module_cuts(pg: PlannedGraph, applied: dict[str, int] | None = None) -> list[ModuleCut]:
    """Every kept module's freed lines, largest first (roots included: the caller filters)."""
    idom = dominator_tree(pg)
    children: dict[str, list[str]] = {}
    for m, d in idom.items():
        children.setdefault(d, []).append(m)
    subtree: dict[str, list[str]] = {}

    def collect(m: str) -> list[str]:  # iterative: the dominator tree can be deep
        out, stack = [], [m]
        while stack:
            x = stack.pop()
            out.append(x)
            stack.extend(children.get(x, ()))
        return out

    cuts = []
    for m in idom:
        subtree[m] = sorted(collect(m))
        cut = ModuleCut(m, pg.paths.get(m, ""), pg.lines.get(m, 0), sum(pg.lines.get(x, 0) for x in subtree[m]),
                        len(subtree[m]), idom[m], subtree[m])
        if applied is not None:
            cut.applied_lines = sum(applied.get(pg.paths.get(x, ""), 0) for x in subtree[m])
        cuts.append(cut)
    return sorted(cuts, key=lambda c: (-c.freed_lines, c.module))


# ------------------------------------------------------------------------------------------------
# Importer edges: what a cut must rewrite


@dataclass
class Site:
    importer: str
    target: str
    line: int
    kind: str  # import | from | from_submodule | implicit_parent | string | registry
    context: str  # "top-level", "in function f", "try/except ImportError", "if <guard>" ... joined by "; "
    top_level: bool


def describe(record: dict) -> tuple[str, bool]:
    """(context text, top level?) of one live import record: where a codemod would have to act."""
    kind = record.get("kind", "")
    if kind == IMPLICIT_PARENT:
        return "child module (importing it runs its package)", True
    if kind == REGISTRY:
        return f"registry scan ({record.get('reason', '')})", False
    parts: list[str] = []
    scope, function = record.get("scope", "module"), record.get("function", "")
    if scope == "function" or function:
        parts.append(f"in function {function or '?'}")
    elif scope == "class":
        parts.append("in class body")
    if record.get("try_import"):
        parts.append("try/except ImportError")
    guards = record.get("guards") or []
    if guards:
        parts.append("if " + " and ".join(guards))
    if kind == STRING:
        parts.append(f"string ({record.get('string_kind', '')})")
    top = scope == "module" and not function and not guards and not record.get("try_import")
    return "; ".join(parts) or "top-level", top


def sites_into(pg: PlannedGraph, targets: set[str], survivors: set[str] | None = None) -> list[Site]:
    """Live records of edges into `targets` from modules outside it (only from `survivors`, if given)."""
    out = []
    for v in sorted(targets):
        for u, _, data in pg.graph.in_edges(v, data=True):
            if u == VROOT or u in targets or (survivors is not None and u not in survivors):
                continue
            for r in data["records"]:
                context, top = describe(r)
                out.append(Site(u, v, int(r.get("line", 0)), r.get("kind", ""), context, top))
    # Two statements can report one line (the tracer's line search): one site each place, not per record.
    unique = {(s.importer, s.line, s.target, s.kind, s.context): s for s in out}
    return sorted(unique.values(), key=lambda s: (s.importer, s.line, s.target))


# ------------------------------------------------------------------------------------------------
# Feature cuts: remove a set of modules


@dataclass
class SetCut:
    name: str
    members: list[str]  # kept modules the patterns match
    freed: list[str]  # members + what the roots no longer reach
    freed_lines: int
    sites: list[Site]
    applied_lines: int | None = None
    roots_hit: list[str] = field(default_factory=list)  # roots among the members: the cut is not possible


def set_cut(pg: PlannedGraph, name: str, members: set[str], applied: dict[str, int] | None = None) -> SetCut:
    keep_graph = pg.graph.subgraph(n for n in pg.graph if n not in members)
    alive = nx.descendants(keep_graph, VROOT)
    freed = sorted(m for m in pg.lines if m not in alive)
    sites = sites_into(pg, set(members), survivors=alive)
    cut = SetCut(name, sorted(members), freed, sum(pg.lines[m] for m in freed), sites,
                 roots_hit=sorted(set(pg.roots) & members))
    if applied is not None:
        cut.applied_lines = sum(applied.get(pg.paths.get(m, ""), 0) for m in freed)
    return cut


def match_modules(pg: PlannedGraph, patterns: list[str]) -> set[str]:
    """Kept modules any of the dotted patterns (as in the rules: `*`, `**`, trailing `.**`) names."""
    return {m for m in pg.lines if any(pattern_matches(p, m) for p in patterns)}


def package_cuts(pg: PlannedGraph, applied: dict[str, int] | None = None, min_lines: int = 1500) -> list[SetCut]:
    """Each kept package with its whole subtree removed (packages holding a root are skipped)."""
    packages = {m.rsplit(".", 1)[0] for m in pg.lines if "." in m}
    roots = set(pg.roots)
    out = []
    for p in sorted(packages):
        members = {m for m in pg.lines if m == p or m.startswith(p + ".")}
        if members & roots or sum(pg.lines[m] for m in members) < min_lines:
            continue
        out.append(set_cut(pg, p + ".**", members, applied))
    return sorted(out, key=lambda c: (-c.freed_lines, c.name))
