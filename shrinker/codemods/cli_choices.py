"""Prune CLI choices (`[[registries]] kind = "choices"`) of the keys the plan removes.

A choices registry names its `module` and a `variable`, and either `follows` another registry
(its removed keys go: `--attention-backend` choices follow `attention_backends`) or lists `keep`
(every other string goes). SGLang shapes handled (srt/server_args.py):
  - module-level lists/tuples/sets: `ATTENTION_BACKEND_CHOICES = ["triton", ..., "aiter", "ascend"]`
    (a comment heading a section stays with the section's first kept entry), and literal growth of
    them: `SAMPLING_BACKEND_CHOICES.add("ascend")`, `X.extend(["aiter"])`, `X.append("aiter")`;
  - inline choices of an option, named by the option: a dataclass field
    `mm_attention_backend: A[Optional[str], Arg(choices=["sdpa", "ascend_attn"])] = None`, or
    `parser.add_argument("--mm-attention-backend", choices=[...])`.
  - lists whose elements are calls that pick a key (`element_key = "value"`):
    `TOOL_CALL_PARSER_RULES = (DetectionRule(name="qwen", value="qwen", predicate=_is_qwen3), ...)`
    (parser/template_detection.py); an element that picks a removed key goes.
Defaults are rule decisions and are reported, never changed: an option whose choices come from a
pruned registry and whose default (`= "aiter"`, `default="aiter"`) or later assignment
(`self.attention_backend = "aiter"`) is a removed key becomes a finding. A list that would empty
is left alone and reported.
"""

from __future__ import annotations

from fnmatch import fnmatchcase
from typing import Optional

import libcst as cst
from libcst.codemod import CodemodContext
from libcst.helpers import get_full_name_for_node

from shrinker.codemods.base import ShrinkCodemod
from shrinker.codemods.elements import drop_from_literal
from shrinker.codemods.inputs import CodemodInputs
from shrinker.codemods.registries import removed_keys, string_value
from shrinker.graph.reexports import defining_modules
from shrinker.rules.predicates import MethodNames
from shrinker.codemods.removed_imports import module_and_package
from shrinker.rules.schema import Registry

_LITERALS = (cst.List, cst.Tuple, cst.Set)


def _strings(value: cst.BaseExpression) -> list[str]:
    """The strings an expression may evaluate to: a literal, or the arms of `a if c else b`."""
    if isinstance(value, cst.IfExp):
        return _strings(value.body) + _strings(value.orelse)
    string = string_value(value)
    return [] if string is None else [string]


def _element_key(element: cst.CSTNode, reg: Registry) -> Optional[str]:
    """The key a literal's element stands for: the string itself, or with `element_key` the string of that
    keyword of a call element."""
    value = getattr(element, "value", None)
    if not reg.element_key:
        return string_value(value)
    if not isinstance(value, cst.Call):
        return None
    return next((string_value(a.value) for a in value.args
                 if a.keyword is not None and a.keyword.value == reg.element_key), None)


def _option_names(reg: Registry) -> set[str]:
    """`variable` as an option: field name and flag spelling (`mm_attention_backend`, `--mm-attention-backend`)."""
    name = reg.variable.lstrip("-").replace("-", "_")
    return {name, "--" + name.replace("_", "-")}


