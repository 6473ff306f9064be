"""Namespace reads that touch only listed names, and only those still bound: no whole-namespace read.

sgl_kernel/__init__.py wraps its re-exports for debugging with

    _DEBUG_EXPORT_NAMES = ["rmsnorm", "silu_and_mul", ...]
    if torch.version.hip is not None:
        _DEBUG_EXPORT_NAMES.append("gelu_quick")
    for _name in _DEBUG_EXPORT_NAMES:
        if _name in globals():
            globals()[_name] = maybe_wrap_debug_kernel(globals()[_name], f"sgl_kernel.{_name}")

`globals()` would make the module dynamic (every module-level name stays), and the list's strings
would keep every symbol of those names. Neither holds here: the loop reads `globals()[_name]` only
under `if _name in globals()`, so a name that is gone is skipped, exactly as upstream skips a name it
never bound (ROCm's `gelu_quick` on CUDA). A *guarded name list* is a module-level name L that is

  - bound once, at module level, to a literal list or tuple of strings;
  - otherwise only extended with string literals (`L.append("x")`, `L.extend([...])`, `L += [...]`),
    deleted (`del L`), or iterated by such a loop: `for n in L:` whose whole body is
    `if n in globals():` (no else) and whose every `globals()` there is `globals()[n]`.

The `globals()` calls of those loops are no namespace read, and the strings naming L's entries are no
reference (`quiet_nodes`). Any other use of L, or any other `globals()`, leaves everything as before.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator


def _is_globals_call(node: ast.AST) -> bool:
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "globals"
            and not node.args and not node.keywords)


def _module_level(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Module-level statements, through module-level if / try / with (as the symbol builder walks them)."""
    for stmt in body:
        yield stmt
        if isinstance(stmt, ast.If):
            yield from _module_level(stmt.body)
            yield from _module_level(stmt.orelse)
        elif isinstance(stmt, (ast.Try, getattr(ast, "TryStar", ast.Try))):
            yield from _module_level(stmt.body)
            for handler in stmt.handlers:
                yield from _module_level(handler.body)
            yield from _module_level(stmt.orelse)
            yield from _module_level(stmt.finalbody)
        elif isinstance(stmt, (ast.With, ast.AsyncWith)):
            yield from _module_level(stmt.body)


def _str_elements(node: ast.AST) -> list[ast.Constant] | None:
    if isinstance(node, (ast.List, ast.Tuple)) and all(
            isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts):
        return list(node.elts)  # type: ignore[arg-type]
    return None


def _guarded_loop(stmt: ast.stmt) -> tuple[str, list[ast.Call]] | None:
    """(L, its globals() calls) for `for n in L: if n in globals(): ...` reading globals()[n] only."""
    if not (isinstance(stmt, ast.For) and isinstance(stmt.target, ast.Name) and isinstance(stmt.iter, ast.Name)
            and not stmt.orelse and len(stmt.body) == 1 and isinstance(stmt.body[0], ast.If)):
        return None
    loop_var, guard = stmt.target.id, stmt.body[0]
    test = guard.test
    if guard.orelse or not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.In)
                            and isinstance(test.left, ast.Name) and test.left.id == loop_var
                            and _is_globals_call(test.comparators[0])):
        return None
    calls = [test.comparators[0]]
    subscripted: set[int] = set()
    for node in (n for s in guard.body for n in ast.walk(s)):
        if isinstance(node, ast.Subscript) and _is_globals_call(node.value) \
                and isinstance(node.slice, ast.Name) and node.slice.id == loop_var:
            subscripted.add(id(node.value))
            calls.append(node.value)  # type: ignore[arg-type]
    every = [n for s in guard.body for n in ast.walk(s) if _is_globals_call(n)]
    if any(id(n) not in subscripted for n in every):
        return None
    return stmt.iter.id, calls


def _list_uses(tree: ast.Module, name: str, loops: set[int]) -> list[ast.Constant] | None:
    """The string constants naming L's entries, when every use of L is one the docstring allows."""
    strings: list[ast.Constant] = []
    allowed: set[int] = set()
    bindings = 0
    for stmt in _module_level(tree.body):
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name) \
                and stmt.targets[0].id == name:
            elements = _str_elements(stmt.value)
            if elements is None:
                return None
            bindings += 1
            strings += elements
            allowed.add(id(stmt.targets[0]))
        elif isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Name) and stmt.target.id == name:
            elements = _str_elements(stmt.value)
            if elements is None or not isinstance(stmt.op, ast.Add):
                return None
            strings += elements
            allowed.add(id(stmt.target))
        elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) \
                and isinstance(stmt.value.func, ast.Attribute) and isinstance(stmt.value.func.value, ast.Name) \
                and stmt.value.func.value.id == name and not stmt.value.keywords and len(stmt.value.args) == 1:
            arg = stmt.value.args[0]
            method = stmt.value.func.attr
            if method == "append" and isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                strings.append(arg)
            elif method == "extend" and _str_elements(arg) is not None:
                strings += _str_elements(arg) or []
            else:
                return None
            allowed.add(id(stmt.value.func.value))
        elif isinstance(stmt, ast.Delete):
            allowed.update(id(t) for t in stmt.targets if isinstance(t, ast.Name) and t.id == name)
        elif id(stmt) in loops:
            allowed.add(id(stmt.iter))  # type: ignore[attr-defined]
    if bindings != 1:
        return None
    uses = [n for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id == name]
    return strings if all(id(n) in allowed for n in uses) else None


def quiet_nodes(tree: ast.Module) -> frozenset[int]:
    """ids of the `globals()` calls that read no whole namespace and of the string constants that
    reference nothing, per the guarded name lists of the module (see the docstring)."""
    loops: dict[str, list[tuple[ast.stmt, list[ast.Call]]]] = {}
    for stmt in _module_level(tree.body):
        found = _guarded_loop(stmt)
        if found is not None:
            loops.setdefault(found[0], []).append((stmt, found[1]))
    quiet: set[int] = set()
    for name, found_loops in loops.items():
        strings = _list_uses(tree, name, {id(stmt) for stmt, _ in found_loops})
        if strings is None:
            continue
        quiet.update(id(s) for s in strings)
        quiet.update(id(call) for _, calls in found_loops for call in calls)
    return frozenset(quiet)
