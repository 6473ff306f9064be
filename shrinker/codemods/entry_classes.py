"""Drop removed architectures from the `EntryClass` of a model module the plan keeps for another reason.

A `module_scan` registry (rules: `models`, whose scanner imports every module of `sglang.srt.models` and
registers what its `EntryClass` names) serves each class listed there. The plan removes a model module whose
EntryClass names no kept architecture, but one a rule or an import keeps (0.5.23's `llama`, kept for
`LlamaMLP`; `dflash`, for `candidate_topk`) would still register
`LlamaForCausalLM` or `Phi3ForCausalLM`, and the pruned server would load them. So:

- `EntryClass = [LlamaForCausalLM, Phi3ForCausalLM]` loses the classes the plan removed from the registry;
- a list that empties, or `EntryClass = DbrxForCausalLM` for a removed one, goes as a statement (the scanner
  reads it with `hasattr`), unless the module's `__all__` names it: then it becomes `EntryClass = []`.
The classes themselves stay for the dead-symbol batch, which removes them when nothing else uses them.
"""

from __future__ import annotations

import re
from typing import Union

import libcst as cst

from shrinker.codemods.base import ShrinkCodemod
from shrinker.codemods.elements import drop_from_literal
from shrinker.codemods.inputs import CodemodInputs
from shrinker.codemods.registries import removed_keys


def _scanned_attribute(module: str, inputs: CodemodInputs) -> tuple[str, frozenset[str]] | None:
    """(the attribute the scanner reads, the classes removed from it) when `module` is a scanned one."""
    for reg in inputs.rules.registries:
        if reg.kind == "module_scan" and module.startswith(reg.package + ".") \
                and "." not in module[len(reg.package) + 1:]:
            return reg.attribute, removed_keys(inputs, reg)
    return None


class PruneEntryClasses(ShrinkCodemod):
    """Remove the removed architectures from a kept model module's EntryClass."""

    NAME = "prune_entry_classes"
    DESCRIPTION = "drop removed architectures from the EntryClass of kept model modules"

    def __init__(self, context, inputs: CodemodInputs) -> None:
        super().__init__(context, inputs)
        scanned = _scanned_attribute(self.context.full_module_name or "", inputs)
        self._attribute, self._removed = scanned if scanned is not None else ("", frozenset())
        self._in_all = False

    @classmethod
    def wants(cls, source: str, inputs: CodemodInputs) -> bool:
        return any(r.kind == "module_scan" and r.attribute in source for r in inputs.rules.registries)

    def transform_module(self, tree: cst.Module) -> cst.Module:
        if not self._attribute or not self._removed:
            return tree
        code = tree.code  # `__all__ = [..., "EntryClass"]`: a star import takes it, so it stays bound
        self._in_all = "__all__" in code and re.search(rf"['\"]{re.escape(self._attribute)}['\"]", code) is not None
        return super().transform_module(tree)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False  # only the module's top level registers

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return False

    def leave_Assign(self, original_node: cst.Assign, updated_node: cst.Assign
                     ) -> Union[cst.Assign, cst.RemovalSentinel]:
        if not (len(updated_node.targets) == 1 and isinstance(updated_node.targets[0].target, cst.Name)
                and updated_node.targets[0].target.value == self._attribute):
            return updated_node
        value = updated_node.value
        gone = lambda e: isinstance(e, cst.Name) and e.value in self._removed  # noqa: E731
        if isinstance(value, (cst.List, cst.Tuple)):
            dropped = sum(gone(e.value) for e in value.elements)
            if not dropped:
                return updated_node
            if dropped < len(value.elements):
                self.count("architectures_dropped", dropped)
                return updated_node.with_changes(value=drop_from_literal(value, lambda e: gone(e.value)))
            self.count("architectures_dropped", dropped)
        elif gone(value):
            self.count("architectures_dropped")
        else:
            return updated_node
        if self._in_all:
            return updated_node.with_changes(value=cst.List([]))
        self.count("entry_classes_removed")
        return cst.RemoveFromParent()
