"""A function's locals that hold one constant wherever they are read.

SGLang shapes (0.5.23): `use_rocm_mxfp8 = self.use_mxfp8 and _is_hip and _is_gfx95_supported` at the top
of `get_triton_quant_info` (fold_platform rewrites the binding to `False`, so `use_mxfp8=use_rocm_mxfp8`
reads False); `use_npu_cp_full_metadata = use_cp and _is_npu` at the top of an `else:` block, read only
below it; `runner_is_aiter = (... and self.runner.runner_backend.is_aiter())` bound in three branches, each
read below its own binding; `use_aiter_rope = False`, a binding an earlier fold left.

A local is such a constant when (each checked, else it is left alone):
- every binding of the name in the function, nested scopes included, is a plain `name = value` statement
  of the function's own scope (no loop or `with` target, no augmented assignment, parameter, import, `del`,
  `global`/`nonlocal`, nor a binding in a nested function);
- every value decides the same constant: a value a predicate decides (`_use_aiter and x()` as a value,
  or as a flag fold_platform rewrites to its truth: `y and _is_hip` becomes `False`), None from a call the
  fold decides (`aiter_result = try_aiter_fused_mhc_post_pre(...)`, a function that always returns None:
  `aiter_result is not None` is False), or a literal True or False when the platform vocabulary names the
  local (`use_aiter_rope = False`; a plain `debug = False` is a setting and stays) or another binding is a
  value the fold decides to that literal (deepseek_v4_memory_pool's `index_k_page8 = _is_hip and ...`, then
  `index_k_page8 = False` inside `if index_k_page8:`);
- every read comes after one of those statements in the same block, or inside a statement that follows
  it there: each read sees a binding (upstream would raise UnboundLocalError otherwise, and a fold must
  not turn that into a value).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, NamedTuple, Optional

import libcst as cst
import libcst.matchers  # noqa: F401  (cst.matchers)

from shrinker.codemods.bindings import BindingCounts

if TYPE_CHECKING:
    from shrinker.codemods.fold_platform import Folder

_FLAG_SHAPES = (cst.BooleanOperation, cst.UnaryOperation, cst.Comparison)  # what fold_platform rewrites


def binding(stmt: cst.CSTNode) -> Optional[tuple[str, cst.BaseExpression]]:
    """(name, value) of a statement line that is one `name = value` or `name: T = value`."""
    if not isinstance(stmt, cst.SimpleStatementLine) or len(stmt.body) != 1:
        return None
    small = stmt.body[0]
    if isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(small.targets[0].target, cst.Name):
        return small.targets[0].target.value, small.value
    if isinstance(small, cst.AnnAssign) and small.value is not None and isinstance(small.target, cst.Name):
        return small.target.value, small.value
    return None


class _ScopeBindings(cst.CSTVisitor):
    """The `name = value` statement lines of one function's own scope (nested scopes are not entered)."""

    def __init__(self) -> None:
        self.found: dict[str, list[cst.BaseExpression]] = {}

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> bool:
        bound = binding(node)
        if bound is not None:
            self.found.setdefault(bound[0], []).append(bound[1])
        return False

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return False

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False


def scope_bindings(function: cst.FunctionDef) -> dict[str, list[cst.BaseExpression]]:
    """Name -> the values of its `name = value` statement lines in `function`'s own scope."""
    scope = _ScopeBindings()
    function.body.visit(scope)
    return scope.found


def undominated(function: cst.FunctionDef, names: frozenset[str]) -> set[str]:
    """The names among `names` with a read that no earlier binding statement of its block covers."""
    bad: set[str] = set()

    def statements(body, bound: frozenset[str]) -> None:
        for stmt in body:
            bound_here = binding(stmt)
            if bound_here is not None and bound_here[0] in names:
                walk(bound_here[1], bound)
                bound = bound | {bound_here[0]}
            else:
                walk(stmt, bound)

    def walk(node: cst.CSTNode, bound: frozenset[str]) -> None:
        if isinstance(node, (cst.IndentedBlock, cst.SimpleStatementSuite)):
            statements(node.body, bound)
        elif isinstance(node, cst.Name):
            if node.value in names and node.value not in bound:
                bad.add(node.value)
        elif isinstance(node, cst.Attribute):
            walk(node.value, bound)  # `obj.name` is no read of the local `name`
        elif isinstance(node, cst.Arg):
            walk(node.value, bound)  # nor is `f(name=...)`
        else:
            for child in node.children:
                walk(child, bound)

    if isinstance(function.body, cst.IndentedBlock):
        statements(function.body.body, frozenset())
    return bad


_UNDECIDED = object()
_CONSTANTS = {"True": True, "False": False, "None": None}


class _Literal(NamedTuple):
    """A literal True/False binding of a local the vocabulary does not name: it decides nothing alone."""
    value: bool


def _decided(name: str, value: cst.BaseExpression, folder: "Folder", vocabulary: Optional[re.Pattern]):
    """The constant (True, False or None) one binding gives its local, a _Literal, or _UNDECIDED."""
    folded = folder.fold(value, as_value=True)
    if folded.pred and folded.pure and isinstance(folded.node, cst.Name) and folded.node.value in _CONSTANTS:
        return _CONSTANTS[folded.node.value]
    if isinstance(value, cst.Name) and value.value in ("True", "False"):
        literal = value.value == "True"
        return literal if vocabulary is not None and vocabulary.search(name) else _Literal(literal)
    if isinstance(value, _FLAG_SHAPES):
        folded = folder.fold(value)
        if folded.pred and folded.pure and isinstance(folded.value, bool):
            return folded.value
    return _UNDECIDED


