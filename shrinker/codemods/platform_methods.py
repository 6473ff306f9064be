"""Remove the per-platform methods rules.platform.methods names, and their dispatch entries.

SGLang shapes handled (v0.5.16):
- `MultiPlatformOp` subclasses (layers/activation.py, layernorm.py, rotary_embedding, moe/topk.py,
  quantization/unquant.py ...) defining `forward_npu`, `forward_hip`, `forward_xpu`, `forward_cpu`,
  `forward_musa`, `forward_hpu` next to `forward_cuda` / `forward_native` (those stay), decorated or
  not; a class body that empties gets `pass`;
- class-level aliases naming such a method (`forward_hip = forward_cuda`) go with it;
- literal dispatch tables: a dict entry whose value is `<obj>.forward_npu` (`{"npu": self.forward_npu}`)
  goes (it would raise AttributeError once the method is gone);
- call sites on a line of their own, `self._handle_npu_backends()` (ServerArgs.__post_init__), go with
  the method (a block they empty gets `pass`);
- the `if _is_npu: return self.forward_npu` branches of `dispatch_forward` are removed earlier by
  remove_dead_branches (their tests fold).

Kept (never an AttributeError/NameError behind; as upstream had it, so no finding):
- a method still referenced in this file outside the removed code (`forward_native = forward_cpu`
  in unquant.py, `return self.forward_cpu(...)` under a test that does not fold);
- a reference to a platform method this file does not define (its class lives elsewhere);
- string references (`getattr(self, "forward_npu")`, `BACKEND_METHODS = {...: "forward_npu"}`):
  a string names no attribute until looked up, so it stays and is reported, unless no class of the tree
  defines that name (0.5.19's `declare_resolution(server_args, "_handle_cpu_backends", ...)` labels a
  resolution with the old ServerArgs method's name); `getattr(self, f"forward_{key}")` stays too. A
  table of method names keeps every entry: fused_op.BaseFusedOp indexes it by every KernelBackend
  member (dropping `KernelBackend.AITER: "forward_aiter"` raised KeyError at import, caught on the GPU).
"""

from __future__ import annotations

import re
from typing import Optional

import libcst as cst

from shrinker.codemods.base import ShrinkCodemod, pass_block, remove_elements
from shrinker.codemods.inputs import CodemodInputs
from shrinker.rules.predicates import MethodNames


def _method_string(node: cst.BaseExpression) -> Optional[str]:
    if isinstance(node, cst.SimpleString) and isinstance(node.evaluated_value, str):
        return node.evaluated_value
    return None


def _self_call(stmt: cst.BaseStatement) -> Optional[str]:
    """`self.<name>(...)` alone on a line: the method name."""
    if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Expr):
        call = stmt.body[0].value
        if (isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute)
                and isinstance(call.func.value, cst.Name) and call.func.value.value == "self"):
            return call.func.attr.value
    return None


def _alias_target(stmt: cst.BaseStatement) -> Optional[str]:
    """`forward_hip = forward_cuda` in a class body: the name assigned."""
    if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1:
        small = stmt.body[0]
        if isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(small.targets[0].target, cst.Name):
            return small.targets[0].target.value
    return None


