"""Drop a parameter every call passes one bool once its function no longer reads it.

graph/constant_parameters finds them (`get_moe_weight_sizes(..., is_aiter_moe=False)` at every call, a
parameter named for another platform); fold_platform folds their reads inside the function, and a later round
of the batch, reading the folded tree, finds them unread: this codemod then takes the parameter out of the
signature and the argument out of every call (by keyword, or the positional one at its place). Both edits come
from the same table, read once for the whole tree, so a def and its calls always change together (the table
holds only functions whose every use is such a call); a call that leaves the parameter to its default has
nothing to drop, and an argument goes only where it is the literal the table names (a second run, on a call
whose argument went already, finds another value there and leaves it).
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Optional

import libcst as cst
import libcst.helpers  # noqa: F401  (cst.helpers)
import libcst.matchers  # noqa: F401  (cst.matchers)

from shrinker.codemods.base import ShrinkCodemod, remove_elements
from shrinker.codemods.inputs import CodemodInputs
from shrinker.codemods.removed_imports import module_and_package
from shrinker.graph.constant_parameters import ConstantParameter, plain_imports, resolved_module


def _is_literal(node: cst.BaseExpression, value: bool) -> bool:
    return isinstance(node, cst.Name) and node.value == str(value)


@lru_cache(maxsize=8)
def _calls_regex(names: tuple[str, ...]) -> re.Pattern:
    return re.compile(r"\b(?:%s)\b" % "|".join(map(re.escape, names)))


class RemoveConstantParameters(ShrinkCodemod):
    """Remove unread constant parameters from their function and from every call of it."""

    NAME = "remove_constant_parameters"
    DESCRIPTION = "drop parameters every call passes one bool, once their function no longer reads them"

    def __init__(self, context, inputs: CodemodInputs) -> None:
        super().__init__(context, inputs)
        table = inputs.constant_parameters
        self._by_callee: dict[str, dict[str, tuple[ConstantParameter, ...]]] = table.unread() if table else {}
        self._homonyms = table.homonyms if table else frozenset()
        self._own_functions: set[str] = set()
        self._imported: dict[str, set[str]] = {}
        prefix = (self.context.full_module_name or "") + ":"
        self._own = {key[len(prefix):]: {p.name for p in params if not p.read}
                     for key, params in (table.by_function.items() if table else ()) if key.startswith(prefix)}
        self._names: list[str] = []  # enclosing classes and functions

    @classmethod
    def wants(cls, source: str, inputs: CodemodInputs) -> bool:
        table = inputs.constant_parameters
        unread = table.unread() if table else {}
        return bool(unread) and _calls_regex(tuple(sorted(unread))).search(source) is not None

    def visit_Module(self, node: cst.Module) -> Optional[bool]:
        # a homonym's call means the function the file binds to that name (graph/constant_parameters)
        self._own_functions = {stmt.name.value for stmt in node.body if isinstance(stmt, cst.FunctionDef)}
        found = cst.matchers.findall(node, cst.matchers.ImportFrom())
        self._imported = plain_imports(
            (cst.helpers.get_full_name_for_node(i.module) if i.module else None, bool(i.relative),
             [] if isinstance(i.names, cst.ImportStar) else
             [(cst.helpers.get_full_name_for_node(a.name), a.asname and a.evaluated_alias) for a in i.names])
            for i in found)
        return True

    def _parameters_of(self, func: cst.BaseExpression) -> tuple[ConstantParameter, ...]:
        name = func.value if isinstance(func, cst.Name) else func.attr.value if isinstance(func, cst.Attribute) else ""
        by_module = self._by_callee.get(name)
        if not by_module:
            return ()
        if name not in self._homonyms:
            return next(iter(by_module.values()))
        if not isinstance(func, cst.Name):
            return ()  # the table holds a homonym only when none of its calls is such a one
        target = resolved_module(name, self._own_functions, self._imported, module_and_package(self.context)[0] or "")
        return by_module.get(target, ()) if target else ()

    def visit_ClassDef(self, node: cst.ClassDef) -> Optional[bool]:
        self._names.append(node.name.value)
        return True

    def leave_ClassDef(self, original_node: cst.ClassDef, updated_node: cst.ClassDef) -> cst.ClassDef:
        self._names.pop()
        return updated_node

    def visit_FunctionDef(self, node: cst.FunctionDef) -> Optional[bool]:
        self._names.append(node.name.value)
        return True

    def leave_FunctionDef(self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef) -> cst.FunctionDef:
        drop = self._own.get(".".join(self._names), set())
        self._names.pop()
        if not drop:
            return updated_node
        params = updated_node.params
        changes: dict = {}
        for field in ("posonly_params", "params", "kwonly_params"):
            items = list(getattr(params, field))
            gone = {i for i, p in enumerate(items) if p.name.value in drop}
            if gone:
                changes[field] = remove_elements(items, gone)
                self.count("parameters_removed", len(gone))
        if params.kwonly_params and changes.get("kwonly_params") == [] and isinstance(params.star_arg, cst.ParamStar):
            # `def f(m, *, flag)` -> `def f(m)`: the bare `*` goes with its last keyword-only parameter, and
            # what now ends the list takes that parameter's comma (none, or a trailing one)
            changes["star_arg"] = cst.MaybeSentinel.DEFAULT
            ending = params.kwonly_params[-1].comma
            if params.star_kwarg is None:
                for field in ("params", "posonly_params"):
                    items = list(changes.get(field, getattr(params, field)))
                    if items:
                        changes[field] = [*items[:-1], items[-1].with_changes(comma=ending)]
                        break
        return updated_node.with_changes(params=params.with_changes(**changes)) if changes else updated_node

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.Call:
        params = self._parameters_of(updated_node.func)
        if not params:
            return updated_node
        args = list(updated_node.args)
        positional = [i for i, a in enumerate(args) if a.keyword is None and not a.star]
        gone: set[int] = set()
        for param in params:
            keyword = next((i for i, a in enumerate(args) if a.keyword is not None and a.keyword.value == param.name),
                           None)
            at = keyword if keyword is not None else (
                positional[param.index] if param.index is not None and param.index < len(positional) else None)
            # the table says every call passes that literal there: another value means the argument went already
            if at is not None and _is_literal(args[at].value, param.value):
                gone.add(at)
        if not gone:
            return updated_node
        self.count("arguments_removed", len(gone))
        return updated_node.with_changes(args=remove_elements(args, gone))