class PerFunction(cst.CSTVisitor):
    """Visits every function and records `facts(node)` under its qualified name (`Class.method`); a name
    defined twice under one qualified name (`if x: def f()... else: def f()...`) gets nothing."""

    def __init__(self) -> None:
        self.found: dict[str, dict] = {}
        self._names: list[str] = []
        self._seen: set[str] = set()

    def facts(self, node: cst.FunctionDef, qualname: str) -> dict:
        """What the subclass records of one function (an empty dict: nothing)."""
        return {}

    def entered(self, qualname: str) -> None:
        """Called on entering every function, before its facts."""

    def left(self) -> None:
        """Called on leaving every function."""

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._names.append(node.name.value)

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        self._names.pop()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._names.append(node.name.value)
        qualname = ".".join(self._names)
        self.entered(qualname)
        if qualname in self._seen:
            self.found.pop(qualname, None)
            return
        self._seen.add(qualname)
        if isinstance(node.body, cst.IndentedBlock):
            facts = self.facts(node, qualname)
            if facts:
                self.found[qualname] = facts

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self._names.pop()
        self.left()


class _FunctionConstants(PerFunction):
    """Per function (by qualified name): its local constants."""

    def __init__(self, folder: "Folder", vocabulary: Optional[re.Pattern], served: Optional[dict] = None) -> None:
        super().__init__()
        self.folder = folder
        self.vocabulary = vocabulary
        self.served = served or {}  # qualname -> its served locals (codemods/served_locals), as the fold sees them
        self._outer_served: list[dict] = []

    def entered(self, qualname: str) -> None:
        self._outer_served.append(self.folder.served_locals)
        self.folder.served_locals = {**self.folder.served_locals, **self.served.get(qualname, {})}

    def left(self) -> None:
        self.folder.served_locals = self._outer_served.pop()

    def facts(self, node: cst.FunctionDef, qualname: str) -> dict[str, Optional[bool]]:
        found = scope_bindings(node)
        if not found or not self._constants(found):
            return {}  # the common case: nothing decides; the binding count below walks the whole function
        counter = BindingCounts(self.folder)
        node.visit(counter)
        candidates = {name: values for name, values in found.items() if counter.count.get(name) == len(values)}
        constants = self._constants(candidates)
        if constants:
            bad = undominated(node, frozenset(constants))
            constants = {n: v for n, v in constants.items() if n not in bad}
        return constants

    def _constants(self, candidates: dict[str, list[cst.BaseExpression]]) -> dict[str, Optional[bool]]:
        saved = self.folder.constants
        found: dict[str, Optional[bool]] = {}
        try:
            while True:  # a constant may derive from one above it (`b = a and x()`)
                new = {}
                for name, values in candidates.items():
                    if name in found:
                        continue
                    decided = {_decided(name, v, self.folder, self.vocabulary) for v in values}
                    literals = {d.value for d in decided if isinstance(d, _Literal)}
                    decided -= {_Literal(v) for v in literals}
                    if len(decided) == 1 and _UNDECIDED not in decided and literals <= decided:
                        new[name] = decided.pop()
                if not new:
                    return found
                found.update(new)
                self.folder.constants = {**saved, **found}
        finally:
            self.folder.constants = saved

def function_constants(tree: cst.Module, folder: "Folder", vocabulary: Optional[re.Pattern] = None,
                       served: Optional[dict] = None) -> dict[str, dict[str, Optional[bool]]]:
    visitor = _FunctionConstants(folder, vocabulary, served)
    tree.visit(visitor)
    return visitor.found


class _DropBindings(cst.CSTTransformer):
    """Removes `name = True/False/None` lines of `names` from one function's own scope, never a block's last."""

    def __init__(self, names: frozenset[str]) -> None:
        self.names = names
        self.dropped = 0
        self._depth = 0

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        self._depth += 1
        return self._depth == 1

    def leave_FunctionDef(self, original_node, updated_node):
        self._depth -= 1
        return updated_node

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return False

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def leave_IndentedBlock(self, original_node: cst.IndentedBlock, updated_node: cst.IndentedBlock):
        def constant_line(stmt) -> bool:
            bound = binding(stmt)
            return (bound is not None and bound[0] in self.names and isinstance(bound[1], cst.Name)
                    and bound[1].value in _CONSTANTS)

        kept = [s for s in updated_node.body if not constant_line(s)]
        if len(kept) == len(updated_node.body) or not kept:
            return updated_node
        self.dropped += len(updated_node.body) - len(kept)
        return updated_node.with_changes(body=kept)


def drop_unread_constants(function: cst.FunctionDef, constants: dict[str, Optional[bool]]
                          ) -> tuple[cst.FunctionDef, int]:
    """The function without the bindings of its constants that nothing in it reads any more (their
    values are constants: dropping them runs no less code), and how many lines went."""
    if not constants or not isinstance(function.body, cst.IndentedBlock):
        return function, 0
    scope = _ScopeBindings()
    function.body.visit(scope)
    unread = frozenset(name for name in constants
                       if len(cst.matchers.findall(function.body, cst.matchers.Name(name))) == len(scope.found.get(name, ())))
    if not unread:
        return function, 0
    dropper = _DropBindings(unread)
    result = function.visit(dropper)
    return (result, dropper.dropped) if dropper.dropped else (function, 0)