class PruneCliChoices(ShrinkCodemod):
    """Remove removed registry keys from CLI choices lists; report defaults that point to them."""

    NAME = "prune_cli_choices"
    DESCRIPTION = "remove removed registry keys from CLI choices; report defaults pointing to them"

    def __init__(self, context: CodemodContext, inputs: CodemodInputs):
        super().__init__(context, inputs)
        module, _ = module_and_package(context)
        # a registry's module, or the module it re-exports the variable from (0.5.23 moved server_args'
        # ATTENTION_BACKEND_CHOICES to arg_groups/choices and imports it back)
        # An option's registry (`hicache_storage_backend`) applies wherever the option is declared (0.5.23
        # moved ServerArgs' fields to arg_groups/fields/*).
        origins = inputs.removed.origins or {}
        self._regs = [r for r in inputs.rules.registries
                      if r.kind == "choices" and (r.names_option or module in defining_modules(origins, r.module, r.variable))]
        self._aliases: dict[str, Registry] = {}  # `SPECULATIVE_..._CHOICES = QUANTIZATION_CHOICES`
        self._options: list[dict] = []  # the option being visited: {"name", "regs"}
        self._option_regs: dict[str, list[Registry]] = {}  # option name -> registries its choices follow
        self._stores: list[tuple[str, str, cst.CSTNode]] = []  # self.<attr> = "<string>"
        self._functions: list[str] = []
        self._platform_methods = MethodNames(inputs.rules.platform.methods)

    @classmethod
    def wants(cls, source: str, inputs: CodemodInputs) -> bool:
        return "choices" in source or any(
            r.kind == "choices" and r.variable.lstrip("-").replace("-", "_").replace("*", "") in
            source.replace("-", "_") for r in inputs.rules.registries)

    def transform_module(self, tree: cst.Module) -> cst.Module:
        if not self._regs and "choices" not in tree.code:
            return tree
        return super().transform_module(tree)

    def transform_module_impl(self, tree: cst.Module) -> cst.Module:
        tree = tree.visit(self)
        for attr, value, node in self._stores:  # assignments seen before their option was
            for reg in self._option_regs.get(attr, ()):
                if value in self._removed(reg):
                    self.report(node, f"{attr} is set to '{value}', a key removed from {reg.follows or reg.name} "
                                      f"(a rule decision: keep the key or change this)")
        return tree

    # -- which keys go
    def _removed(self, reg: Registry, present: Optional[list[str]] = None) -> frozenset[str]:
        keys = removed_keys(self.inputs, reg)
        if not reg.follows and reg.keep and not reg.keep_all_others and present is not None:
            keys = keys | (frozenset(present) - frozenset(reg.keep))
        return keys

    def _prune_literal(self, value: cst.BaseExpression, reg: Registry, where: cst.CSTNode) -> Optional[cst.BaseExpression]:
        if not isinstance(value, _LITERALS):
            return None
        present = [v for v in (_element_key(e, reg) for e in value.elements) if v is not None]
        gone = self._removed(reg, present)
        if not gone.intersection(present):
            return None
        new = drop_from_literal(value, lambda el: _element_key(el, reg) in gone)
        if new is None or not new.elements:  # type: ignore[attr-defined]
            self.report(where, f"every choice of {reg.variable} is a removed key of "
                               f"{reg.follows or reg.name}: left as is (a rule decision)")
            return None
        self.count("choices_removed", len(value.elements) - len(new.elements))  # type: ignore[attr-defined]
        return new

    def _variable_regs(self, target: cst.BaseExpression) -> list[Registry]:
        name = get_full_name_for_node(target) or ""
        regs = [r for r in self._regs if fnmatchcase(name, r.variable)]
        if name in self._aliases:
            regs.append(self._aliases[name])
        return regs

    # -- module-level choices variables and their literal growth
    def _assigned(self, target: cst.BaseExpression, value: Optional[cst.BaseExpression], node, original):
        if value is None:
            return node
        regs = self._variable_regs(target)
        if not regs and isinstance(value, (cst.Name, cst.Attribute)):
            source = self._variable_regs(value)
            if source and isinstance(target, cst.Name):
                self._aliases[target.value] = source[0]
            return node
        for reg in regs:
            new = self._prune_literal(value, reg, original)
            if new is not None:
                node, value = node.with_changes(value=new), new
                break
        name = get_full_name_for_node(target) or ""
        if not self._functions and any(fnmatchcase(name, g) for g in self.inputs.rules.platform.choices_variables):
            new = self._platform_pruned(value, name, original)
            if new is not None:
                return node.with_changes(value=new)
        return node

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._functions.append(node.name.value)

    def leave_FunctionDef(self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef):
        self._functions.pop()
        return updated_node

    def leave_Assign(self, original_node: cst.Assign, updated_node: cst.Assign):
        if len(updated_node.targets) != 1:
            return updated_node
        if any(f in self._platform_methods for f in self._functions):
            return updated_node  # inside `_handle_cpu_backends`: the platform batch removes it whole
        target = updated_node.targets[0].target
        if isinstance(target, cst.Attribute) and get_full_name_for_node(target.value) == "self":
            for string in _strings(updated_node.value):
                self._stores.append((target.attr.value, string, original_node))
        return self._assigned(target, updated_node.value, updated_node, original_node)

    def leave_Expr(self, original_node: cst.Expr, updated_node: cst.Expr):
        call = updated_node.value
        if not (isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) and len(call.args) == 1
                and call.func.attr.value in ("add", "append", "extend")):
            return updated_node
        regs = self._variable_regs(call.func.value)
        if not regs:
            return updated_node
        arg = call.args[0].value
        if call.func.attr.value in ("add", "append"):
            key = string_value(arg)
            if key is not None and any(key in self._removed(r, [key]) for r in regs):
                self.count("choices_removed")
                return cst.RemoveFromParent()
            return updated_node
        for reg in regs:
            new = self._prune_literal(arg, reg, original_node)
            if new is not None:
                return updated_node.with_changes(value=call.with_changes(args=[call.args[0].with_changes(value=new)]))
        return updated_node

    # -- options: dataclass fields and add_argument calls
    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        name = node.target.value if isinstance(node.target, cst.Name) else ""
        self._options.append({"name": name, "regs": [], "platform": set()})

    def leave_AnnAssign(self, original_node: cst.AnnAssign, updated_node: cst.AnnAssign):
        option = self._options.pop()
        self._check_default(option, updated_node.value, original_node)
        if option["platform"]:
            updated_node = updated_node.with_changes(
                annotation=updated_node.annotation.visit(_DropLiteralValues(option["platform"])))
        return self._assigned(updated_node.target, updated_node.value, updated_node, original_node)

    def visit_Call(self, node: cst.Call) -> None:
        if isinstance(node.func, cst.Attribute) and node.func.attr.value == "add_argument":
            flags = [string_value(a.value) for a in node.args if a.keyword is None]
            names = [f.lstrip("-").replace("-", "_") for f in flags if f]
            self._options.append({"name": names[0] if names else "", "regs": [], "platform": set(), "call": node})

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call):
        if self._options and self._options[-1].get("call") is original_node:
            option = self._options.pop()
            default = next((a.value for a in updated_node.args
                            if a.keyword is not None and a.keyword.value == "default"), None)
            self._check_default(option, default, original_node)
        return updated_node

    def leave_Arg(self, original_node: cst.Arg, updated_node: cst.Arg):
        if not self._options or updated_node.keyword is None or updated_node.keyword.value != "choices":
            return updated_node
        option = self._options[-1]
        if isinstance(updated_node.value, (cst.Name, cst.Attribute)):
            option["regs"].extend(self._variable_regs(updated_node.value))
            return updated_node
        for reg in self._regs:
            if option["name"] and option["name"] in _option_names(reg):
                option["regs"].append(reg)
                new = self._prune_literal(updated_node.value, reg, original_node)
                if new is not None:
                    updated_node = updated_node.with_changes(value=new)
                    break
        return self._drop_platform_choices(option, updated_node, original_node)

    def _drop_platform_choices(self, option: dict, arg: cst.Arg, where: cst.CSTNode) -> cst.Arg:
        """An option's inline choices without those another platform names, which go from the field's
        `Literal[...]` too (leave_AnnAssign)."""
        new = self._platform_pruned(arg.value, option["name"], where, option["platform"])
        return arg if new is None else arg.with_changes(value=new)

    def _platform_pruned(self, value: cst.BaseExpression, label: str, where: cst.CSTNode,
                         gone_into: Optional[set[str]] = None) -> Optional[cst.BaseExpression]:
        """A choices literal without the strings the platform vocabulary names (`"aiter"`, `"intel_xpu"`,
        `"ascend_fuseep"`): choosing one selects another platform's code, which cannot run on CUDA. None
        when nothing goes, or when every choice would (reported)."""
        if not isinstance(value, _LITERALS):
            return None
        strings = self.inputs.table.strings
        present = [v for v in (string_value(getattr(e, "value", None)) for e in value.elements) if v is not None]
        gone = {v for v in present if v in strings}
        if not gone:
            return None
        new = drop_from_literal(value, lambda el: string_value(getattr(el, "value", None)) in gone)
        if new is None or not new.elements:  # type: ignore[attr-defined]
            self.report(where, f"every choice of {label or 'an option'} names another platform: left as is")
            return None
        if gone_into is not None:
            gone_into.update(gone)
        self.count("platform_choices_removed", len(value.elements) - len(new.elements))  # type: ignore[attr-defined]
        return new

    def _check_default(self, option: dict, default: Optional[cst.BaseExpression], node: cst.CSTNode) -> None:
        if string_value(default) in option["platform"]:
            self.report(node, f"default '{string_value(default)}' of {option['name']} names another platform "
                              f"(a rule decision: change the default)")
        if not option["name"] or not option["regs"]:
            return
        self._option_regs.setdefault(option["name"], []).extend(option["regs"])
        value = string_value(default)
        if value is None:
            return
        for reg in option["regs"]:
            if value in self._removed(reg, [value]):
                self.report(node, f"default '{value}' of {option['name']} is a key removed from "
                                  f"{reg.follows or reg.name} (a rule decision: keep the key or change the default)")
                return


class _DropLiteralValues(cst.CSTTransformer):
    """`Literal["none", "mori", "deepep"]` without the given strings (a field's type beside its choices)."""

    def __init__(self, strings: set[str]) -> None:
        super().__init__()
        self.strings = strings

    def leave_Subscript(self, original_node: cst.Subscript, updated_node: cst.Subscript) -> cst.BaseExpression:
        if get_full_name_for_node(updated_node.value) not in ("Literal", "typing.Literal"):
            return updated_node
        kept = [e for e in updated_node.slice
                if not (isinstance(e.slice, cst.Index) and string_value(e.slice.value) in self.strings)]
        if not kept or len(kept) == len(updated_node.slice):
            return updated_node
        last = updated_node.slice[-1].comma
        kept[-1] = kept[-1].with_changes(comma=last)  # the original's trailing comma (or none) closes the list
        return updated_node.with_changes(slice=kept)
