"""Small `ast` facts shared by the codemods and the verify stage: what a node binds, what it imports."""

from __future__ import annotations

import ast

# Builtins that return a namespace as a dict (`globals()`, `vars()`, `locals()`): a module calling one
# may read any of its names.
NAMESPACE_CALLS = frozenset({"globals", "vars", "locals"})


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
