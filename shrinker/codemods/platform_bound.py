"""Remove functions that can only raise NameError on CUDA, once their platform-only names are gone.

SGLang binds many names only on one platform (`if _is_hip: from aiter import mla_decode_fwd`,
`if _is_npu: from sgl_kernel_npu.kvcacheio import transfer_kv_dim_exchange`). After fold_platform
and remove_dead_branches those bindings are gone, and a function like

    def _forward_aiter(self, q, ...):          # dsa_backend.py
        ...
        mla_decode_fwd(q, ...)                 # unconditional: on CUDA this line always raises

is left naming a name nothing defines. On CUDA it never worked in upstream either: every call
reached that line and raised NameError. Such a function goes (to a fixpoint within the file: a
module-level function that only called removed ones goes next). Removing it keeps every path that
worked upstream as it was; a path that failed upstream fails still (NameError or AttributeError at
the call instead of inside).

What makes a function removable (all must hold, else nothing changes and the apply gate reports the
undefined name):
- the name was bound in the ORIGINAL module inside an `if`/`try` block (at module level or in a
  function), and the edited module binds it nowhere (a platform-only binding the folding removed) — or
  it is a module-level function this codemod removed;
- the use runs on every call: in a statement directly in the function body (or in a `with` body),
  not under if/for/while/try/match, not in a lambda, comprehension, conditional expression or the
  right side of and/or; no statement before it can return; the function is no generator;
- a method: not a dunder, and either its class has no base class or its name is defined in no other
  class of the kept tree (CodemodInputs.shared_methods): removing it can never unmask a base method;
- a module-level function: no kept module imports it by name.

Two more kinds of function always fail on CUDA and go the same way: one whose body imports a platform
package (rules.platform.packages) before anything can return (`from aiter.ops.triton... import ...`),
and one whose name rules.platform.functions matches (`aiter_*`, `*_npu`) that uses such a name
anywhere in its body.

A use inside the annotation of an annotated assignment in a function (`self.qr_comm:
Optional[QuickAllReduce] = None`) is never evaluated: the annotation goes, the assignment stays.
"""

from __future__ import annotations

import ast
from typing import Optional

import libcst as cst

from shrinker.codemods.base import ShrinkCodemod, pass_block
from shrinker.codemods.inputs import CodemodInputs
from shrinker.graph.bindings import imports_package, names_bound_by
from shrinker.rules.predicates import MethodNames

_CONDITIONAL_EXPR = (ast.IfExp, ast.Lambda, ast.GeneratorExp, ast.ListComp, ast.SetComp, ast.DictComp)
_CONDITIONAL_STMT = (ast.If, ast.For, ast.AsyncFor, ast.While, ast.Try, ast.Match, ast.FunctionDef,
                     ast.AsyncFunctionDef, ast.ClassDef)
_MAX_ROUNDS = 8


