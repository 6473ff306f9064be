"""Drop the architectures the plan removes from the literals that list architectures.

The removed architectures are the removed keys of the rules' model-scan registries (`inputs.table.
architectures`). Shapes (0.5.23's arg_groups/overrides.py, arg_groups/model_overrides/deepseek_v2.py):
  - inline, the right side of `in` / `not in`: `model_arch in ("HYV4ForCausalLM", "DeepseekV3ForCausalLM")`
    keeps `("DeepseekV3ForCausalLM",)`. A literal every element of which goes is left to fold_platform,
    which folds the whole test (rules/predicates.architecture_compare);
  - named: a module-level collection bound once, `_ARCHS = frozenset({"KimiLinearForCausalLM", ...})` (a
    list, tuple or set literal, or frozenset/set/tuple/list of one), that no other kept module imports and
    that its module reads only by key: the right side of `in` / `not in`, an operand of `&`
    (`architectures & _RSV_ARCHITECTURES`, 0.5.23's boundary_reduction). One left with nothing becomes the
    empty form of its kind (`frozenset()`, `[]`, `()`, `set()`). So does a dict keyed by architecture that is
    also used by `.get(...)` or subscripted by a variable key (moe_model_registry's
    `_DEEPEP_V2_MODELS.get(architectures[0])`, and `_DEEPEP_V2_MODELS[architecture] = ...` in its register
    function), when every entry that goes holds a value that runs no code (names, literals, calls the rules
    call pure); `{}` when none is left. A literal key (`del C["X"]`) keeps the collection whole.
  - the architectures a registration decorator names (`decorator` of a `package_exports` registry:
    `@_register_for("DeepseekV3ForCausalLM", "HYV4ForCausalLM")` keeps `"DeepseekV3ForCausalLM"`): registering
    for an architecture nobody can serve registers nothing that runs; one naming only removed ones stays
    (its module goes with the registry's removed keys).
Why this is exact: `x in C` (`C & x`, `C.get(x)`, `C[x]`) changes only when `x` is a removed architecture,
and the pruned tree serves none (its model registry lacks them): the premise architecture_compare folds on. Anything else a collection holds
(kept architectures, other strings, names) stays; a collection read any other way (iterated, passed on,
subscripted, imported) is left whole.
"""

from __future__ import annotations

import re
from typing import Optional, Union

import libcst as cst

from shrinker.codemods.base import ShrinkCodemod
from shrinker.codemods.elements import drop_from_literal
from shrinker.codemods.fold_platform import Folder
from shrinker.codemods.registries import string_value
from shrinker.codemods.removed_imports import module_and_package
from shrinker.rules.predicates import quotes_one_of, vocabulary_patterns

_LITERALS = (cst.List, cst.Tuple, cst.Set)
_WRAPPERS = ("frozenset", "set", "tuple", "list")
Collection = Union[cst.List, cst.Tuple, cst.Set, cst.Call]


def _literal(value: cst.BaseExpression) -> Optional[cst.BaseExpression]:
    """The list/tuple/set literal a collection value holds: itself, or the one argument of frozenset(...)."""
    if isinstance(value, _LITERALS):
        return value
    if (isinstance(value, cst.Call) and isinstance(value.func, cst.Name) and value.func.value in _WRAPPERS
            and len(value.args) == 1 and not value.args[0].keyword and not value.args[0].star
            and isinstance(value.args[0].value, _LITERALS)):
        return value.args[0].value
    return None


def _empty(value: cst.BaseExpression) -> cst.BaseExpression:
    """The empty collection of the same kind: `frozenset()`, `[]`, `()`, `set()`."""
    if isinstance(value, cst.Call):
        return value.with_changes(args=[], whitespace_before_args=cst.SimpleWhitespace(""))
    if isinstance(value, cst.List):
        return cst.List([])
    if isinstance(value, cst.Tuple):
        return cst.Tuple([])
    return cst.Call(cst.Name("set"))


