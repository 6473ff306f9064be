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
stays; at module level a finding names the first use (path:line): never a NameError behind. Inside a
function it is no finding: it runs only when that code runs, and upstream on CUDA raises ImportError
right there too (moe_runner/aiter.py's `from aiter import ActivationType` in AiterRunnerCore.run).

Unused is decided by libcst's ScopeProvider (accesses of the names each import binds, string
annotations included). The removal keeps the statement's layout: `from aiter import (a, b, c,)`
keeps its parentheses and trailing comma (libcst's RemoveImportsVisitor would write `(\n    b)`);
an import that was the only statement of a block leaves `pass`.
"""

from __future__ import annotations

import re
from typing import Mapping, Optional, Union

import libcst as cst
from libcst.helpers import get_full_name_for_node
from libcst.metadata import FunctionScope, ScopeProvider

from shrinker.codemods.base import ShrinkCodemod, node_lines, pass_block, remove_elements
from shrinker.codemods.inputs import CodemodInputs

_ImportNode = Union[cst.Import, cst.ImportFrom]


class _Candidate:
    """One name an import of a platform package binds (`import a.b` binds `a`)."""

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


class _Gather(cst.CSTVisitor):
    """Platform-package imports outside `try:` bodies."""

    def __init__(self, packages: frozenset[str]) -> None:
        self.packages = packages
        self.candidates: list[_Candidate] = []
        self.stars: list[cst.ImportFrom] = []
        self._in_try_body = 0

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> bool:
        return any(isinstance(s, (cst.Import, cst.ImportFrom)) for s in node.body)

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
    # ScopeProvider is resolved by hand, and only for files that import a platform package:
    # declared in METADATA_DEPENDENCIES it would be computed for every file (~0.3 s per 1000 lines).

    def __init__(self, context, inputs: CodemodInputs) -> None:
        self.packages = frozenset(inputs.rules.platform.packages)
        super().__init__(context, inputs)
        self._scopes: Mapping = {}
        self._drop: dict[int, set[int]] = {}

    @classmethod
    def wants(cls, source: str, inputs: CodemodInputs) -> bool:
        return any(p in source for p in inputs.rules.platform.packages)

    def prune_pattern(self) -> re.Pattern:
        return re.compile("|".join(re.escape(p) for p in sorted(self.packages)))

    def _first_use(self, candidate: _Candidate) -> Optional[cst.CSTNode]:
        """The first node reading a name `candidate` binds, or None when nothing reads it."""
        scope = self._scopes.get(candidate.node)
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
        lines = self._lines(uses)
        return min(uses, key=lambda node: lines.get(id(node), 0))

    def transform_module_impl(self, tree: cst.Module) -> cst.Module:
        gather = _Gather(self.packages)
        tree.visit(gather)
        for star in gather.stars:
            self.report(star, "star import of a platform package kept")
        if not gather.candidates:
            return tree
        self._scopes = self.context.wrapper.resolve(ScopeProvider)
        unused, used = [], []
        for candidate in gather.candidates:
            use = self._first_use(candidate)
            (used if use is not None else unused).append((candidate, use))
        # A function-level import runs only when that code runs: upstream on CUDA it raises ImportError
        # right there too, so keeping it (used) changes nothing. Only module-level ones are findings.
        used = [(c, u) for c, u in used if not isinstance(self._scopes.get(c.node), FunctionScope)]
        use_lines = self._lines([use for _, use in used])
        for candidate, use in used:
            where = use_lines.get(id(use))
            self.report(candidate.node, f"import of `{candidate.bound}` ({candidate.module}) kept: "
                                        f"still used{f' at line {where}' if where else ''}")
        if not unused:
            return tree
        for candidate, _ in unused:
            self._drop.setdefault(id(candidate.node), set()).add(id(candidate.alias))
        return tree.visit(self)

    # -- the removal (visited only when something goes) ----------------------------------------
    def _trim(self, original: _ImportNode, updated: _ImportNode) -> Union[_ImportNode, cst.RemovalSentinel]:
        drop_ids = self._drop.get(id(original))
        if not drop_ids or isinstance(original.names, cst.ImportStar):
            return updated
        drop = {i for i, alias in enumerate(original.names) if id(alias) in drop_ids}
        self.count("imports_removed", len(drop))
        names = remove_elements(list(updated.names), drop)
        if not names:
            return cst.RemoveFromParent()
        return updated.with_changes(names=names)

    def leave_Import(self, original_node: cst.Import, updated_node: cst.Import):
        return self._trim(original_node, updated_node)

    def leave_ImportFrom(self, original_node: cst.ImportFrom, updated_node: cst.ImportFrom):
        return self._trim(original_node, updated_node)

    def leave_IndentedBlock(self, original_node: cst.IndentedBlock, updated_node: cst.IndentedBlock):
        if not updated_node.body and original_node.body:
            return pass_block(updated_node)
        return updated_node

    def _lines(self, nodes: list[cst.CSTNode]) -> dict[int, int]:
        return node_lines(self.module, nodes)
