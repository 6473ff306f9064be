"""Functions that always return the same bool, or always None: `def is_kimi_k3(config): return _hf_arch(config)
in ()` once the architecture fold emptied the tuple, `def is_unified_kv_triton(): return False` once the
platform fold decided its test, `def maybe_create_ascend_config_store(backend): return` (a docstring before) once its
Ascend body went. A call of one is that constant (folded by the codemods' Folder, at the call sites of every
module that imports it), and a statement that only calls a pure None-returning one does nothing.

Rule-free and exact, read with `ast` from the tree's text:
- a module-level function, or a method (keyed `Class.method`), not async, no `yield`, its decorators none
  or caches (`lru_cache`, `functools.cache`): a cache returns what the function returned;
- the name is bound once in the whole file (no second definition, no assignment, no local of that name);
- its body up to the first top-level `return` holds no other `return`; that return's value is the literal
  `True`/`False`, or `X in <empty literal>` (False) / `X not in <empty literal>` (True), a bool whatever X is,
  or nothing / `None` (`none`). Statements after it never run. A body with no `return` at all whose statements
  all only declare or read (`pass`, a docstring) returns None too.
`pure` says whether calling it runs nothing but the return: the statements before the return are
docstrings, `pass`, `global` declarations or local bindings of reads (names, attributes, subscripts,
literals, their operators, and the calls `pure_call` accepts: the rules' side-effect-free methods, such as a
tensor's `numel()`), and the return's `X` is such a read too. An impure one folds only where the rules
declare its call side-effect free.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from shrinker.graph.bindings import dotted, names_bound_by, own_nodes
from shrinker.graph.discover import module_of
from shrinker.graph.sources import python_sources

CACHES = frozenset({"lru_cache", "cache", "functools.lru_cache", "functools.cache"})
_EMPTY = re.compile(r"\bin\s*(?:\(\s*\)|\[\s*\]|frozenset\(\s*\)|set\(\s*\))")
_BOOL_RETURN = re.compile(r"^\s+return\s*\(?\s*(?:True|False)\s*\)?\s*$|^\s+return\s*\(\s*$"
                          r"|^\s+return(?:\s+None)?\s*$|^\s+pass\s*$", re.MULTILINE)
PureCall = Callable[[ast.Call], bool]


@dataclass(frozen=True)
class ConstantReturn:
    value: bool  # what it returns, or its truth (False) when `none`
    pure: bool  # a call runs nothing but reads
    none: bool = False  # it returns None: a call's value is None, not a bool


def may_define_constant_functions(text: str) -> bool:
    """A cheap test of the source text: only files passing it can define one (a `return True/False` line, a
    `return (` whose value may be one, a bare `return` / `return None`, or a membership test of an empty
    literal)."""
    return _BOOL_RETURN.search(text) is not None or _EMPTY.search(text) is not None


def constant_returns(module: ast.Module, pure_call: PureCall | None = None) -> dict[str, ConstantReturn]:
    """`name` / `Class.method` -> its constant return, for the functions of one module that have one
    (`pure_call`: which calls run nothing but reads; none when not given)."""
    pure_call = pure_call or _no_call
    bound: dict[str, int] = {}
    for node in ast.walk(module):
        for name in names_bound_by(node):
            bound[name] = bound.get(name, 0) + 1
    found: dict[str, ConstantReturn] = {}
    for stmt in module.body:
        if isinstance(stmt, ast.FunctionDef) and bound.get(stmt.name) == 1:
            if (constant := _constant_return(stmt, pure_call)) is not None:
                found[stmt.name] = constant
        elif isinstance(stmt, ast.ClassDef):
            for item in stmt.body:
                if isinstance(item, ast.FunctionDef) and (constant := _constant_return(item, pure_call)) is not None:
                    found[f"{stmt.name}.{item.name}"] = constant
    return found


def constant_functions(tree: Path, pure_call: PureCall | None = None) -> dict[str, dict[str, ConstantReturn]]:
    """module -> its constant functions, for every module of `tree` that has one."""
    out: dict[str, dict[str, ConstantReturn]] = {}
    for rel, text in sorted(python_sources(tree)):
        if not may_define_constant_functions(text):
            continue
        try:
            module = ast.parse(text)
        except SyntaxError:
            continue  # the gate reports a file that does not parse
        if found := constant_returns(module, pure_call):
            out[module_of(rel)] = found
    return out


def _no_call(call: ast.Call) -> bool:
    return False


def _constant_return(function: ast.FunctionDef, pure_call: PureCall) -> ConstantReturn | None:
    if not all(dotted(_callee(d)) in CACHES for d in function.decorator_list):
        return None
    if any(isinstance(n, (ast.Yield, ast.YieldFrom, ast.Await)) for n in ast.walk(function)):
        return None
    before: list[ast.stmt] = []
    for stmt in function.body:
        if isinstance(stmt, ast.Return):
            break
        before.append(stmt)
    else:
        # no top-level return: a body that only declares and reads falls off its end, returning None
        # (0.5.23's scheduler `def init_zbal_on_npu(self): pass` once its NPU body went)
        if any(isinstance(n, ast.Return) for s in before for n in own_nodes(s)):
            return None
        return ConstantReturn(False, True, none=True) if all(_pure_statement(s, pure_call) for s in before) else None
    if any(isinstance(n, ast.Return) for s in before for n in own_nodes(s)):
        return None
    pure = all(_pure_statement(s, pure_call) for s in before)
    if stmt.value is None or (isinstance(stmt.value, ast.Constant) and stmt.value.value is None):
        return ConstantReturn(False, pure, none=True)
    value, read = _bool_value(stmt.value)
    if value is None:
        return None
    return ConstantReturn(value, pure and (read is None or _reads_only(read, pure_call)))


def _bool_value(node: ast.expr | None) -> tuple[bool | None, ast.expr | None]:
    """The constant a return value always is (and the operand it evaluates on the way), else (None, None)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, bool):
        return node.value, None
    if (isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], (ast.In, ast.NotIn))
            and _empty(node.comparators[0])):
        return isinstance(node.ops[0], ast.NotIn), node.left
    return None, None