class _Reads(cst.CSTVisitor):
    """Per name: how often it occurs as a Name node, and how often it is used by key: the right side of
    `in` / `not in`, an operand of `&`, the object of a `.get(...)` call, subscripted by a key that is no
    string literal (read, written or deleted)."""

    def __init__(self) -> None:
        self.names: dict[str, int] = {}
        self.by_key: dict[str, int] = {}

    def _read(self, node: cst.BaseExpression) -> None:
        if isinstance(node, cst.Name):
            self.by_key[node.value] = self.by_key.get(node.value, 0) + 1

    def visit_Name(self, node: cst.Name) -> None:
        self.names[node.value] = self.names.get(node.value, 0) + 1

    def visit_ComparisonTarget(self, node: cst.ComparisonTarget) -> None:
        if isinstance(node.operator, (cst.In, cst.NotIn)):
            self._read(node.comparator)

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        if isinstance(node.operator, cst.BitAnd):
            self._read(node.left)
            self._read(node.right)

    def visit_Call(self, node: cst.Call) -> None:
        if isinstance(node.func, cst.Attribute) and node.func.attr.value == "get":
            self._read(node.func.value)

    def visit_Subscript(self, node: cst.Subscript) -> None:
        # `C[arch]`, read or written: the key is whatever the code holds; a literal key (`del C["X"]`) is not
        if len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Index) and string_value(
                node.slice[0].slice.value) is None:
            self._read(node.value)


class PruneArchitectureLiterals(ShrinkCodemod):
    """Remove removed architectures from membership-test literals and from collections only tested so."""

    NAME = "prune_architecture_literals"
    DESCRIPTION = "drop removed architectures from the literals `in` tests the served architecture against"

    @classmethod
    def wants(cls, source: str, inputs) -> bool:
        return quotes_one_of(source, inputs.table.architectures)

    def transform_module_impl(self, tree: cst.Module) -> cst.Module:
        self._removed = self.inputs.table.architectures
        self._registering = {r.decorator for r in self.inputs.rules.registries
                             if r.kind == "package_exports" and r.decorator}
        reads = _Reads()
        tree.visit(reads)
        module, _ = module_and_package(self.context)
        # what kept modules take from this one (None: not known); a module no kept module imports takes nothing
        known = self.inputs.removed.imported
        imported = None if known is None else known.get(module, frozenset())
        self._named: set[str] = set()
        for stmt in tree.body:
            name = self._collection_name(stmt)
            # bound once here (one Name node is the target), every other occurrence a read by key, nobody
            # imports it (or, where the subclass says so, every importer reads it by key too)
            if (name is not None and imported is not None and "*" not in imported
                    and (name not in imported or self._imported_by_key(module, name))
                    and reads.names.get(name, 0) == 1 + reads.by_key.get(name, 0)):
                self._named.add(name)
        self._folder = Folder(self.inputs)
        return tree.visit(self)

    @staticmethod
    def _collection_name(stmt: cst.CSTNode) -> Optional[str]:
        if not (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1):
            return None
        small = stmt.body[0]
        if isinstance(small, cst.Assign) and len(small.targets) == 1:
            target, value = small.targets[0].target, small.value
        elif isinstance(small, cst.AnnAssign) and small.value is not None:
            target, value = small.target, small.value
        else:
            return None
        # a dunder (`__all__`) is read by the language itself (`from m import *`), never by key
        if (isinstance(target, cst.Name) and not (target.value.startswith("__") and target.value.endswith("__"))
                and (_literal(value) is not None or isinstance(value, cst.Dict))):
            return target.value
        return None

    def _removes(self, text: Optional[str]) -> bool:
        return text in self._removed

    def _imported_by_key(self, module: str, name: str) -> bool:
        return False  # an architecture list another module imports may be compared with anything there

    def _removed_element(self, element: cst.CSTNode) -> bool:
        return self._removes(string_value(getattr(element, "value", None)))

    def _removed_entry(self, element: cst.CSTNode) -> bool:
        return isinstance(element, cst.DictElement) and self._removes(string_value(element.key))

    def _pruned_dict(self, value: cst.Dict) -> Optional[cst.BaseExpression]:
        gone = [e for e in value.elements if self._removed_entry(e)]
        if not gone or not all(self._folder.pure(e.value) for e in gone):
            return None
        new = cst.Dict([]) if len(gone) == len(value.elements) else drop_from_literal(value, self._removed_entry)
        if new is not None:
            self.count("architectures_removed", len(gone))
        return new

    def _pruned(self, value: cst.BaseExpression, allow_empty: bool) -> Optional[cst.BaseExpression]:
        if isinstance(value, cst.Dict):
            return self._pruned_dict(value) if allow_empty else None
        literal = _literal(value)
        if literal is None:
            return None
        gone = sum(self._removed_element(e) for e in literal.elements)
        if not gone:
            return None
        if gone == len(literal.elements):
            if not allow_empty:
                return None
            self.count("architectures_removed", gone)
            return _empty(value)
        new = drop_from_literal(literal, self._removed_element)
        if new is None:
            return None
        self.count("architectures_removed", gone)
        if isinstance(value, cst.Call):
            return value.with_changes(args=[value.args[0].with_changes(value=new)])
        return new

    def leave_Decorator(self, original_node: cst.Decorator, updated_node: cst.Decorator):
        call = updated_node.decorator
        if not (isinstance(call, cst.Call) and isinstance(call.func, (cst.Name, cst.Attribute))):
            return updated_node
        name = call.func.value if isinstance(call.func, cst.Name) else call.func.attr.value
        if name not in self._registering:
            return updated_node
        gone = [a for a in call.args if not a.keyword and not a.star and string_value(a.value) in self._removed]
        if not gone or len(gone) == sum(1 for a in call.args if string_value(a.value) is not None):
            return updated_node
        args = [a for a in call.args if a not in gone]
        args[-1] = args[-1].with_changes(comma=call.args[-1].comma)  # the original closing comma (or none)
        self.count("architectures_removed", len(gone))
        return updated_node.with_changes(decorator=call.with_changes(args=args))

    def leave_ComparisonTarget(self, original_node: cst.ComparisonTarget, updated_node: cst.ComparisonTarget):
        if not isinstance(updated_node.operator, (cst.In, cst.NotIn)) or not isinstance(
                updated_node.comparator, _LITERALS):
            return updated_node
        new = self._pruned(updated_node.comparator, allow_empty=False)
        return updated_node if new is None else updated_node.with_changes(comparator=new)

    def leave_Assign(self, original_node: cst.Assign, updated_node: cst.Assign):
        target = updated_node.targets[0].target if len(updated_node.targets) == 1 else None
        if not (isinstance(target, cst.Name) and target.value in self._named):
            return updated_node
        new = self._pruned(updated_node.value, allow_empty=True)
        return updated_node if new is None else updated_node.with_changes(value=new)

    def leave_AnnAssign(self, original_node: cst.AnnAssign, updated_node: cst.AnnAssign):
        if not (isinstance(updated_node.target, cst.Name) and updated_node.target.value in self._named):
            return updated_node
        new = self._pruned(updated_node.value, allow_empty=True)
        return updated_node if new is None else updated_node.with_changes(value=new)


