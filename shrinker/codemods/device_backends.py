"""Remove a fused op's backend method that only other platforms' devices may run.

SGLang shape (sglang.kernels, from 0.5.17): a `BaseFusedOp` subclass says per backend which devices may
run it, and a table in fused_op.py ([platform].backend_methods) names the method each backend runs:

    _HIP = frozenset({CapabilityRequirement.HIP})

    class QuickGELUOp(BaseFusedOp):
        capabilities = {KernelBackend.AOT: _HIP}      # [platform].capability_keywords
        def forward_native(self, input, out=None): ...
        def forward_aot(self, input, out=None):        # BACKEND_METHODS[KernelBackend.AOT]
            from sgl_kernel import gelu_quick           # defined by sgl_kernel's ROCm build only

`backend_eligible` never picks AOT on CUDA, so `forward_aot` is dead there: it goes, and the op no longer
registers an AOT record that names only HIP (exactly the records fold_platform drops). Forcing the
backend (SGLANG_FORCE_FUSED_OP_BACKEND=aot) failed on CUDA upstream too (the import above); it now fails
with the base class's "no aot backend".

Kept, with a finding (the method may still run, or be run by a class we cannot see):
- the class is named in another file (`single_file_words`: a subclass may override `capabilities`) or is
  a base of a class of this file;
- the method is referenced in its class other than by its definition (`forward_x = forward_aot`).
An entry naming CUDA, or no device at all (`CUDA_ONLY`, a loop variable), says nothing and stays.
"""

from __future__ import annotations

import re
from typing import Optional

import libcst as cst
import libcst.matchers as m

from shrinker.codemods.base import ShrinkCodemod, pass_block
from shrinker.codemods.inputs import CodemodInputs
from shrinker.rules.predicates import other_devices_only


def _module_constants(tree: cst.Module) -> dict[str, cst.BaseExpression]:
    """Top-level names bound by a plain `NAME = value` and bound nowhere else in the module (no other
    assignment, import, definition, loop or `with` target, walrus or `global` statement): their values."""
    bound: dict[str, int] = {}
    for node in m.findall(tree, m.Assign() | m.AnnAssign() | m.AugAssign() | m.For() | m.WithItem()
                          | m.NamedExpr() | m.ImportAlias() | m.FunctionDef() | m.ClassDef() | m.Global()):
        targets = ([t.target for t in node.targets] if isinstance(node, cst.Assign)
                   else [node.asname] if isinstance(node, (cst.WithItem, cst.ImportAlias))
                   else [node.name] if isinstance(node, (cst.FunctionDef, cst.ClassDef))
                   else [n.name for n in node.names] if isinstance(node, cst.Global) else [node.target])
        if isinstance(node, cst.ImportAlias) and node.asname is None:
            targets = [node.name]
        for target in targets:
            for name in m.findall(target, m.Name()) if target is not None else ():
                bound[name.value] = bound.get(name.value, 0) + 1
    values = {}
    for stmt in tree.body:
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                if (isinstance(small, cst.Assign) and len(small.targets) == 1
                        and isinstance(small.targets[0].target, cst.Name)):
                    values[small.targets[0].target.value] = small.value
    return {name: value for name, value in values.items() if bound.get(name) == 1}


def _class_capabilities(body: cst.IndentedBlock, keywords: list[str]) -> Optional[cst.Dict]:
    for stmt in body.body:
        if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1:
            small = stmt.body[0]
            target = (small.targets[0].target if isinstance(small, cst.Assign) and len(small.targets) == 1
                      else small.target if isinstance(small, cst.AnnAssign) else None)
            if isinstance(target, cst.Name) and target.value in keywords and isinstance(small.value, cst.Dict):
                return small.value
    return None


class RemoveOtherDeviceBackends(ShrinkCodemod):
    """Remove `forward_<backend>` methods whose backend's capabilities name only other platforms' devices."""

    NAME = "remove_other_device_backends"
    DESCRIPTION = "remove fused-op backend methods only other platforms' devices run"

    @classmethod
    def wants(cls, source: str, inputs: CodemodInputs) -> bool:
        keywords = inputs.rules.platform.capability_keywords
        return bool(inputs.backend_methods and keywords
                    and re.search(rf"\b(?:{'|'.join(map(re.escape, keywords))})\s*(?::[^=\n]*)?=\s*\{{", source))

    def transform_module_impl(self, tree: cst.Module) -> cst.Module:
        self._constants = _module_constants(tree)
        self._bases = {name.value for cls in m.findall(tree, m.ClassDef()) for arg in cls.bases
                       for name in m.findall(arg.value, m.Name())}
        return tree.visit(self)

    def _dead_methods(self, node: cst.ClassDef) -> dict[str, list[str]]:
        """Methods of `node` that only other platforms' devices run -> those devices."""
        capabilities = _class_capabilities(node.body, self.inputs.rules.platform.capability_keywords)
        if capabilities is None:
            return {}
        dead: dict[str, list[str]] = {}
        for element in capabilities.elements:
            if not (isinstance(element, cst.DictElement) and isinstance(element.key, cst.Attribute)):
                continue
            method = (self.inputs.backend_methods or {}).get(element.key.attr.value)
            value = element.value
            if isinstance(value, cst.Name) and value.value in self._constants:
                value = self._constants[value.value]
            devices = other_devices_only(self.module.code_for_node(value), self.inputs.table.strings)
            if method and devices:
                dead[method] = devices
        return dead

    def leave_ClassDef(self, original_node: cst.ClassDef, updated_node: cst.ClassDef) -> cst.ClassDef:
        if not isinstance(updated_node.body, cst.IndentedBlock):
            return updated_node
        dead = self._dead_methods(original_node)
        defined = {s.name.value: s for s in updated_node.body.body if isinstance(s, cst.FunctionDef)}
        dead = {name: devices for name, devices in dead.items() if name in defined}
        if not dead:
            return updated_node
        name = original_node.name.value
        words = self.inputs.single_file_words
        if words is None or name not in words or name in self._bases:
            self.report(original_node, f"`{name}` may be subclassed (named elsewhere): its backend methods "
                                       f"{', '.join(sorted(dead))} for {', '.join(sorted({d for v in dead.values() for d in v}))} only are kept")
            return updated_node
        body = []
        for stmt in updated_node.body.body:
            method = stmt.name.value if isinstance(stmt, cst.FunctionDef) else None
            if method in dead and not self._referenced(updated_node, method, stmt):
                self.count("backend_methods_removed")
                continue
            if method in dead:
                self.report(original_node, f"`{name}.{method}` is referenced in its class: kept")
            body.append(stmt)
        if len(body) == len(updated_node.body.body):
            return updated_node
        block = updated_node.body.with_changes(body=body) if body else pass_block(updated_node.body.with_changes(body=[]))
        return updated_node.with_changes(body=block)

    @staticmethod
    def _referenced(cls: cst.ClassDef, method: str, definition: cst.FunctionDef) -> bool:
        """`method` is named in the class other than as its own definition's name (`self.forward_aot`,
        `forward_x = forward_aot`)."""
        return any(n is not definition.name for n in m.findall(cls, m.Name(method)))