class _Collector(cst.CSTVisitor):
    """Where platform methods are defined and referenced in one module.

    A reference is recorded with its owner: the platform method whose body holds it (None for
    other code), so a kept method keeps what it references in turn.
    """

    def __init__(self, methods: MethodNames, module: cst.Module, prune: Optional[re.Pattern]) -> None:
        self.methods = methods
        self.module, self.prune = module, prune
        self.defined: set[str] = set()
        self.references: dict[Optional[str], dict[str, list[cst.CSTNode]]] = {}
        self.entries: dict[str, list[cst.CSTNode]] = {}  # dict entries `<obj>.forward_npu`
        self.strings: dict[str, list[cst.CSTNode]] = {}
        self._owners: list[str] = []
        self._not_references: set[int] = set()  # Names that bind or label, not read
        self._class_bodies: list[set[int]] = []  # ids of statements directly in a class body

    def _direct_in_class(self, node: cst.CSTNode) -> bool:
        return bool(self._class_bodies) and id(node) in self._class_bodies[-1]

    def on_visit(self, node: cst.CSTNode) -> bool:
        if not super().on_visit(node):
            return False
        if self.prune is not None and isinstance(node, (cst.SimpleStatementLine, cst.FunctionDef, cst.ClassDef)):
            return self.prune.search(self.module.code_for_node(node)) is not None
        return True

    def _owner(self) -> Optional[str]:
        return self._owners[-1] if self._owners else None

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        body = node.body.body if isinstance(node.body, cst.IndentedBlock) else ()
        ids = {id(s) for s in body}
        for stmt in body:
            if isinstance(stmt, cst.SimpleStatementLine):
                ids.update(id(s) for s in stmt.body)
        self._class_bodies.append(ids)

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        self._class_bodies.pop()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        is_method = node.name.value in self.methods and self._direct_in_class(node)
        if is_method:
            self.defined.add(node.name.value)
        self._owners.append(node.name.value if is_method else self._owner())
        self._not_references.add(id(node.name))
        self._class_bodies.append(set())

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self._class_bodies.pop()
        self._owners.pop()

    def visit_Assign(self, node: cst.Assign) -> Optional[bool]:
        target = node.targets[0].target if len(node.targets) == 1 else None
        if isinstance(target, cst.Name) and target.value in self.methods and self._direct_in_class(node):
            self.defined.add(target.value)
            self._owners.append(target.value)
            node.value.visit(self)  # `forward_hip = forward_cuda`: references owned by the alias
            self._owners.pop()
            return False
        return True

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> Optional[bool]:
        name = _self_call(node)
        if name is not None and name in self.methods:
            # `self._handle_npu_backends()` on a line of its own: a call site that goes with the method
            self.entries.setdefault(name, []).append(node)
            call = node.body[0].value
            for arg in call.args:
                arg.visit(self)
            return False
        return True

    def visit_DictElement(self, node: cst.DictElement) -> Optional[bool]:
        if isinstance(node.value, cst.Attribute) and node.value.attr.value in self.methods:
            self.entries.setdefault(node.value.attr.value, []).append(node)
            node.key.visit(self)
            node.value.value.visit(self)
            return False  # a dispatch entry: goes with the method, not a reference
        name = _method_string(node.value)
        if name is not None and name in self.methods and self._owner() is None:
            # `{KernelBackend.TORCH_NPU: "forward_npu"}`: a table of method NAMES stays whole — code may
            # index it by every enum member (fused_op.BaseFusedOp does); looking the name up then finds no
            # method, exactly as for an op that never defined one. Neither a reference nor a finding.
            node.key.visit(self)
            return False
        return True

    def _reference(self, name: str, node: cst.CSTNode) -> None:
        self.references.setdefault(self._owner(), {}).setdefault(name, []).append(node)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self._not_references.add(id(node.attr))
        if node.attr.value in self.methods:
            self._reference(node.attr.value, node)

    def visit_Param(self, node: cst.Param) -> None:
        self._not_references.add(id(node.name))

    def visit_Arg(self, node: cst.Arg) -> None:
        if node.keyword is not None:
            self._not_references.add(id(node.keyword))

    def visit_Name(self, node: cst.Name) -> None:
        if node.value in self.methods and id(node) not in self._not_references:
            self._reference(node.value, node)

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        value = node.evaluated_value
        if isinstance(value, str) and value in self.methods and self._owner() is None:
            self.strings.setdefault(value, []).append(node)

    def kept(self) -> dict[str, cst.CSTNode]:
        """Platform names referenced from kept code (transitively), with one referencing node."""
        kept: dict[str, cst.CSTNode] = {}
        todo: list[Optional[str]] = [None]
        seen: set[Optional[str]] = set()
        while todo:
            owner = todo.pop()
            if owner in seen:
                continue
            seen.add(owner)
            for name, nodes in self.references.get(owner, {}).items():
                kept.setdefault(name, nodes[0])
                todo.append(name)
        return kept