class PrunePlatformCollections(PruneArchitectureLiterals):
    """Drop the platform vocabulary's strings from the module collections only tested by key.

    fold_platform already drops such a string from a literal right of `in` (`device.type in {"cuda", "xpu"}`
    keeps `{"cuda"}`: no value the kept tree tests on CUDA is another platform's name). A collection bound once
    at module level and read only by key, which no other kept module imports, is that literal under a name
    (0.5.23's `MHA_ONE_SHOT_SUPPORTED_BACKENDS = ["fa3", "flashinfer", "flashmla", "aiter"]`, overrides'
    `_A2A_EP_SPANNING_BACKENDS` with `"mori"` and `"ascend_fuseep"`), so the same strings leave it, by the same
    reads-by-key test prune_architecture_literals applies to architectures. So does a collection other modules
    import when each of them reads it only by membership too (graph/key_reads: 0.5.23's
    `FORWARD_ABSORB_CORE_ATTENTION_BACKENDS`, imported by forward_mla). Literals inline in a test are
    fold_platform's, decorators' arguments registrations' (left alone here).
    """

    NAME = "prune_platform_collections"
    DESCRIPTION = "drop other platforms' names from module collections only tested by key"

    @classmethod
    def wants(cls, source: str, inputs) -> bool:
        vocabulary = inputs.rules.platform.strings
        quoted = vocabulary_patterns(vocabulary.strings, vocabulary.families)[:1]
        return bool(quoted) and re.search(quoted[0], source, re.IGNORECASE) is not None

    def _removes(self, text: Optional[str]) -> bool:
        return text is not None and text in self.inputs.table.strings

    def _imported_by_key(self, module: str, name: str) -> bool:
        # forward_mla's `backend in FORWARD_ABSORB_CORE_ATTENTION_BACKENDS` (graph/key_reads)
        return name in (self.inputs.key_read_imports or {}).get(module, frozenset())

    def leave_Decorator(self, original_node: cst.Decorator, updated_node: cst.Decorator):
        return updated_node

    def leave_ComparisonTarget(self, original_node: cst.ComparisonTarget, updated_node: cst.ComparisonTarget):
        return updated_node