def conditional_bindings(tree: ast.Module) -> set[str]:
    """Names bound inside an if/try block anywhere (module level or in functions)."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.If, ast.Try)):
            blocks = [node.body, node.orelse] + ([h.body for h in node.handlers] + [node.finalbody]
                                                 if isinstance(node, ast.Try) else [])
            for block in blocks:
                for stmt in block:
                    for inner in ast.walk(stmt):
                        names |= names_bound_by(inner)
    return names


def all_bindings(tree: ast.Module) -> set[str]:
    """Every name bound anywhere in the module, in any scope."""
    names: set[str] = set()
    for node in ast.walk(tree):
        names |= names_bound_by(node)
    return names


def _undefined(tree: ast.Module, path: str) -> list[tuple[str, int, int]]:
    from pyflakes import checker, messages

    return [(m.message_args[0], m.lineno, m.col) for m in checker.Checker(tree, filename=path).messages
            if isinstance(m, messages.UndefinedName)]


class _Parents:
    def __init__(self, tree: ast.Module) -> None:
        self.parent: dict[ast.AST, ast.AST] = {}
        for node in ast.walk(tree):
            for child in ast.iter_child_nodes(node):
                self.parent[child] = node

    def name_at(self, tree: ast.Module, name: str, line: int, col: int) -> Optional[ast.Name]:
        for node in ast.walk(tree):
            if isinstance(node, ast.Name) and node.id == name and node.lineno == line and node.col_offset == col:
                return node
        return None


def _can_return_or_yield(nodes) -> bool:
    for stmt in nodes:
        for node in ast.walk(stmt):
            if isinstance(node, (ast.Return, ast.Yield, ast.YieldFrom)):
                return True
    return False


def _own_nodes(fn: ast.AST):
    """Nodes of a function body, not descending into nested functions, lambdas or classes."""
    stack = list(ast.iter_child_nodes(fn))
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            stack.extend(ast.iter_child_nodes(node))


def platform_import_functions(tree: ast.Module, packages: frozenset[str]) -> list[ast.AST]:
    """Functions whose body imports a platform package unconditionally (before any return):
    on CUDA every call raises ImportError (`from aiter.ops.triton... import ...` as a first line)."""
    out = []
    for fn in ast.walk(tree):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for index, stmt in enumerate(fn.body):
                if imports_package(stmt, packages):
                    if not _can_return_or_yield(fn.body[:index]):
                        out.append(fn)
                    break
    return out


def always_raising_function(parents: _Parents, name: ast.Name) -> Optional[ast.AST]:
    """The function whose every call evaluates `name` (see module docstring), or None."""
    child: ast.AST = name
    node = parents.parent.get(name)
    while node is not None and not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        if isinstance(node, _CONDITIONAL_EXPR) or isinstance(node, _CONDITIONAL_STMT):
            return None
        if isinstance(node, ast.BoolOp) and child is not node.values[0]:
            return None
        if isinstance(node, ast.With) and child not in node.body and child not in node.items:
            return None
        child, node = node, parents.parent.get(node)
    if node is None or child not in node.body:  # a decorator or default: evaluated at definition
        return None
    index = node.body.index(child)
    if _can_return_or_yield(node.body[:index]):
        return None
    if any(isinstance(n, (ast.Yield, ast.YieldFrom, ast.Await)) for n in _own_nodes(node)):
        return None
    return node


class RemovePlatformBoundFunctions(ShrinkCodemod):
    """Remove the functions that always raise NameError on CUDA once platform-only bindings are gone."""

    NAME = "remove_platform_bound"
    DESCRIPTION = "remove functions whose every call uses a name only another platform binds"
    NEEDS_ORIGINAL = True

    def __init__(self, context, inputs: CodemodInputs, original: Optional[cst.Module] = None) -> None:
        super().__init__(context, inputs)
        self.original = original

    @classmethod
    def wants(cls, source: str, inputs: CodemodInputs) -> bool:
        from shrinker.codemods.fold_platform import predicate_triggers

        return predicate_triggers(inputs, tuple(inputs.rules.platform.packages)).search(source) is not None

    def transform_module(self, tree: cst.Module) -> cst.Module:
        if self.original is None:
            return tree
        try:
            candidates = conditional_bindings(ast.parse(self.original.code))
            parsed = ast.parse(tree.code)
        except SyntaxError:
            return tree
        eligible = candidates - all_bindings(parsed)
        removed_functions: set[str] = set()
        for _ in range(_MAX_ROUNDS):
            targets, annotations = self._targets(parsed, eligible | removed_functions)
            if not targets and not annotations:
                break
            if annotations:
                tree = drop_annotations(tree, annotations)
                self.count("annotations_dropped", len(annotations))
            if targets:
                tree = tree.visit(_DropFunctions(targets))
            for qualname in targets:
                self.count("functions_removed")
                if "." not in qualname:
                    removed_functions.add(qualname)
            parsed = ast.parse(tree.code)
            removed_functions -= all_bindings(parsed)
        return tree

    def _targets(self, parsed: ast.Module, eligible: set[str]) -> tuple[set[str], set[tuple[int, int]]]:
        """Functions to remove (qualnames) and annotated assignments to un-annotate (line, col)."""
        parents = _Parents(parsed)
        annotations: set[tuple[int, int]] = set()
        imported = (self.inputs.removed.imported or {}).get(self.context.full_module_name or "", frozenset())
        shared = self.inputs.shared_methods
        targets: set[str] = set()
        candidates: list[ast.AST] = []
        functions = MethodNames(list(self.inputs.rules.platform.functions))
        for name, line, col in (_undefined(parsed, self.path) if eligible else ()):
            if name not in eligible:
                continue
            node = parents.name_at(parsed, name, line, col)
            ann = _local_annotation(parents, node) if node is not None else None
            if ann is not None:  # never evaluated: a function-scope annotation (`self.qr: Optional[X] = None`)
                annotations.add((ann.lineno, ann.col_offset))
                continue
            fn = always_raising_function(parents, node) if node is not None else None
            if fn is None and node is not None:
                fn = _enclosing_platform_function(parents, node, functions)
            if fn is not None:
                candidates.append(fn)
        candidates += platform_import_functions(parsed, frozenset(self.inputs.rules.platform.packages))
        referenced = _referenced_names(parsed)
        # a platform-named module function nothing references any more (its "npu" dispatch entry folded away)
        candidates += [fn for fn in parsed.body if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef))
                       and fn.name in functions and fn.name not in referenced]
        for fn in candidates:
            owner = parents.parent.get(fn)
            if isinstance(owner, ast.Module):
                # a module function stays while anything names it: its callers would turn undefined
                if fn.name in imported or "*" in imported or self.inputs.removed.imported is None \
                        or fn.name in referenced:
                    continue
                targets.add(fn.name)
            elif isinstance(owner, ast.ClassDef) and isinstance(parents.parent.get(owner), ast.Module):
                dunder = fn.name.startswith("__") and fn.name.endswith("__")
                # With no base class (HpuCommunicator) nothing can be unmasked; else the name must be unique.
                based = any(not (isinstance(b, ast.Name) and b.id == "object") for b in owner.bases)
                if dunder or (based and (shared is None or fn.name in shared)):
                    continue
                targets.add(f"{owner.name}.{fn.name}")
        return targets, annotations


def _referenced_names(tree: ast.Module) -> set[str]:
    """Names read anywhere in the module (outside their own definition's name), and `__all__` strings."""
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            names |= {e.value for e in ast.walk(node.value) if isinstance(e, ast.Constant) and isinstance(e.value, str)}
    return names


def _enclosing_platform_function(parents: _Parents, name: ast.Name, functions) -> Optional[ast.AST]:
    """The innermost function around `name` whose name rules.platform.functions matches, if any."""
    node = parents.parent.get(name)
    while node is not None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return node if node.name in functions else None
        node = parents.parent.get(node)
    return None


def _local_annotation(parents: _Parents, name: ast.Name) -> Optional[ast.AnnAssign]:
    """The annotated assignment inside a function whose annotation holds `name` (never evaluated)."""
    child: ast.AST = name
    node = parents.parent.get(name)
    while node is not None and not isinstance(node, ast.stmt):
        child, node = node, parents.parent.get(node)
    if not (isinstance(node, ast.AnnAssign) and child is node.annotation and node.value is not None):
        return None
    scope = parents.parent.get(node)
    while scope is not None and not isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef,
                                                          ast.Module)):
        scope = parents.parent.get(scope)
    return node if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)) else None


