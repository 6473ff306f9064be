"""Prune string-keyed registries by key, as the rules name them and the plan decides.

Driven by `rules.registries` (kinds `decorator` and `dict`; a registry with `follows = "<other>"`
drops the keys the plan removes from that other registry) and `inputs.removed.registry_keys`.
SGLang shapes handled:
  - decorator: `@register_attention_backend("aiter")\\ndef create_aiter_backend(runner): ...` in
    attention_registry.py: the whole function goes (a function registered under several keys
    loses only the removed decorators);
  - dict literal at module level (`BASE_QUANTIZATION_METHODS = {"awq": AWQConfig, ...}`), as a
    class attribute (`FunctionCallParser.ToolCallParserEnum`, `ReasoningParser.DetectorMap`) or
    local to a method (`DraftBackendFactory.*.backend_map` in speculative/draft_utils.py; `variable`
    is a glob over the dotted path class.function.name);
  - `BASE_QUANTIZATION_METHODS.update({...})`: removed entries go, the statement goes when its dict
    empties, and so does an `if <pure test>:` around it that empties (`if is_npu(): ....update(...)`);
  - `_CONFIG_REGISTRY["kimi_k2"] = ...` subscript assignments of removed keys;
  - `_CONFIG_REGISTRY = {cls.model_type: cls for cls in [AfmoeConfig, ...]}` (utils/hf_transformers/
    common.py): list elements whose name comes from a removed module (or is no longer bound) go;
  - private methods/functions that only removed entries referred to (`"aiter":
    self._create_aiter_decode_backend`) go with them when nothing else in the file mentions them.
A default pointing to a removed key (`def get_backend(name="aiter")`) is a rule decision: it stays
and becomes a finding. A removed registered function that remaining code still calls is a finding.
"""

from __future__ import annotations

from collections import Counter
from fnmatch import fnmatchcase
from typing import Iterable

import libcst as cst
from libcst.codemod import CodemodContext
from libcst.helpers import get_full_name_for_node
from libcst.metadata import ParentNodeProvider, PositionProvider, ScopeProvider

from shrinker.codemods.base import ShrinkCodemod
from shrinker.codemods.elements import drop_from_literal
from shrinker.codemods.inputs import CodemodInputs
from shrinker.codemods.removed_imports import find_dead_imports, module_and_package
from shrinker.rules.schema import Registry


def removed_keys(inputs: CodemodInputs, reg: Registry) -> frozenset[str]:
    """Keys the plan removes from `reg` (from the followed registry when `follows` is set)."""
    source = getattr(reg, "follows", "") or reg.name
    return inputs.removed.registry_keys.get(source, frozenset())


def string_value(node: cst.CSTNode | None) -> str | None:
    if isinstance(node, cst.SimpleString):
        value = node.evaluated_value
        return value if isinstance(value, str) else None
    return None


def _last(name: str | None) -> str:
    return (name or "").rpartition(".")[2]


def pure_test(test: cst.BaseExpression) -> bool:
    """A test whose evaluation can be dropped: names, attributes, no-argument calls, constants."""
    if isinstance(test, (cst.Name, cst.Attribute, cst.SimpleString, cst.Integer)):
        return True
    if isinstance(test, cst.Call):
        return not test.args and isinstance(test.func, (cst.Name, cst.Attribute))
    if isinstance(test, cst.UnaryOperation):
        return pure_test(test.expression)
    if isinstance(test, cst.BooleanOperation):
        return pure_test(test.left) and pure_test(test.right)
    if isinstance(test, cst.Comparison):
        return pure_test(test.left) and all(pure_test(c.comparator) for c in test.comparisons)
    return False


class _Mentions(cst.CSTVisitor):
    """How often each of `names` is mentioned (name, attribute or string) outside its own def."""

    def __init__(self, names: set[str]):
        self.names = names
        self.count: Counter[str] = Counter()
        self._inside: list[str] = []

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._inside.append(node.name.value)

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self._inside.pop()

    def _see(self, name: str) -> None:
        if name in self.names and name not in self._inside:
            self.count[name] += 1

    def visit_Name(self, node: cst.Name) -> None:
        self._see(node.value)

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        value = string_value(node)
        if value:
            self._see(value)


