"""What one module reads through its own namespace, by `ast`: the bare names it loads, and for each module
it binds as an object (`import a.b as m`, `from a import m`, `import a.b`), the attributes it reads
through that binding (`m.x`, `a.b.x`) — or None when it uses the binding otherwise (passes the module
on, `getattr(m, name)`), since then any attribute may be read.

`imported_names_from_facts` (codemods/unused_names.py) uses it to narrow "a kept module imports m
whole" (`from m import *`, `from sglang.srt import distributed as _dist`) to the names actually taken.
`dynamic`: the module reads its namespace as a whole (`globals()`, `vars()`, `sys.modules`,
`__dict__`, a module-level `__getattr__`), so a star import into it may be read by any name.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Optional

from shrinker.graph.bindings import NAMESPACE_CALLS, dotted
from shrinker.graph.parse import resolve_relative


@dataclass
class ModuleReads:
    names: frozenset[str] = frozenset()  # bare names loaded anywhere in the module
    # module bound as an object -> attributes read through the binding; None: used otherwise
    through: dict[str, Optional[frozenset[str]]] = field(default_factory=dict)
    # module bound as an object at module level -> the names it is bound to (others may import them)
    exported: dict[str, frozenset[str]] = field(default_factory=dict)
    dynamic: bool = False


def module_reads(source: str, module: str, is_package: bool) -> Optional[ModuleReads]:
    """None when the source does not parse (callers then assume everything is read)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    parents: dict[int, ast.AST] = {}
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            parents[id(child)] = node
    # local name -> (dotted module it may hold, the path the code reads it by): `import a.b` -> a: (a.b, a.b)
    bound: dict[str, list[tuple[str, str]]] = {}
    # modules bound in a class body are class attributes, read as self.<local>.x: local -> module
    in_class: dict[str, str] = {}
    opaque: set[str] = set()
    dynamic = False
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)) and _class_scope(node, parents):
            base = "" if isinstance(node, ast.Import) else \
                resolve_relative(module, is_package, node.level, node.module or "")
            for alias in node.names:
                if isinstance(node, ast.Import) and not alias.asname:
                    opaque.add(alias.name)  # `import a.b` in a class: self.a.b.x, not worth following
                else:
                    target = alias.name if isinstance(node, ast.Import) else f"{base}.{alias.name}"
                    in_class[alias.asname or alias.name] = target
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    bound.setdefault(alias.asname, []).append((alias.name, alias.asname))
                else:  # `import a.b.c` binds a; a.b.c is reached as attributes of it
                    bound.setdefault(alias.name.split(".")[0], []).append((alias.name, alias.name))
        elif isinstance(node, ast.ImportFrom):
            base = resolve_relative(module, is_package, node.level, node.module or "")
            for alias in node.names:
                if alias.name != "*":
                    local = alias.asname or alias.name
                    bound.setdefault(local, []).append((f"{base}.{alias.name}", local))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in NAMESPACE_CALLS \
                and not node.args:
            dynamic = True
        elif isinstance(node, ast.Attribute) and node.attr == "__dict__":
            dynamic = True
        elif isinstance(node, ast.Attribute) and dotted(node) == "sys.modules":
            dynamic = True
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == "__getattr__" \
                and node in tree.body:
            dynamic = True
    names: set[str] = set()
    through: dict[str, Optional[set[str]]] = {}
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)):
            continue
        names.add(node.id)
        if node.id not in bound:
            continue
        # the longest attribute chain read from this name: a.b.c.x
        top: ast.AST = node
        while isinstance(parents.get(id(top)), ast.Attribute) and parents[id(top)].value is top:  # type: ignore[attr-defined]
            top = parents[id(top)]
        chain = dotted(top) if top is not node else node.id
        for target, local in bound[node.id]:
            if through.get(target, set()) is None:
                continue
            if chain.startswith(local + "."):
                through.setdefault(target, set()).add(chain[len(local) + 1:].split(".")[0])  # type: ignore[union-attr]
            elif chain == local or local.startswith(chain + "."):
                through[target] = None  # the module, or a package above it, used as a value
            # else another path under the same name (`a.b.other` beside `import a.b.c`)
    for target in opaque:
        through[target] = None
    for node in ast.walk(tree):  # self._dist.get_rank(): the class attribute's attribute
        if isinstance(node, ast.Attribute) and node.attr in in_class:
            target = in_class[node.attr]
            parent = parents.get(id(node))
            if isinstance(parent, ast.Attribute) and parent.value is node and through.get(target, set()) is not None:
                through.setdefault(target, set()).add(parent.attr)  # type: ignore[union-attr]
            else:
                through[target] = None
    exported: dict[str, set[str]] = {}
    for node in tree.body if isinstance(tree, ast.Module) else []:
        for stmt in ast.walk(node):
            if isinstance(stmt, (ast.Import, ast.ImportFrom)) and not _in_def(stmt, parents):
                base = "" if isinstance(stmt, ast.Import) else \
                    resolve_relative(module, is_package, stmt.level, stmt.module or "")
                for alias in stmt.names:
                    if alias.name == "*":
                        continue
                    target = alias.name if isinstance(stmt, ast.Import) else f"{base}.{alias.name}"
                    local = alias.asname or (alias.name.split(".")[0] if isinstance(stmt, ast.Import) else alias.name)
                    exported.setdefault(target, set()).add(local)
    return ModuleReads(names=frozenset(names), dynamic=dynamic,
                       exported={t: frozenset(v) for t, v in exported.items()},
                       through={t: (None if v is None else frozenset(v)) for t, v in through.items()})


def _class_scope(node: ast.AST, parents: dict[int, ast.AST]) -> bool:
    """The statement's nearest enclosing def or class is a class (its bindings are class attributes)."""
    parent = parents.get(id(node))
    while parent is not None and not isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda,
                                                         ast.ClassDef)):
        parent = parents.get(id(parent))
    return isinstance(parent, ast.ClassDef)


def _in_def(node: ast.AST, parents: dict[int, ast.AST]) -> bool:
    parent = parents.get(id(node))
    while parent is not None:
        if isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            return True
        parent = parents.get(id(parent))
    return False
