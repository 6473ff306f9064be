"""Small `ast` facts shared by the codemods and the verify stage: what a node binds, what it imports."""

from __future__ import annotations

import ast

# Builtins that return a namespace as a dict (`globals()`, `vars()`, `locals()`): a module calling one
# may read any of its names.
NAMESPACE_CALLS = frozenset({"globals", "vars", "locals"})
# Calls that look a name up from a string: getattr/hasattr name it in their second argument (a literal one is
# a plain read of that name), the others take it from anywhere (`attrgetter(path)`, `import_module(name)`):
# a module calling one with a computed name may read any name.
# setattr/delattr bind or unbind a name; they never read an existing one.
LOOKUP_CALLS = frozenset({"getattr", "hasattr", "builtins.getattr"})
LOOKUP_ANY = frozenset({"attrgetter", "methodcaller", "import_module", "__import__", "__getattribute__"})


def names_bound_by(node: ast.AST) -> set[str]:
    """Names one node binds (imports, stores and deletes, defs, parameters, except targets, global)."""
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return {(a.asname or a.name).split(".")[0] for a in node.names if a.name != "*"}
    if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
        return {node.id}
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {node.name}
    if isinstance(node, ast.arg):
        return {node.arg}
    if isinstance(node, ast.ExceptHandler) and node.name:
        return {node.name}
    if isinstance(node, (ast.Global, ast.Nonlocal)):
        return set(node.names)
    return set()


def target_names(target: ast.AST) -> list[str]:
    """The names an assignment, loop or `with` target binds (`a, (b, *c)`)."""
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, (ast.Tuple, ast.List)):
        return [n for elt in target.elts for n in target_names(elt)]
    if isinstance(target, ast.Starred):
        return target_names(target.value)
    return []


def statement_bindings(stmt: ast.stmt) -> list[str]:
    """The names one statement binds in the scope it stands in, not counting the blocks it holds: a def or
    class, assignment targets, a `for` or `with` target, imports (`import a.b` binds `a`; a star binds
    nothing here), and a `try`'s handler names."""
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [stmt.name]
    if isinstance(stmt, ast.Assign):
        return [n for t in stmt.targets for n in target_names(t)]
    if isinstance(stmt, (ast.AnnAssign, ast.AugAssign)):
        return target_names(stmt.target)
    if isinstance(stmt, (ast.For, ast.AsyncFor)):
        return target_names(stmt.target)
    if isinstance(stmt, (ast.With, ast.AsyncWith)):
        return [n for item in stmt.items if item.optional_vars is not None for n in target_names(item.optional_vars)]
    if isinstance(stmt, ast.Import):
        return [a.asname or a.name.split(".")[0] for a in stmt.names]
    if isinstance(stmt, ast.ImportFrom):
        return [a.asname or a.name for a in stmt.names if a.name != "*"]
    if isinstance(stmt, ast.Try) or type(stmt).__name__ == "TryStar":
        return [h.name for h in stmt.handlers if h.name]
    return []


def dotted(node: ast.AST) -> str:
    """`a.b.c` for a Name/Attribute chain, "" otherwise."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return ""


def imports_package(node: ast.AST, packages: frozenset[str]) -> bool:
    """`import aiter...` / `from aiter... import ...` for a top-level package in `packages`."""
    if isinstance(node, ast.Import):
        return any(a.name.split(".")[0] in packages for a in node.names)
    if isinstance(node, ast.ImportFrom):
        return node.level == 0 and (node.module or "").split(".")[0] in packages
    return False


def own_nodes(stmt: ast.AST):
    """The nodes of `stmt`, not entering nested functions, lambdas or classes (their returns are theirs)."""
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
        return
    stack: list[ast.AST] = [stmt]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(c for c in ast.iter_child_nodes(node)
                     if not isinstance(c, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)))
