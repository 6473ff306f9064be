"""Roots that follow a move: when a root module is gone from a release, the release before it may
name its successor, and the plan follows it (reported, never silent).

A successor is clear in two cases, both read from the release before:
- the root was a shim: its module-level code imports exactly one tree module (`from S import *`,
  `from S import cli_main` ...), and S is in the new release;
- the root's file moved: exactly one module of the new release has the same bytes.
Anything else (no shim, several candidates) stays a rule problem for a person.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from shrinker.graph.build import ImportGraph
from shrinker.graph.records import MODULE


@dataclass(frozen=True)
class Move:
    root: str
    successor: str
    evidence: str

    def note(self, version: str = "") -> str:
        before = f" in {version}" if version else ""
        return f"root {self.root} is gone; followed to {self.successor} ({self.evidence}{before})"


def _hash(graph: ImportGraph, module: str) -> str | None:
    rel = graph.module_path.get(module)
    path = graph.tree / rel if rel else None
    return hashlib.sha256(path.read_bytes()).hexdigest() if path and path.is_file() else None


def _shim_target(previous: ImportGraph, module: str, packages: set[str]) -> str | None:
    facts = previous.facts.get(module)
    if facts is None:
        return None
    targets = {i.target for i in facts.imports
               if i.where.scope == MODULE and not i.where.guards and i.target.split(".")[0] in packages}
    return targets.pop() if len(targets) == 1 else None


def root_moves(previous: ImportGraph, graph: ImportGraph, roots: list[str]) -> dict[str, Move]:
    """root -> its clear successor in `graph`, for each root `graph` lacks and `previous` had."""
    packages = {m.split(".")[0] for m in graph.module_path}
    moves: dict[str, Move] = {}
    by_hash: dict[str, list[str]] | None = None
    for root in roots:
        if root in graph.module_path or root not in previous.module_path:
            continue
        target = _shim_target(previous, root, packages)
        if target and target in graph.module_path:
            moves[root] = Move(root, target, f"its shim imported {target}")
            continue
        if by_hash is None:
            by_hash = {}
            for m in graph.module_path:
                if (h := _hash(graph, m)) is not None:
                    by_hash.setdefault(h, []).append(m)
        same = by_hash.get(_hash(previous, root) or "", [])
        if len(same) == 1:
            moves[root] = Move(root, same[0], "the same file moved")
    return moves