class _DropDefs(cst.CSTTransformer):
    def __init__(self, names: set[str]):
        self.names = names
        self.removed: list[str] = []

    def leave_FunctionDef(self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef):
        if original_node.name.value in self.names:
            self.removed.append(original_node.name.value)
            return cst.RemoveFromParent()
        return updated_node


def _anchor(reg: Registry) -> str:
    """A word any file holding `reg` must contain (for the cheap pre-parse test)."""
    if reg.kind == "decorator":
        return _last(reg.decorator)
    return reg.variable.rpartition(".")[2].replace("*", "")


class PruneRegistries(ShrinkCodemod):
    """Remove the entries of removed keys from the registries rules place in this file."""

    NAME = "prune_registries"
    DESCRIPTION = "remove registry entries (decorated factories, dict entries) of removed keys"
    METADATA_DEPENDENCIES = (ScopeProvider, ParentNodeProvider, PositionProvider)

    def __init__(self, context: CodemodContext, inputs: CodemodInputs):
        super().__init__(context, inputs)
        module, _ = module_and_package(context)
        self._regs = [r for r in inputs.rules.registries
                      if r.module and r.module == module and r.kind in ("decorator", "dict")]
        self._keys = {r.name: removed_keys(inputs, r) for r in self._regs}
        self._stack: list[tuple[str, str]] = []  # (name, "class" | "def") of the enclosing defs
        self._removed_defs: list[tuple[cst.FunctionDef | cst.ClassDef, str]] = []  # original def or class, why
        self._dead_names: set[str] = set()
        self._candidates: set[str] = set()  # private defs only removed entries referred to
        self._if_marks: list[int] = []
        self._removed_statements = 0

    @classmethod
    def wants(cls, source: str, inputs: CodemodInputs) -> bool:
        return any(r.kind in ("decorator", "dict") and _anchor(r) in source for r in inputs.rules.registries)

    # -- entry
    def transform_module(self, tree: cst.Module) -> cst.Module:
        if not self._regs:
            return tree
        return super().transform_module(tree)

    def transform_module_impl(self, tree: cst.Module) -> cst.Module:
        tree = tree.visit(self)
        self._report_removed_defs()
        while self._candidates:  # drop private helpers nothing mentions any more
            mentions = _Mentions(self._candidates)
            tree.visit(mentions)
            unused = {n for n in self._candidates if not mentions.count[n]}
            if not unused:
                break
            dropper = _DropDefs(unused)
            tree = tree.visit(dropper)
            self.changes["helpers_removed"] += len(dropper.removed)
            self._candidates -= unused
        return tree

    def visit_Module(self, node: cst.Module) -> None:
        _, package = module_and_package(self.context)
        for stmt, dead in find_dead_imports(node, package, self.inputs.removed).items():
            if self._module_level(stmt):
                self._dead_names.update(d.bound for d in dead if d.alias is not None)
        scope = self.get_metadata(ScopeProvider, node, None)
        if scope is not None:  # names no statement binds any more (their import already went)
            self._dead_names.update(a.node.value for a in scope.accesses
                                    if not a.referents and isinstance(a.node, cst.Name))

    def _module_level(self, node: cst.CSTNode) -> bool:
        parent = self.get_metadata(ParentNodeProvider, node, None)
        while parent is not None:
            if isinstance(parent, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
                return False
            parent = self.get_metadata(ParentNodeProvider, parent, None)
        return True

    # -- scopes
    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._stack.append((node.name.value, "class"))

    def leave_ClassDef(self, original_node: cst.ClassDef, updated_node: cst.ClassDef):
        self._stack.pop()
        return self._registered(original_node, updated_node)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._stack.append((node.name.value, "def"))

    def leave_FunctionDef(self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef):
        self._stack.pop()
        return self._registered(original_node, updated_node)

    def _registered(self, original_node, updated_node):
        """A def or class registered only under removed keys goes; one also registered under a kept key
        loses the removed keys' decorators."""
        registered, dropped = [], []
        for decorator in updated_node.decorators:
            hit = self._decorator_key(decorator)
            if hit is not None:
                registered.append(decorator)
                reg, key = hit
                if key in self._keys[reg.name]:
                    dropped.append((decorator, reg, key))
        if not dropped:
            return updated_node
        if len(dropped) == len(registered):
            reg, key = dropped[0][1], dropped[0][2]
            self._removed_defs.append((original_node, f"registered as {reg.name} key '{key}'"))
            kind = "classes" if isinstance(original_node, cst.ClassDef) else "functions"
            self.changes[f"decorated_{kind}_removed"] += 1
            return cst.RemoveFromParent()
        gone = {id(d) for d, _, _ in dropped}
        self.changes["decorators_removed"] += len(dropped)
        return updated_node.with_changes(decorators=[d for d in updated_node.decorators if id(d) not in gone])

    def _decorator_key(self, decorator: cst.Decorator) -> tuple[Registry, str] | None:
        call = decorator.decorator
        if not isinstance(call, cst.Call) or not call.args:
            return None
        key = string_value(call.args[0].value)
        if key is None:
            return None
        name = _last(get_full_name_for_node(call.func))
        for reg in self._regs:
            if reg.kind == "decorator" and _last(reg.decorator) == name:
                return reg, key
        return None

    def _paths(self, expr: cst.BaseExpression) -> set[str]:
        """Dotted paths `expr` may name: a local, a module global, or `self.x` as Class.x."""
        name = get_full_name_for_node(expr)
        if not name:
            return set()
        here = [n for n, _ in self._stack]
        paths = {name, ".".join([*here, name])}
        head, _, rest = name.partition(".")
        if rest and head in ("self", "cls"):
            classes = [i for i, (_, kind) in enumerate(self._stack) if kind == "class"]
            if classes:
                paths.add(".".join([*here[: classes[-1] + 1], rest]))
        return paths

    def _dict_regs(self, expr: cst.BaseExpression) -> list[Registry]:
        paths = self._paths(expr)
        return [r for r in self._regs if r.kind == "dict" and any(fnmatchcase(p, r.variable) for p in paths)]

    # -- dict registries
    def _prune_literal(self, value: cst.BaseExpression, regs: list[Registry]) -> cst.BaseExpression | None:
        keys = frozenset().union(*(self._keys[r.name] for r in regs))
        if isinstance(value, cst.Dict):
            def drop(el: cst.CSTNode) -> bool:
                hit = isinstance(el, cst.DictElement) and string_value(el.key) in keys
                if hit:
                    self._note_value(el.value)  # type: ignore[attr-defined]
                return hit
            new = drop_from_literal(value, drop)
            if new is not None:
                self.changes["dict_entries_removed"] += len(value.elements) - len(new.elements)  # type: ignore[attr-defined]
            return new
        if isinstance(value, (cst.DictComp, cst.ListComp, cst.SetComp)) and \
                isinstance(value.for_in.iter, (cst.List, cst.Tuple)):
            iterable = value.for_in.iter
            new_iter = drop_from_literal(
                iterable, lambda el: isinstance(getattr(el, "value", None), cst.Name)
                and el.value.value in self._dead_names)  # type: ignore[attr-defined]
            if new_iter is None:
                return None
            self.changes["registry_list_elements_removed"] += len(iterable.elements) - len(new_iter.elements)  # type: ignore[attr-defined]
            return value.with_changes(for_in=value.for_in.with_changes(iter=new_iter))
        return None

    def _note_value(self, value: cst.BaseExpression) -> None:
        """A removed entry's value `self._helper` / `_helper`: a private helper that may be unused now."""
        name = value.attr.value if isinstance(value, cst.Attribute) else (
            value.value if isinstance(value, cst.Name) else "")
        if name.startswith("_") and not name.startswith("__"):
            self._candidates.add(name)

    def leave_Assign(self, original_node: cst.Assign, updated_node: cst.Assign):
        if len(updated_node.targets) != 1:
            return updated_node
        target = updated_node.targets[0].target
        if isinstance(target, cst.Subscript):
            return self._subscript_store(target, updated_node)
        regs = self._dict_regs(target)
        new = self._prune_literal(updated_node.value, regs) if regs else None
        return updated_node if new is None else updated_node.with_changes(value=new)

    def leave_AnnAssign(self, original_node: cst.AnnAssign, updated_node: cst.AnnAssign):
        if updated_node.value is None:
            return updated_node
        regs = self._dict_regs(updated_node.target)
        new = self._prune_literal(updated_node.value, regs) if regs else None
        return updated_node if new is None else updated_node.with_changes(value=new)

    def _subscript_store(self, target: cst.Subscript, node: cst.Assign):
        regs = self._dict_regs(target.value)
        if not regs or len(target.slice) != 1 or not isinstance(target.slice[0].slice, cst.Index):
            return node
        key = string_value(target.slice[0].slice.value)
        if key is not None and any(key in self._keys[r.name] for r in regs):
            self.changes["dict_entries_removed"] += 1
            self._removed_statements += 1
            return cst.RemoveFromParent()
        return node

    def leave_Expr(self, original_node: cst.Expr, updated_node: cst.Expr):
        call = updated_node.value
        if isinstance(call, cst.Call) and self._registration_call_removed(call):
            return cst.RemoveFromParent()
        if not (isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute)
                and call.func.attr.value == "update" and len(call.args) == 1
                and isinstance(call.args[0].value, cst.Dict)):
            return updated_node
        regs = self._dict_regs(call.func.value)
        if not regs:
            return updated_node
        new = self._prune_literal(call.args[0].value, regs)
        if new is None:
            return updated_node
        if not new.elements:  # type: ignore[attr-defined]
            self.changes["update_calls_removed"] += 1
            self._removed_statements += 1
            return cst.RemoveFromParent()
        return updated_node.with_changes(value=call.with_changes(args=[call.args[0].with_changes(value=new)]))

    def _registration_call_removed(self, call: cst.Call) -> bool:
        """`AttentionBackendRegistry.register("aiter", handle_attention_aiter)`, a statement that registers
        under a removed key as the registry's decorator would (the callee named as the rule writes it)."""
        name = get_full_name_for_node(call.func)
        key = string_value(call.args[0].value) if call.args and call.args[0].keyword is None else None
        if key is None or not name:
            return False
        for reg in self._regs:
            if reg.kind == "decorator" and reg.decorator == name and key in self._keys[reg.name]:
                self.changes["registration_calls_removed"] += 1
                self._removed_statements += 1
                return True
        return False

    def visit_If(self, node: cst.If) -> None:
        self._if_marks.append(self._removed_statements)

    def leave_If(self, original_node: cst.If, updated_node: cst.If):
        mark = self._if_marks.pop()
        body = updated_node.body.body
        emptied = not body or (len(body) == 1 and isinstance(body[0], cst.SimpleStatementLine)
                               and not body[0].body)
        if self._removed_statements > mark and emptied and updated_node.orelse is None \
                and pure_test(updated_node.test):
            self.changes["emptied_ifs_removed"] += 1
            self._removed_statements += 1
            return cst.RemoveFromParent()
        return updated_node

    # -- defaults pointing to removed keys (reported, never changed)
    def visit_Param(self, node: cst.Param) -> None:
        key = string_value(node.default)
        if key is None:
            return
        for reg in self._regs:
            if key in self._keys[reg.name]:
                self.report(node, f"default '{key}' of parameter {node.name.value} is a removed key of "
                                  f"registry {reg.name} (a rule decision: keep the key or change the default)")
                return

    # -- uses of removed registered functions
    def _report_removed_defs(self) -> None:
        removed = {node for node, _ in self._removed_defs}
        uses: list[tuple[tuple[int, int], cst.CSTNode, str]] = []
        for node, why in self._removed_defs:
            scope = self.get_metadata(ScopeProvider, node, None)
            if scope is None:
                continue
            for assignment in scope.assignments[node.name.value]:
                if getattr(assignment, "node", None) is not node:
                    continue
                for access in assignment.references:
                    if self._inside(access.node, removed):
                        continue
                    start = self.get_metadata(PositionProvider, access.node).start
                    uses.append(((start.line, start.column), access.node,
                                 f"{node.name.value} ({why}) was removed but is still used"))
        for _, use, message in sorted(uses, key=lambda u: u[0]):
            self.report(use, message)

    def _inside(self, node: cst.CSTNode, containers: Iterable[cst.CSTNode]) -> bool:
        containers = set(containers)
        while node is not None:
            if node in containers:
                return True
            node = self.get_metadata(ParentNodeProvider, node, None)
        return False
