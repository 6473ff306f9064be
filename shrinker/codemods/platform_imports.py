"""Remove unguarded imports of other platforms' packages once nothing uses what they import.

SGLang shapes handled (v0.5.16): module- and function-level imports of the packages in
rules.platform.packages (aiter, torch_npu, sgl_kernel_npu, mlx, mlx_lm, wave_lang, habana_frameworks,
intel_extension_for_pytorch, torch_musa, ...):
- `import aiter`, `import torch_npu  # noqa: F401`, `import aiter.ops`, `import mlx.core as mx`;
- `from aiter import (a, b as c)`: names nobody uses go, used ones stay (the import is trimmed);
- imports whose only users were platform branches or methods removed by the codemods before this
  one in the same run (fold_platform, remove_dead_branches, remove_platform_methods).

Not touched: imports inside a `try:` body (removing them would change which handler runs: that is
remove_dead_branches' job), `from aiter import *` (reported). An import whose names are still used
stays, and a finding names the first use (path:line): never a NameError behind.

Unused is decided by libcst's ScopeProvider; the removal itself is libcst's RemoveImportsVisitor
(which checks again, keeps comments and trims `from x import (a, b)` lists exactly).
"""

from __future__ import annotations

from typing import Optional, Union

import libcst as cst
from libcst.codemod.visitors import RemoveImportsVisitor
from libcst.helpers import get_full_name_for_node
from libcst.metadata import PositionProvider, ScopeProvider

from shrinker.codemods.base import ShrinkCodemod
from shrinker.codemods.inputs import CodemodInputs

_ImportNode = Union[cst.Import, cst.ImportFrom]


class _Candidate:
    """One imported name of a platform package: (module, obj, asname) as RemoveImportsVisitor wants."""

    __slots__ = ("node", "alias", "module", "obj", "asname", "bound")

    def __init__(self, node: _ImportNode, alias: cst.ImportAlias, module: str, obj: Optional[str]) -> None:
        self.node, self.alias, self.module, self.obj = node, alias, module, obj
        self.asname = alias.evaluated_alias
        if self.asname is not None:
            self.bound = self.asname
        elif obj is not None:
            self.bound = obj
        else:
            self.bound = module.split(".")[0]  # `import aiter.ops` binds `aiter`

    def key(self) -> tuple:
        return (self.module, self.obj, self.asname)


class _Gather(cst.CSTVisitor):
    """Platform-package imports outside `try:` bodies."""

    def __init__(self, packages: frozenset[str]) -> None:
        self.packages = packages
        self.candidates: list[_Candidate] = []
        self.stars: list[cst.ImportFrom] = []
        self._in_try_body = 0

    def visit_Try_body(self, node: cst.Try) -> None:
        self._in_try_body += 1

    def leave_Try_body(self, node: cst.Try) -> None:
        self._in_try_body -= 1

    def visit_TryStar_body(self, node: cst.TryStar) -> None:
        self._in_try_body += 1

    def leave_TryStar_body(self, node: cst.TryStar) -> None:
        self._in_try_body -= 1

    def visit_Import(self, node: cst.Import) -> None:
        if self._in_try_body:
            return
        for alias in node.names:
            module = get_full_name_for_node(alias.name) or ""
            if module.split(".")[0] in self.packages:
                self.candidates.append(_Candidate(node, alias, module, None))

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        if self._in_try_body or node.relative or node.module is None:
            return
        module = get_full_name_for_node(node.module) or ""
        if module.split(".")[0] not in self.packages:
            return
        if isinstance(node.names, cst.ImportStar):
            self.stars.append(node)
            return
        for alias in node.names:
            self.candidates.append(_Candidate(node, alias, module, get_full_name_for_node(alias.name)))


class RemovePlatformPackageImports(ShrinkCodemod):
    """Drop imports of aiter / torch_npu / mlx / ... that nothing uses any more."""

    NAME = "remove_platform_imports"
    DESCRIPTION = "remove unguarded imports of other platforms' packages once unused"
    METADATA_DEPENDENCIES = (ScopeProvider,)

    def __init__(self, context, inputs: CodemodInputs) -> None:
        super().__init__(context, inputs)
        self.packages = frozenset(inputs.rules.platform.packages)

    @classmethod
    def wants(cls, source: str, inputs: CodemodInputs) -> bool:
        return any(p in source for p in inputs.rules.platform.packages)

    def _first_use(self, candidate: _Candidate) -> Optional[cst.CSTNode]:
        """The first node reading a name `candidate` binds, or None when nothing reads it."""
        scope = self.get_metadata(ScopeProvider, candidate.node, None)
        if scope is None:
            return candidate.node  # no scope information: treat as used
        names = {candidate.bound}
        if candidate.obj is None and candidate.asname is None:
            names.add(candidate.module)  # `import aiter.ops` also binds the dotted name
        uses = [ref.node for assignment in scope.assignments
                if assignment.name in names and getattr(assignment, "node", None) is candidate.node
                for ref in assignment.references]
        if not uses:
            return None
        return min(uses, key=lambda node: self._line(node) or 0)

    def transform_module_impl(self, tree: cst.Module) -> cst.Module:
        gather = _Gather(self.packages)
        tree.visit(gather)
        for star in gather.stars:
            self.report(star, "star import of a platform package kept")
        if not gather.candidates:
            return tree
        unused, used = [], []
        for candidate in gather.candidates:
            use = self._first_use(candidate)
            (used if use is not None else unused).append((candidate, use))
        for candidate, use in used:
            where = self._line(use)
            self.report(candidate.node, f"import of `{candidate.bound}` ({candidate.module}) kept: "
                                        f"still used{f' at line {where}' if where else ''}")
        if not unused:
            return tree
        for candidate, _ in unused:
            RemoveImportsVisitor.remove_unused_import(self.context, candidate.module, candidate.obj,
                                                      candidate.asname)
        result = RemoveImportsVisitor(self.context).transform_module(tree)
        self.context.scratch.pop(RemoveImportsVisitor.CONTEXT_KEY, None)
        after = _Gather(self.packages)
        result.visit(after)
        left = {c.key() for c in after.candidates}
        removed = sum(1 for c, _ in unused if c.key() not in left)
        if removed:
            self.count("imports_removed", removed)
        return result

    def _line(self, node: Optional[cst.CSTNode]) -> Optional[int]:
        if node is None or self.context.wrapper is None:
            return None
        pos = self.context.wrapper.resolve(PositionProvider).get(node)
        return pos.start.line if pos is not None else None