class RemovePlatformMethods(ShrinkCodemod):
    """Remove forward_npu/forward_hip/... methods and the dict entries that dispatch to them."""

    NAME = "remove_platform_methods"
    DESCRIPTION = "remove per-platform methods (forward_npu, forward_hip, ...) and their dispatch entries"

    def __init__(self, context, inputs: CodemodInputs) -> None:
        self.methods = MethodNames(inputs.rules.platform.methods)
        super().__init__(context, inputs)
        self.removable: frozenset[str] = frozenset()

    @classmethod
    def wants(cls, source: str, inputs: CodemodInputs) -> bool:
        return MethodNames(inputs.rules.platform.methods).regex().search(source) is not None

    def prune_pattern(self) -> re.Pattern:
        return self.methods.regex()

    def transform_module_impl(self, tree: cst.Module) -> cst.Module:
        collector = _Collector(self.methods, tree, self._prune)
        tree.visit(collector)
        kept = collector.kept()
        self.removable = frozenset(collector.defined - set(kept))
        for name, node in sorted(kept.items()):
            if name in collector.defined:
                continue  # kept as upstream had it (`forward_native = forward_cpu`): it still works
            else:
                self.report(node, f"reference to platform method `{name}`, which this module does not define")
        for name, nodes in sorted(collector.entries.items()):
            if name not in collector.defined:
                self.report(nodes[0], f"dispatch entry names platform method `{name}` defined elsewhere: kept")
        defined = self.inputs.defined_methods
        for name, nodes in sorted(collector.strings.items()):
            if defined is not None and name not in defined:
                continue  # 0.5.19's declare_resolution(args, "_handle_cpu_backends", ...): a label
            self.report(nodes[0], f"string names platform method `{name}`: kept")
        if not self.removable:
            return tree
        return tree.visit(self)

    # -- methods and aliases in class bodies ---------------------------------------------------
    def leave_ClassDef(self, original_node: cst.ClassDef, updated_node: cst.ClassDef) -> cst.ClassDef:
        if not isinstance(updated_node.body, cst.IndentedBlock):
            return updated_node
        body = []
        for stmt in updated_node.body.body:
            name = stmt.name.value if isinstance(stmt, cst.FunctionDef) else _alias_target(stmt)
            if name in self.removable:
                self.count("methods_removed" if isinstance(stmt, cst.FunctionDef) else "aliases_removed")
                continue
            body.append(stmt)
        if len(body) == len(updated_node.body.body):
            return updated_node
        block = updated_node.body.with_changes(body=body)
        if not body:
            self.count("class_bodies_emptied")
            block = pass_block(block)
        return updated_node.with_changes(body=block)

    # -- call sites: `self._handle_npu_backends()` on its own line --------------------------------
    def leave_SimpleStatementLine(self, original_node: cst.SimpleStatementLine,
                                  updated_node: cst.SimpleStatementLine):
        if _self_call(original_node) in self.removable:
            self.count("call_sites_removed")
            return cst.RemoveFromParent()
        return updated_node

    def leave_IndentedBlock(self, original_node: cst.IndentedBlock, updated_node: cst.IndentedBlock):
        if original_node.body and not updated_node.body:
            return pass_block(updated_node)
        return updated_node

    # -- dispatch tables -----------------------------------------------------------------------
    def leave_Dict(self, original_node: cst.Dict, updated_node: cst.Dict) -> cst.Dict:
        drop = set()
        for i, element in enumerate(updated_node.elements):
            value = getattr(element, "value", None)
            if isinstance(value, cst.Attribute) and value.attr.value in self.removable:
                drop.add(i)
        if not drop:
            return updated_node
        self.count("dispatch_entries_removed", len(drop))
        return updated_node.with_changes(elements=remove_elements(list(updated_node.elements), drop))
