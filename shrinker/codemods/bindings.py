"""What statements bind: how often each name is bound in a tree (the one-binding test of the module and
function constants), and a visitor that meets every target expression a statement binds."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

import libcst as cst
import libcst.helpers  # noqa: F401  (cst.helpers)
import libcst.matchers  # noqa: F401  (cst.matchers)

if TYPE_CHECKING:
    from shrinker.codemods.fold_platform import Folder


class BindingCounts(cst.CSTVisitor):
    """How often each name is bound anywhere in a module (assignments, imports, definitions,
    parameters, loop and `with` targets, `match` captures, `global` statements count), skipping the arms of module-level
    `if`s whose test folds to a constant on CUDA (the fold removes them)."""

    def __init__(self, folder: "Folder", every_arm: bool = False) -> None:
        self.folder = folder
        self.count: dict[str, int] = {}
        self._depth = 1 if every_arm else 0  # inside a function every arm counts: no `if` is skipped

    def _bind(self, node: Optional[cst.CSTNode]) -> None:
        if isinstance(node, cst.Name):
            self.count[node.value] = self.count.get(node.value, 0) + 1
        elif isinstance(node, (cst.Tuple, cst.List)):
            for element in node.elements:
                self._bind(element.value)
        elif isinstance(node, cst.StarredElement):
            self._bind(node.value)

    def visit_If(self, node: cst.If) -> Optional[bool]:
        if self._depth:
            return True
        value = self.folder.fold(node.test).value
        node.test.visit(self)
        if value is not False:
            node.body.visit(self)
        if value is not True and node.orelse is not None:
            node.orelse.visit(self)
        return False

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._bind(node.name)
        self._depth += 1

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self._depth -= 1

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._bind(node.name)
        self._depth += 1

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        self._depth -= 1

    def visit_Param(self, node: cst.Param) -> None:
        self._bind(node.name)

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        self._bind(node.target)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._bind(node.target)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._bind(node.target)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._bind(node.target)

    def visit_For(self, node: cst.For) -> None:
        self._bind(node.target)

    def visit_CompFor(self, node: cst.CompFor) -> None:
        self._bind(node.target)

    def visit_AsName(self, node: cst.AsName) -> None:
        self._bind(node.name)

    def visit_ImportAlias(self, node: cst.ImportAlias) -> None:
        if node.asname is None:
            self._bind(cst.Name(str(cst.helpers.get_full_name_for_node(node.name)).split(".")[0]))

    def visit_Global(self, node: cst.Global) -> None:
        for item in node.names:
            self._bind(item.name)
            self._bind(item.name)  # a `global` makes the name rebindable from a function

    def visit_Del(self, node: cst.Del) -> None:
        self._bind(node.target)

    def visit_MatchAs(self, node: cst.MatchAs) -> None:
        self._bind(node.name)  # `case [x]:` / `case Point() as p:` capture into the scope

    def visit_MatchStar(self, node: cst.MatchStar) -> None:
        self._bind(node.name)

    def visit_MatchMapping(self, node: cst.MatchMapping) -> None:
        self._bind(node.rest)


class TargetVisitor(cst.CSTVisitor):
    """Calls `target(node)` with every expression a statement binds: assignment, annotated and augmented
    targets, loop and comprehension targets, `as` names and `del` targets."""

    def target(self, node: cst.CSTNode) -> None:
        """One bound expression: each subclass collects what it needs from it."""

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        self.target(node.target)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self.target(node.target)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self.target(node.target)

    def visit_Del(self, node: cst.Del) -> None:
        self.target(node.target)

    def visit_For(self, node: cst.For) -> None:
        self.target(node.target)

    def visit_CompFor(self, node: cst.CompFor) -> None:
        self.target(node.target)

    def visit_AsName(self, node: cst.AsName) -> None:
        self.target(node.name)


class _BindingsBesidesGlobal(BindingCounts):
    def visit_Global(self, node: cst.Global) -> None:
        pass


def idle_globals(function: cst.FunctionDef, folder: "Folder") -> frozenset[str]:
    """The names `function`'s `global` statements declare that nothing in it binds any more (0.5.23
    deepseek_v4: `global _wo_a_aiter_batched_gemm_disabled` once the ROCm branch that set it went): the
    declaration changes only where bindings go, so a read sees the module's name either way. Bindings in
    nested scopes and in branches another codemod will remove count too (a conservative over-count)."""
    declared = {item.name.value for node in cst.matchers.findall(function.body, cst.matchers.Global())
                for item in node.names}
    if not declared:
        return frozenset()
    # every arm counts, decided or not: a branch still standing may bind the name
    counts = _BindingsBesidesGlobal(folder, every_arm=True)
    function.body.visit(counts)
    return frozenset(name for name in declared if not counts.count.get(name))
