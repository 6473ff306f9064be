"""`shrink why TARGET`: the shortest import chain from a root for a kept file, the rule for a removed one."""

from __future__ import annotations

from dataclasses import dataclass

from shrinker.errors import ShrinkError
from shrinker.graph.build import ImportGraph
from shrinker.graph.records import Decision
from shrinker.plan.reach import Reach


@dataclass
class WhyAnswer:
    path: str
    module: str
    kept: bool
    reason: str
    chain: list[tuple[str, str, int]]  # (module, path, line of the import into the next module)
    importers: list[str]


def _resolve_target(g: ImportGraph, target: str) -> tuple[str, str]:
    """Accept a tree path, a path inside the package (sglang/...), or a dotted module name."""
    target = target.strip().removesuffix("/")
    paths = {p: m for m, p in g.module_path.items() if p}
    candidates = [target, f"python/{target}", f"sgl-kernel/python/{target}"]
    for c in candidates:
        if c in paths:
            return c, paths[c]
    if target in g.module_path and g.module_path[target]:
        return g.module_path[target], target
    data = {f.path for f in g.files}
    for c in candidates:
        if c in data:
            return c, ""
    raise ShrinkError(f"{target!r} is neither a file nor a module of the upstream tree")


def explain(g: ImportGraph, reach: Reach, decisions: list[Decision], target: str) -> WhyAnswer:
    path, module = _resolve_target(g, target)
    decision = next(d for d in decisions if d.path == path)
    chain: list[tuple[str, str, int]] = []
    if decision.keep and module:
        # reach.parent holds the BFS tree: following it back gives a shortest chain to a root.
        current, line = module, 0
        seen = set()
        while current and current not in seen:
            seen.add(current)
            chain.append((current, g.module_path.get(current, ""), line))
            parent = reach.parent.get(current)
            if not parent:
                break
            current, line = parent  # `line` is where the parent imports the module just added
        chain.reverse()  # root first; each entry's line is where it imports the next one
    importers = sorted(u for u, _ in g.importers(module)) if module else []
    return WhyAnswer(path, module, decision.keep, decision.reason, chain, importers)