def _empty(node: ast.expr) -> bool:
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return not node.elts
    if isinstance(node, ast.Dict):
        return not node.keys
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("frozenset", "set")
            and not node.args and not node.keywords)


def _pure_statement(stmt: ast.stmt, pure_call: PureCall) -> bool:
    if isinstance(stmt, (ast.Pass, ast.Global, ast.Nonlocal)):  # a declaration runs nothing
        return True
    if isinstance(stmt, ast.Expr):
        return isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str)  # a docstring
    if isinstance(stmt, ast.Assign):
        return all(isinstance(t, ast.Name) for t in stmt.targets) and _reads_only(stmt.value, pure_call)
    if isinstance(stmt, ast.AnnAssign):
        return isinstance(stmt.target, ast.Name) and (stmt.value is None or _reads_only(stmt.value, pure_call))
    return False


_READS = (ast.Name, ast.Attribute, ast.Subscript, ast.Constant, ast.Tuple, ast.List, ast.Set, ast.BoolOp,
          ast.UnaryOp, ast.BinOp, ast.Compare, ast.IfExp, ast.Load, ast.expr_context, ast.boolop, ast.unaryop,
          ast.operator, ast.cmpop, ast.Slice)


def _reads_only(node: ast.expr, pure_call: PureCall = _no_call) -> bool:
    """Evaluating `node` only reads: names, attributes, subscripts, literals, their operators, and the calls
    `pure_call` accepts."""
    return all(isinstance(n, _READS) or (isinstance(n, ast.Call) and pure_call(n)) for n in ast.walk(node))



def _callee(node: ast.expr) -> ast.expr:
    return node.func if isinstance(node, ast.Call) else node


def called_methods(tree: Path, functions: dict[str, dict[str, ConstantReturn]],
                   accepts: Callable[[str], bool]) -> dict[str, ConstantReturn]:
    """Constant methods a call through any object folds to (`indexer._aiter_fused_fp8_active(fb)` in another
    module than the class's): method name -> its constant, for the names `accepts` (the profile's vocabulary:
    code outside the tree has no such method) that
    - name one `def` in the whole tree, a constant method of `functions` (no override, no second class);
    - occur nowhere else but as the attribute of a call (`x.m(...)`): no other read, store, string, import,
      keyword or parameter, so no object of another type can answer to it from the tree."""
    wanted = {qualname.rpartition(".")[2]: known for table in functions.values()
              for qualname, known in table.items() if "." in qualname and accepts(qualname.rpartition(".")[2])}
    if not wanted:
        return {}
    word = re.compile(r"\b(?:%s)\b" % "|".join(map(re.escape, sorted(wanted))))
    defs: dict[str, int] = {}
    spoiled: set[str] = set()
    for _, text in sorted(python_sources(tree)):
        if not word.search(text):
            continue
        try:
            module = ast.parse(text)
        except SyntaxError:
            return {}  # the gate reports it; nothing is known of an unparsable tree
        called = {id(n.func) for n in ast.walk(module) if isinstance(n, ast.Call)}
        for node in ast.walk(module):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name in wanted:
                defs[node.name] = defs.get(node.name, 0) + 1
            elif isinstance(node, ast.Attribute) and node.attr in wanted:
                if id(node) not in called or not isinstance(node.ctx, ast.Load):
                    spoiled.add(node.attr)
            elif isinstance(node, ast.Name) and node.id in wanted:
                spoiled.add(node.id)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                spoiled.update(word.findall(node.value))
            elif isinstance(node, (ast.alias, ast.keyword, ast.arg, ast.Global, ast.Nonlocal)):
                names = (node.names if isinstance(node, (ast.Global, ast.Nonlocal))
                         else [node.name, node.asname] if isinstance(node, ast.alias)
                         else [node.arg])
                spoiled.update(n.rpartition(".")[2] for n in names if n and n.rpartition(".")[2] in wanted)
    return {name: known for name, known in sorted(wanted.items()) if defs.get(name) == 1 and name not in spoiled}
