"""Names other modules import only to test membership: `x in NAME` wherever they are imported.

0.5.23's `FORWARD_ABSORB_CORE_ATTENTION_BACKENDS` (models/deepseek_common/utils) is a module list that
forward_mla imports and reads only as `self.current_attention_backend in FORWARD_ABSORB_CORE_ATTENTION_BACKENDS`:
what such an importer can observe of the list is membership, as in the defining module. A name counts for
its module when, over the whole tree (`ast`, rule-free):
- every importer takes it with `from M import NAME` (absolute or relative, an `as` alias followed) and reads
  it, and every read there is the right operand of a lone `in` / `not in`; an importer that only imports it
  may pass it on (a package's re-export), so it does not count;
- nothing reads `.NAME` as an attribute of anything (`M.NAME` after `import M`, whatever the object), no
  string names it (`getattr(m, "NAME")`, an `__all__` entry) and no import of it is a star.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

from shrinker.graph.discover import module_of
from shrinker.graph.parse import resolve_relative
from shrinker.graph.sources import collector_paused, python_sources


def imported_read_by_key(tree: Path) -> dict[str, frozenset[str]]:
    """Module -> the names of it that every importer reads only by membership (module doc)."""
    importers: dict[tuple[str, str], list[bool]] = defaultdict(list)  # (module, name) -> per importer: by key only
    spoiled: set[str] = set()  # names read as an attribute or named by a string somewhere
    with collector_paused():
        for rel, text in python_sources(tree):
            try:
                module = ast.parse(text, rel)
            except (SyntaxError, ValueError):
                continue
            _scan(module, module_of(rel), rel.endswith("/__init__.py"), importers, spoiled)
    found: dict[str, set[str]] = defaultdict(set)
    for (source, name), by_key in importers.items():
        if name not in spoiled and all(by_key):
            found[source].add(name)
    return {source: frozenset(names) for source, names in found.items()}


def _scan(module: ast.Module, name: str, is_package: bool, importers: dict[tuple[str, str], list[bool]],
          spoiled: set[str]) -> None:
    parents: dict[ast.AST, ast.AST] = {}
    for node in ast.walk(module):
        for child in ast.iter_child_nodes(node):
            parents[child] = node
    taken: dict[str, tuple[str, str]] = {}  # local name -> (source module, imported name)
    for node in ast.walk(module):
        if isinstance(node, ast.Attribute):
            spoiled.add(node.attr)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            spoiled.update(node.value.replace(":", ".").split("."))
        elif isinstance(node, ast.ImportFrom):
            source = resolve_relative(name, is_package, node.level, node.module or "")
            for alias in node.names:
                if alias.name == "*":
                    continue
                taken[alias.asname or alias.name] = (source, alias.name)
    reads: dict[str, list[bool]] = defaultdict(list)
    for node in ast.walk(module):
        if isinstance(node, ast.Name) and node.id in taken:
            reads[node.id].append(isinstance(node.ctx, ast.Load) and _membership_operand(node, parents))
    for local, key in taken.items():
        uses = reads.get(local, [])
        importers[key].append(bool(uses) and all(uses))


def _membership_operand(node: ast.Name, parents: dict[ast.AST, ast.AST]) -> bool:
    compare = parents.get(node)
    return (isinstance(compare, ast.Compare) and len(compare.ops) == 1 and isinstance(compare.ops[0], (ast.In, ast.NotIn))
            and compare.comparators[0] is node)
