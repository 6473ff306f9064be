"""Remove the classes that exist only for another platform from shared modules (rules.platform.classes).

SGLang keeps NPU/Ascend, Intel-AMX and MLX variants beside the CUDA ones in shared modules:

    class AWQMoEScheme(AWQMoESchemeBase): ...            # stays
    class AWQAscendMoEScheme(AWQMoEScheme):              # goes: every method imports from
        def _init_kernel(self, quant_config):            # hardware_backend.npu, removed
            from sglang.srt.hardware_backend.npu.quantization.awq_kernels import AWQAscendMoEKernel

This codemod removes, in one file:
- a module-level class whose name matches a glob of rules.platform.classes;
- a dict entry whose value names such a class (`CPU_QUANTIZATION_METHODS = {"awq": AWQCPUConfig}`);
- in `__all__`, the strings naming a class this file removed.
Importers of a removed class lose the import through remove_dead_imports: apply lists the class in
Removed.names for its module (names the module no longer provides); a use outside removed code is
reported there, never left as a NameError.
"""

from __future__ import annotations

import re
from typing import Optional

import libcst as cst

from shrinker.codemods.base import ShrinkCodemod
from shrinker.codemods.elements import drop_from_literal
from shrinker.codemods.inputs import CodemodInputs
from shrinker.rules.predicates import MethodNames, feature_class_globs


def class_names(inputs: CodemodInputs) -> MethodNames:
    return MethodNames(list(inputs.rules.platform.classes))


def feature_class_names(inputs: CodemodInputs) -> MethodNames:
    return MethodNames(feature_class_globs(inputs.rules))


_CLASS_DEF = re.compile(r"^class[ \t]+(\w+)", re.MULTILINE)


def platform_classes_defined(source: str, names: MethodNames) -> set[str]:
    """Names of module-level classes in `source` that `names` (rules.platform.classes) matches (text scan)."""
    return {n for n in _CLASS_DEF.findall(source) if n in names}


class RemovePlatformClasses(ShrinkCodemod):
    """Remove module-level classes that only serve another platform, and their table entries."""

    NAME = "remove_platform_classes"
    DESCRIPTION = "remove classes named by rules.platform.classes (AWQAscendMoEScheme) from shared modules"

    @staticmethod
    def names_of(inputs: CodemodInputs) -> MethodNames:
        return class_names(inputs)

    def __init__(self, context, inputs: CodemodInputs) -> None:
        self.names = self.names_of(inputs)  # before super(): prune_pattern() reads it
        self.removed: set[str] = set()
        super().__init__(context, inputs)

    @classmethod
    def wants(cls, source: str, inputs: CodemodInputs) -> bool:
        names = cls.names_of(inputs)
        return bool(names.exact or names.globs) and names.regex().search(source) is not None

    def prune_pattern(self) -> Optional[re.Pattern]:
        return self.names.regex()

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        body = []
        for stmt in updated_node.body:
            if isinstance(stmt, cst.ClassDef) and stmt.name.value in self.names:
                self.removed.add(stmt.name.value)
                self.count("classes_removed")
                continue
            body.append(stmt)
        if len(body) == len(updated_node.body):
            return updated_node
        body = [self._prune_all(stmt) for stmt in body]
        return updated_node.with_changes(body=body)

    def _prune_all(self, stmt: cst.BaseStatement) -> cst.BaseStatement:
        """`__all__ = [...]`: drop the strings naming a class removed here."""
        if not (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1
                and isinstance(stmt.body[0], cst.Assign) and len(stmt.body[0].targets) == 1):
            return stmt
        assign = stmt.body[0]
        target = assign.targets[0].target
        if not (isinstance(target, cst.Name) and target.value == "__all__"):
            return stmt

        def drop(el: cst.CSTNode) -> bool:
            value = getattr(el, "value", None)
            return isinstance(value, cst.SimpleString) and value.evaluated_value in self.removed

        new = drop_from_literal(assign.value, drop)
        if new is None or new is assign.value:
            return stmt
        return stmt.with_changes(body=[assign.with_changes(value=new)])

    def leave_Dict(self, original_node: cst.Dict, updated_node: cst.Dict) -> cst.BaseExpression:
        def drop(el: cst.CSTNode) -> bool:
            return (isinstance(el, cst.DictElement) and isinstance(el.value, cst.Name)
                    and el.value.value in self.names)

        if not any(drop(e) for e in updated_node.elements):
            return updated_node
        result = drop_from_literal(updated_node, drop)
        if result is None:
            return updated_node
        self.count("entries_removed")
        return result


class RemoveFeatureClasses(RemovePlatformClasses):
    """The same for a product decision: classes that serve a cut feature alone ([[features]].classes:
    0.5.21's VisionFlash4Attention, the vision tower's FA4 path, and its QKV_BACKEND_IMPL entry)."""

    NAME = "remove_feature_classes"
    DESCRIPTION = "remove classes named by [[features]].classes (VisionFlash4Attention) from kept modules"

    @staticmethod
    def names_of(inputs: CodemodInputs) -> MethodNames:
        return feature_class_names(inputs)