def drop_annotations(tree: cst.Module, where: set[tuple[int, int]]) -> cst.Module:
    """`self.qr_comm: Optional[QuickAllReduce] = None` -> `self.qr_comm = None`, at (line, col) of `where`."""
    from libcst.metadata import MetadataWrapper, PositionProvider

    wrapper = MetadataWrapper(tree, unsafe_skip_copy=True)
    positions = wrapper.resolve(PositionProvider)

    class _Drop(cst.CSTTransformer):
        def leave_AnnAssign(self, original_node: cst.AnnAssign, updated_node: cst.AnnAssign):
            start = positions[original_node].start
            if (start.line, start.column) not in where:
                return updated_node
            return cst.Assign(targets=[cst.AssignTarget(target=updated_node.target)], value=updated_node.value,
                              semicolon=updated_node.semicolon)

    return wrapper.module.visit(_Drop())


class _DropFunctions(cst.CSTTransformer):
    """Remove module-level functions (`name`) and methods of module-level classes (`Class.name`)."""

    def __init__(self, qualnames: set[str]) -> None:
        self.qualnames = qualnames
        self.depth = 0
        self.cls: Optional[str] = None

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        if self.depth == 0 and self.cls is None:
            self.cls = node.name.value
            return True
        return False

    def leave_ClassDef(self, original_node: cst.ClassDef, updated_node: cst.ClassDef) -> cst.ClassDef:
        if self.cls == original_node.name.value:
            self.cls = None
            body = updated_node.body
            if isinstance(body, cst.IndentedBlock) and not body.body:
                return updated_node.with_changes(body=pass_block(body))
        return updated_node

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        self.depth += 1
        return False

    def leave_FunctionDef(self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef):
        self.depth -= 1
        qualname = f"{self.cls}.{original_node.name.value}" if self.cls else original_node.name.value
        if self.depth == 0 and qualname in self.qualnames:
            return cst.RemovalSentinel.REMOVE
        return updated_node
