"""Fold the platform predicates the rules name (rules.platform.predicates / strings) on NVIDIA CUDA.

SGLang shapes handled (v0.5.16):
- calls `is_hip()`, `is_npu()`, `_is_cuda` module flags, platform objects `current_platform.is_npu()`,
  attributes `self.use_aiter`, glob names (`*aiter*`, `*gfx95*`);
- derived flags: `_use_aiter = get_bool_env_var("SGLANG_USE_AITER") and _is_hip` -> `_use_aiter = False`,
  `_use_aiter = envs.SGLANG_USE_AITER.get() and _is_hip` -> `_use_aiter = False`;
- platform strings: `device == "npu"` -> False, `x.device.type in ("npu", "xpu")` -> False
  (`device.type == "cpu"` stays: 'cpu' is not a platform string in the rules);
- `not`, `and`, `or` with Python's short-circuit semantics; an operand is only dropped when
  evaluating it has no side effects (names, attributes, literals, predicate calls, env-flag calls
  named by rules.platform.env_flags, a few pure builtins such as `hasattr`/`isinstance`).
  `self.ready() and _is_hip` stays as is (and is reported by the dead-branch codemod).

Where it folds (the choice, so untouched code stays untouched):
- `if`/`elif` tests, ternary tests and comprehension `if`s are *simplified* when part of them folds
  (`if x and not _is_hip:` -> `if x:`). A test that folds to a constant as a whole is left to
  `remove_dead_branches`, which removes or inlines the branch (no `if False:` is ever written).
- the value of an assignment when it is a compound boolean expression (`and`/`or`/`not`/compare)
  that involves a predicate (`_use_aiter = ... and _is_hip` -> `_use_aiter = False`).
- values: call arguments, return values, lambda bodies, literal elements (exact for values: `X or False`
  stays unless X is a bool); `assert`s as tests.
- constants: a top-level name bound once to a value a predicate decides (`_is_gfx1250 = _is_hip and
  is_gfx1250_supported()`), or a function's local bound once at the top of its body, is that constant
  wherever it is read; a local nothing reads any more then goes.
- NOT folded: definitions (`def is_hip(): ...`, `_is_hip = is_hip()` stay; the unused-names codemod
  drops them once nothing reads them), `while`. A definition's body folds like any other code: one that
  reads `torch.version.hip` returns its CUDA value (`return False`).
- NOT folded: names bound as parameters of an enclosing function or lambda (`def f(is_aiter_moe):
  if is_aiter_moe:`): the caller decides their value. Reported as a finding.
"""

from __future__ import annotations


import re
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable, ClassVar, Mapping, Optional

import libcst as cst
import libcst.matchers
import libcst.helpers

from shrinker.codemods.base import ShrinkCodemod, constant, node_lines, spaced, swap_expression
from shrinker.codemods.elements import drop_from_literal
from shrinker.codemods.inputs import CodemodInputs
from shrinker.rules.patterns import name_glob_regex, pure_call_matches
from shrinker.rules.parameters import fixed_values
from shrinker.codemods.attribute_constants import attribute_constants, read_attributes, unread_attributes
from shrinker.codemods.bindings import BindingCounts, TargetVisitor, idle_globals
from shrinker.codemods.constant_calls import constant_calls, constant_words
from shrinker.codemods.enum_members import never_produced_compare
from shrinker.graph.constant_functions import ConstantReturn
from shrinker.codemods.local_constants import drop_unread_constants, function_constants
from shrinker.codemods.served_locals import ServedLocal, architecture_element, served_locals
from shrinker.rules.predicates import (architecture_compare, architecture_substring, attribute_vocabulary, build_attribute, combine,
                                       held_removed,
                                       device_probe, device_probe_patterns, env_flag_name, held_words,
                                       model_type_words, served_words,
                                       never_compare, other_devices_only, platform_attribute_default,
                                       platform_attribute_probe,
                                       platform_fact, platform_name, vocabulary_patterns)

# Python builtins (and os env readers) whose calls have no side effects worth keeping; `frozenset` of
# pure arguments builds a value (0.5.21's kernel records: `capabilities=frozenset({Capability.CUDA})`).
_PURE_CALLS = frozenset({"isinstance", "issubclass", "hasattr", "getattr", "callable", "len", "bool",
                         "str", "int", "float", "type", "getenv", "frozenset"})
_BOOL_CALLS = frozenset({"isinstance", "issubclass", "hasattr", "callable", "bool"})
_LITERALS = (cst.SimpleString, cst.Integer, cst.Float, cst.Imaginary, cst.Ellipsis)
# A literal whose strings are at least this share architectures the plan knows is a list of architectures.
_ARCHITECTURE_LIST_SHARE = 0.9
# Expressions that are never an assignment target: folded where they stand as elements of a literal.
_VALUE_KINDS = (cst.BooleanOperation, cst.UnaryOperation, cst.Comparison, cst.Call, cst.IfExp)


@dataclass(frozen=True)
class Fold:
    """The result of folding one expression."""

    node: cst.BaseExpression  # the simplified expression (the input node when nothing folded)
    value: Optional[bool]  # its truth value on CUDA, None when unknown
    pure: bool  # evaluating it has no side effects
    pred: bool  # a platform predicate was folded inside it


def _pure_pattern_matches(pattern: str, name: str, call: cst.Call) -> bool:
    literal = all(isinstance(a.value, cst.SimpleString) and not a.keyword and not a.star for a in call.args)
    return pure_call_matches(pattern, name, cst.helpers.get_full_name_for_node(call.func) or "", len(call.args),
                             literal)


def _dotted_root(node: cst.BaseExpression) -> Optional[str]:
    while isinstance(node, (cst.Attribute, cst.Call, cst.Subscript)):
        node = node.value if not isinstance(node, cst.Call) else node.func
    return node.value if isinstance(node, cst.Name) else None


def _one_bool(values: Optional[frozenset]) -> Optional[bool]:
    """The bool an attribute always holds, when its literals are that one bool."""
    if values is not None and len(values) == 1:
        (value,) = values
        return value if isinstance(value, bool) else None
    return None


def _ends_with(node: cst.BaseExpression, operator: cst.BaseBooleanOp, value: bool) -> bool:
    """`node` is `... <operator> <value>` (`x or False`), unparenthesised or not."""
    return (isinstance(node, cst.BooleanOperation) and type(node.operator) is type(operator)
            and isinstance(node.right, cst.Name) and node.right.value == str(value))


def _simple_name(node: cst.BaseExpression) -> Optional[str]:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return node.attr.value
    return None


def _string(node: cst.BaseExpression) -> Optional[str]:
    if isinstance(node, cst.SimpleString):
        value = node.evaluated_value
        return value if isinstance(value, str) else None
    return None


class Folder:
    """Folds boolean expressions under the predicate table of `inputs`."""

    def __init__(self, inputs: CodemodInputs, is_param: Callable[[str], bool] = lambda name: False,
                 on_param: Callable[[cst.Name], None] = lambda node: None,
                 param_value: Callable[[str], Optional[bool]] = lambda name: None) -> None:
        self.table = inputs.table
        self.param_value = param_value  # a parameter rules.platform.parameters fixes in this function
        self.env_flags = frozenset(inputs.rules.platform.env_flags)
        self.pure_methods = tuple(inputs.rules.platform.pure_methods)
        self.is_param = is_param
        self.on_param = on_param
        # Names this module imports from removed modules, and classes the tree only tests against
        # (graph/tested_classes): no instance of such a class can exist.
        self.removed_classes: frozenset[str] = frozenset()
        self.module = ""  # the dotted module folded (feature value rules scoped to modules)
        # Names the module binds to a value (`_is_npu = is_npu()`, `from .utils import _is_hip`): as a
        # value (an argument, a return value) only these fold, a bare `is_npu` may be the function.
        self.flags: frozenset[str] = frozenset()
        # Private names the module binds once, to None, and nowhere else (`_fused_kernel = None` whose
        # platform import went): `_fused_kernel is None` is True.
        self.none_names: frozenset[str] = frozenset()
        # Names bound once, at the top, to an empty tuple or frozenset and read in no other file
        # (`MIMO_V2_MODEL_ARCHS = ()` once prune_architecture_literals took its architectures): `x in NAME`
        # is False, and `*NAME` unpacks nothing.
        self.empty_names: frozenset[str] = frozenset()
        # Names bound the same way to a tuple or frozenset of string literals (`_GEMMA4_MODEL_TYPES = ("gemma4",
        # ...)`): `x in NAME` tests as `x in ("gemma4", ...)` does (a served model_type, an architecture).
        self.string_collections: dict[str, cst.Tuple] = {}
        # Attributes a class sets once, in __init__, to a constant, and reads only as `self.X` (module
        # attribute_constants): `self.use_aiter_fused_fp8_writer` reads False.
        self.attribute_constants: dict[str, Optional[bool]] = {}
        # Attributes whose every value is one of a few literals (graph/returned_literals):
        # `self.chat_encoding_spec` holds "dsv41", "dsv4", "dsv32" or None, so `== "kimi_k3"` is False.
        self.literal_attributes: dict[str, frozenset[Optional[str | bool]]] = {}
        # Private attributes nothing in the kept tree sets (graph/unset_attributes): `getattr(self,
        # "_kimi_split_gguf_kv_b", False)` is its default.
        self.unset_attributes: frozenset[str] = inputs.unset_attributes or frozenset()
        # Top-level names bound once, to a value a predicate decides, and nowhere else in the module
        # (`_is_gfx1250 = _is_hip and is_gfx1250_supported()`): each read is that constant.
        self.constants: dict[str, Optional[bool]] = {}  # None: the name holds None (a function's local)
        # Calls of functions that always return one bool (codemods/constant_calls): `is_kimi_k3(cfg)`, and
        # `self.m()` for such a method defined once, here only; `x.m()` for the tree's called methods.
        self.constant_calls: dict[str, ConstantReturn] = {}
        self.constant_methods: dict[str, ConstantReturn] = {}
        self.called_methods: Mapping[str, ConstantReturn] = {}
        # Locals of the functions being folded that hold the served model's architecture or model_type
        # (codemods/served_locals): `arch = architectures[0] if architectures else ""`.
        self.served_locals: dict[str, ServedLocal] = {}
        # Enum members no code produces (graph/enum_members.never_produced): `st == StateType.QSA_PENDING` is False.
        self.never_produced: Mapping[str, frozenset[str]] = inputs.never_produced_members or {}

    # -- purity --------------------------------------------------------------------------------
    def pure(self, node: cst.BaseExpression) -> bool:
        if isinstance(node, cst.Name) or isinstance(node, _LITERALS):
            return True
        if isinstance(node, cst.ConcatenatedString):
            return self.pure(node.left) and self.pure(node.right)
        if isinstance(node, cst.Attribute):
            return self.pure(node.value)
        if isinstance(node, cst.Subscript):  # `cfg.architectures[0]`: an index read of a pure value
            return self.pure(node.value) and all(
                isinstance(e.slice, cst.Index) and self.pure(e.slice.value) for e in node.slice)
        if isinstance(node, (cst.Tuple, cst.List, cst.Set)):
            return all(self.pure(e.value) for e in node.elements)
        if isinstance(node, cst.UnaryOperation):
            return self.pure(node.expression)
        if isinstance(node, cst.BooleanOperation):
            return self.pure(node.left) and self.pure(node.right)
        if isinstance(node, cst.Comparison):
            return self.pure(node.left) and all(self.pure(t.comparator) for t in node.comparisons)
        if isinstance(node, cst.Call):
            return self.pure_callee(node) and all(self.pure(a.value) for a in node.args)
        if isinstance(node, (cst.GeneratorExp, cst.ListComp, cst.SetComp)):
            # `frozenset(CapabilityRequirement.cuda(min_sm=sm, max_sm=sm) for sm in ((10, 0), (10, 3)))`
            comp: Optional[cst.CompFor] = node.for_in
            while comp is not None:
                if comp.asynchronous or not self.pure(comp.iter) or not all(self.pure(i.test) for i in comp.ifs):
                    return False
                comp = comp.inner_for_in
            return self.pure(node.elt)
        return False

    def pure_callee(self, call: cst.Call) -> bool:
        name = _simple_name(call.func)
        if name is None:
            return False
        if self.table.value(name, called=True) is not None and (not call.args or self.table.takes_args(name)):
            return True  # a predicate call (its arguments are checked by the caller)
        if name in _PURE_CALLS or name in self.env_flags or _dotted_root(call.func) in self.env_flags:
            return True
        if name in self.table.readers:  # reads an attribute as getattr does (rules.architectures.readers)
            return True
        if device_probe(call, self.table.platform, self.table.strings) is not None:
            return True
        # Methods and functions the rules declare side-effect free (`mode.is_mixed()`,
        # `get_available_device()`: lru_cached, its one warning is printed by the first call anyway).
        # A name written `get_model()` is pure only when called with no arguments (an accessor whose
        # name a loader shares); one written `get("")` only when every argument is a string literal (a
        # mapping's lookup by key: `hf_quant_config.get("quant_method")`; a queue's get takes none).
        if any(_pure_pattern_matches(p, name, call) for p in self.pure_methods):
            return self.pure(call.func.value) if isinstance(call.func, cst.Attribute) else True
        return False

    # -- folding -------------------------------------------------------------------------------
    def fold(self, node: cst.BaseExpression, as_value: bool = False) -> Fold:
        """Fold `node` as a test (its truth counts), or `as_value` (its value counts: an argument, a
        return value, a lambda body), where `X or False` is X only when X is a bool."""
        if isinstance(node, cst.Name):
            return self._fold_name(node, as_value)
        if build_attribute(node, self.table.platform, self.table.strings) is not None:
            return Fold(cst.Name("None"), False, True, True)  # `torch.version.hip` is None on a CUDA build
        if (isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value == "self"
                and node.attr.value in self.attribute_constants):
            known = self.attribute_constants[node.attr.value]
            return Fold(cst.Name("None") if known is None else constant(known), bool(known), True, True)
        if (isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value == "self"
                and (only := _one_bool(self.literal_attributes.get(node.attr.value))) is not None):
            # an attribute whose one store holds a bool (graph/returned_literals): its store stays, since
            # modules of subclasses may read it too
            return Fold(constant(only), only, True, True)
        if isinstance(node, cst.Attribute):
            fact = platform_fact(node, self.table.platform)  # `get_platform().is_hip` is `is_hip()`
            value = self.table.value(fact or node.attr.value, called=fact is not None)
            if value is not None and self.pure(node.value):
                return Fold(constant(value), value, True, True)
        elif isinstance(node, cst.Call):
            folded = (self._fold_call(node) or self._fold_constant_call(node) or self._fold_isinstance(node)
                      or self._fold_hasattr(node) or self._fold_device_probe(node) or self._fold_any_all(node)
                      or self._fold_unset_attribute(node))
            if folded is not None:
                return folded
        elif isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Not):
            return self._fold_not(node)
        elif isinstance(node, cst.BooleanOperation):
            return self._fold_boolean(node, as_value)
        elif isinstance(node, cst.Comparison):
            folded = self._fold_compare(node)
            if folded is not None:
                return folded
        elif isinstance(node, cst.NamedExpr):
            # `cfg := mambaish_config(x)` tests its value; the node stays (it binds `cfg`): the
            # dead-branch codemod removes the branch only when nothing else reads the name
            inner = self.fold(node.value)
            if inner.pred:
                return Fold(node, inner.value, inner.pure, True)
        return Fold(node, None, self.pure(node), False)

    def _fold_name(self, node: cst.Name, as_value: bool = False) -> Fold:
        if node.value in ("True", "False"):
            return Fold(node, node.value == "True", True, False)
        if self.is_param(node.value) and (fixed := self.param_value(node.value)) is not None:
            return Fold(constant(fixed), fixed, True, True)
        if node.value in self.constants and not self.is_param(node.value):
            known = self.constants[node.value]
            return Fold(cst.Name("None") if known is None else constant(known), bool(known), True, True)
        if as_value and node.value not in self.flags:
            # a value may be the predicate function itself (`register(is_npu)`): only flags fold
            return Fold(node, None, True, False)
        value = self.table.value(node.value, called=False)
        if value is None:
            return Fold(node, None, True, False)
        if self.is_param(node.value):
            self.on_param(node)
            return Fold(node, None, True, False)
        return Fold(constant(value), value, True, True)

    def _fold_call(self, node: cst.Call) -> Optional[Fold]:
        flag = env_flag_name(node, self.table.platform)
        if flag is not None:  # `envs.SGLANG_OPT_USE_AITER_INDEXER.get()`: an env read, always pure
            value = self.table.value(flag, called=True)
            if value is None or not all(self.pure(a.value) for a in node.args):
                return None
            return Fold(constant(value), value, True, True)
        name = _simple_name(node.func)
        if name is None or self.table.value(name, called=True) is None:
            return None
        if node.args and not (self.table.takes_args(name) and all(self.pure(a.value) for a in node.args)):
            return None
        if isinstance(node.func, cst.Attribute) and not self.pure(node.func.value):
            return None
        if isinstance(node.func, cst.Name) and self.is_param(name):
            return None
        value = self.table.value(name, called=True)
        if self.table.returns_none(name):
            # its value is None (`self.mambaish_config = mambaish_config(cfg)` reads `is not None` later):
            # `False` would only be its truth
            return Fold(cst.Name("None"), value, True, True)
        return Fold(constant(value), value, True, True)

    def _known_constant(self, node: cst.Call) -> Optional[ConstantReturn]:
        func = node.func
        if isinstance(func, cst.Name) and not self.is_param(func.value):
            return self.constant_calls.get(func.value)
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == "self":
            return self.constant_methods.get(func.attr.value)
        if isinstance(func, cst.Attribute) and func.attr.value in self.called_methods and self.pure(func.value):
            return self.called_methods[func.attr.value]  # `indexer._aiter_fused_fp8_active(fb)`
        return None

    def _fold_constant_call(self, node: cst.Call) -> Optional[Fold]:
        """`is_kimi_k3(cfg)`, a call of a function that always returns one bool, is that bool, and a call of
        one that always returns None is None: where the call reads only (its body, or the rules' pure calls:
        `is_*`) and so do its arguments."""
        known = self._known_constant(node)
        if known is None or not all(self.pure(a.value) for a in node.args):
            return None
        if not (known.pure or self.pure_callee(node)):
            return None
        return Fold(cst.Name("None") if known.none else constant(known.value), known.value, True, True)

    def does_nothing(self, call: cst.Call) -> bool:
        """`maybe_create_ascend_config_store(transfer_backend=backend)`, a call of a function whose body only
        reads and returns None (graph/constant_functions), with arguments that only read: as a statement it
        runs nothing, and its value is None."""
        known = self._known_constant(call)
        return known is not None and known.none and self._fold_constant_call(call) is not None

    def _fold_any_all(self, node: cst.Call) -> Optional[Fold]:
        """`any(arch in EMPTY for arch in archs)`: a generator whose element is False on every item makes
        `any` False (`all` True for an element always True), however many items the pure iterables give;
        so does a generator over no items (`for a in ()`, `for a in EMPTY`)."""
        if not (isinstance(node.func, cst.Name) and node.func.value in ("any", "all") and len(node.args) == 1
                and not node.args[0].keyword and not node.args[0].star
                and isinstance(node.args[0].value, cst.GeneratorExp)) or self.is_param(node.func.value):
            return None
        generator = node.args[0].value
        decided = node.func.value == "all"  # what the call is on an element that decides it, or on no items
        first = generator.for_in.iter
        if (isinstance(first, (cst.Tuple, cst.List)) and not first.elements) or (
                isinstance(first, cst.Name) and first.value in self.empty_names):
            return Fold(constant(decided), decided, True, True)  # no items: the element never runs
        element = self.fold(generator.elt)
        if not element.pred or element.value is not decided or not element.pure or not self.pure(generator):
            return None
        return Fold(constant(decided), decided, True, True)

    def _fold_hasattr(self, node: cst.Call) -> Optional[Fold]:
        """`hasattr(pool, "req_to_c128_sidecar")`, an attribute only another platform's objects carry
        ([platform].attributes): False; `getattr(layer, "aiter_bpreshuffled", False)`: its default."""
        if platform_attribute_probe(node, self.table.platform) is None:
            return None
        value = platform_attribute_default(node)
        return Fold(constant(value), value, self.pure(node.args[0].value) and self.pure(node.args[-1].value), True)

    def _fold_unset_attribute(self, node: cst.Call) -> Optional[Fold]:
        """`getattr(self, "_kimi_split_gguf_kv_b", False)` of an attribute nothing sets is its default (a
        literal True, False or None); `hasattr(self, "_x")` is False."""
        if not (self.unset_attributes and isinstance(node.func, cst.Name) and node.func.value in ("getattr", "hasattr")
                and not self.is_param(node.func.value) and all(not a.keyword and not a.star for a in node.args)):
            return None
        wanted = 3 if node.func.value == "getattr" else 2
        if len(node.args) != wanted or not (isinstance(node.args[0].value, cst.Name)
                                            and node.args[0].value.value == "self"):
            return None
        if _string(node.args[1].value) not in self.unset_attributes:
            return None
        if wanted == 2:
            return Fold(constant(False), False, True, True)
        default = node.args[2].value
        if not (isinstance(default, cst.Name) and default.value in ("True", "False", "None")):
            return None
        return Fold(cst.Name(default.value), default.value == "True", True, True)

    def _fold_device_probe(self, node: cst.Call) -> Optional[Fold]:
        """`torch.xpu.is_available()` ([platform].device_probes): no such device on CUDA."""
        if device_probe(node, self.table.platform, self.table.strings) is None:
            return None
        return Fold(constant(False), False, True, True)

    def _fold_isinstance(self, node: cst.Call) -> Optional[Fold]:
        """`isinstance(x, NPUPool)` with NPUPool imported from a removed module is False; in a tuple
        of classes the removed ones go (`(DSAPool, NPUPool)` -> `DSAPool`)."""
        if (not self.removed_classes or not isinstance(node.func, cst.Name) or node.func.value != "isinstance"
                or len(node.args) != 2 or any(a.keyword or a.star for a in node.args)):
            return None
        classes = node.args[1].value
        gone = lambda e: isinstance(e, cst.Name) and e.value in self.removed_classes  # noqa: E731
        if gone(classes):
            return Fold(constant(False), False, self.pure(node.args[0].value), True)
        if not isinstance(classes, cst.Tuple) or not any(gone(e.value) for e in classes.elements):
            return None
        kept = [e for e in classes.elements if not gone(e.value)]
        if not kept:
            return Fold(constant(False), False, self.pure(node.args[0].value), True)
        if len(kept) == 1 and not isinstance(kept[0], cst.StarredElement):
            new_classes = kept[0].value
        else:
            new_classes = drop_from_literal(classes, lambda e: gone(e.value))
        args = [node.args[0], node.args[1].with_changes(value=new_classes)]
        return Fold(node.with_changes(args=args), None, self.pure(node), True)

    def _fold_not(self, node: cst.UnaryOperation) -> Fold:
        inner = self.fold(node.expression)
        if not inner.pred:
            return Fold(node, None if inner.value is None else not inner.value, inner.pure, False)
        if inner.value is not None and inner.pure:
            return Fold(constant(not inner.value), not inner.value, True, True)
        if inner.value is not None:  # impure operand: keep the original text, its effect stays
            return Fold(node, not inner.value, False, True)
        expression = swap_expression(node.expression, inner.node, boolean_operand=True)
        operator = node.operator.with_changes(whitespace_after=spaced(node.operator.whitespace_after, expression))
        new = node.with_changes(expression=expression, operator=operator)
        return Fold(new, None, inner.pure, True)

    def _fold_boolean(self, node: cst.BooleanOperation, as_value: bool = False) -> Fold:
        left, right = self.fold(node.left, as_value), self.fold(node.right, as_value)
        is_and = isinstance(node.operator, cst.And)
        pure = left.pure and right.pure
        if not (left.pred or right.pred):
            return Fold(node, combine(left.value, right.value, is_and), pure, False)
        stop = False if is_and else True  # the value that short-circuits
        if left.value is stop:  # `False and X` / `True or X`: X is never evaluated
            return self._result(node, left.node, stop, left.pure)
        if left.value is (not stop) and left.pure:  # `True and X` / `False or X` is X
            return self._result(node, right.node, right.value, right.pure)
        # `X and False` is False and `X or False` is X only in a test, or where X is a bool
        exact = not as_value or self.boolean(left.node)
        if right.value is stop and right.pure and left.pure and exact:  # `X and False` / `X or True`
            return self._result(node, constant(stop), stop, True)
        # `X or False` is X too where X already ends in `or False` (its falsy value is False), so a chain
        # `x or False or False` keeps one `or False`; likewise `X and True` after `... and True`
        settled = _ends_with(left.node, node.operator, not stop)
        if right.value is (not stop) and right.pure and (exact or settled):  # `X and True` / `X or False`
            return self._result(node, left.node, left.value, left.pure)
        if left.value is not None or (right.value is not None and not (as_value and right.pure)):
            # A constant beside an operand with side effects: keep the original text.
            return Fold(node, combine(left.value, right.value, is_and), False, True)
        return self._joined(node, left, right, combine(left.value, right.value, is_and), pure)

    def boolean(self, node: cst.BaseExpression) -> bool:
        """`node` evaluates to a bool by construction (a comparison, `not`, a predicate call ...)."""
        if isinstance(node, cst.Name):
            return node.value in ("True", "False")
        if isinstance(node, cst.Comparison) or (isinstance(node, cst.UnaryOperation)
                                                and isinstance(node.operator, cst.Not)):
            return True
        if isinstance(node, cst.BooleanOperation):
            return self.boolean(node.left) and self.boolean(node.right)
        if isinstance(node, cst.Call):
            name = _simple_name(node.func)
            if device_probe(node, self.table.platform, self.table.strings) is not None:
                return True
            if (known := self._known_constant(node)) is not None:
                return not known.none
            return name in _BOOL_CALLS or (name is not None and self.table.value(name, called=True) is not None
                                           and not self.table.returns_none(name))
        if isinstance(node, cst.Attribute):  # a platform fact is a probe's bool
            fact = platform_fact(node, self.table.platform)
            return fact is not None and self.table.value(fact, called=True) is not None
        return False

    def _joined(self, node: cst.BooleanOperation, left: Fold, right: Fold, value: Optional[bool],
                pure: bool) -> Fold:
        new_left = swap_expression(node.left, left.node, boolean_operand=True)
        new_right = swap_expression(node.right, right.node, boolean_operand=True)
        operator = node.operator.with_changes(
            whitespace_before=_space_before(node.operator.whitespace_before, new_left),
            whitespace_after=spaced(node.operator.whitespace_after, new_right))
        return Fold(node.with_changes(left=new_left, right=new_right, operator=operator), value, pure, True)

    def _result(self, original: cst.BaseExpression, node: cst.BaseExpression, value: Optional[bool],
                pure: bool) -> Fold:
        return Fold(swap_expression(original, node, boolean_operand=True), value, pure, True)

    def _feature_rule(self, node: cst.BaseExpression):
        """What a feature rule says of a compare operand: its FeatureValue, "none" for a call of a
        predicate that returns None (`mambaish_config(cfg) is None`), else None."""
        if isinstance(node, cst.Call):
            name = _simple_name(node.func)
            if name and self.table.returns_none(name) and self._fold_call(node) is not None:
                return "none"
            return None
        if isinstance(node, cst.Name):
            return self.table.never(node.value, self.module, param=self.is_param(node.value))
        if isinstance(node, cst.Attribute) and self.pure(node.value):
            return self.table.never(node.attr.value, self.module)
        return None

    def _fold_compare(self, node: cst.Comparison) -> Optional[Fold]:
        if len(node.comparisons) != 1:
            return None
        target = node.comparisons[0]
        op, left, right = target.operator, node.left, target.comparator
        strings = self.table.strings
        none = ((isinstance(left, cst.Name) and left.value in self.none_names)
                or (isinstance(left, cst.Name) and left.value in self.constants and self.constants[left.value] is None
                    and not self.is_param(left.value))
                or (isinstance(left, cst.Call) and self.does_nothing(left))
                or build_attribute(left, self.table.platform, strings) is not None
                or (isinstance(left, cst.Attribute) and isinstance(left.value, cst.Name) and left.value.value == "self"
                    and left.attr.value in self.attribute_constants and self.attribute_constants[left.attr.value] is None))
        if isinstance(op, (cst.Is, cst.IsNot)) and none and isinstance(right, cst.Name) and right.value == "None":
            value = isinstance(op, cst.Is)
            return Fold(constant(value), value, True, True)
        value = self._literal_compare(left, target)
        if value is None:
            value = never_produced_compare(left, op, right, self.never_produced)
            if value is not None and not self.pure(node):
                return Fold(node, value, False, True)
        if value is not None:
            return Fold(constant(value), value, True, True)
        # a feature value rule (`fa_impl_ver == 4`, `mambaish_config(x) is None`) first, then platform strings
        value = never_compare(left, target, self._feature_rule) if self.table.features else None
        if value is not None:
            return Fold(node, value, False, True) if not self.pure(node) else Fold(constant(value), value, True, True)
        if isinstance(op, (cst.Equal, cst.NotEqual)):
            text = platform_name(left) if platform_name(left) is not None else platform_name(right)
            if text is not None and text in strings:
                value = isinstance(op, cst.NotEqual)
        elif isinstance(op, (cst.In, cst.NotIn)) and isinstance(right, (cst.Tuple, cst.List, cst.Set)):
            texts = [_string(e.value) for e in right.elements]
            if texts and all(t is not None and t in strings for t in texts):
                value = isinstance(op, cst.NotIn)
            elif (platform_name(left) in strings and right.elements
                  and all(isinstance(e, cst.Element) and platform_name(e.value) not in strings for e in right.elements)):
                # `"intel_xpu" in (prefill_backend, decode_backend)`: each element `== "intel_xpu"`, none of them
                # a platform's name itself (0.5.23's overrides `_intel_xpu_page_constraint`)
                value = isinstance(op, cst.NotIn)
        if value is None and isinstance(op, (cst.In, cst.NotIn)) and (
                (isinstance(right, cst.Name) and right.value in self.empty_names) or _empty_literal(right)):
            # `x in EMPTY`, `x in ()` (prune_architecture_literals emptied it). Like a removed architecture's
            # test: where an operand must run (`_hf_arch(cfg) in EMPTY`) the test stays, and that is no finding
            # (the branch is dead code, not a wrong answer on CUDA)
            value = isinstance(op, cst.NotIn)
            if not self.pure(node):
                return None
        if value is None:
            # A test for a removed architecture folds only where that is safe; unlike a platform test
            # it is no finding when it cannot (the branch is dead code, not a wrong answer on CUDA).
            if isinstance(right, cst.Name) and right.value in self.string_collections:
                target = target.with_changes(comparator=self.string_collections[right.value])
            value = architecture_compare(left, target, self.table)
            if value is None:
                value = self._served_compare(left, target)
            if value is None:
                return self._without_removed_keys(node)
            if not self.pure(node):
                return None
        if not self.pure(node):
            return Fold(node, value, False, True)
        return Fold(constant(value), value, True, True)

    def _without_removed_keys(self, node: cst.Comparison) -> Optional[Fold]:
        """`attention_backend in {"flashmla", "aiter"}` of a place holding a picked key (the rules' held_at):
        the keys the plan removed from that place's registry leave the literal (`{"flashmla"}`), as they can
        never be picked; one left with none folds whole (option_compare). A platform's string leaves any such
        literal, as it leaves `x == "mori"` (False: `moe_a2a_backend not in ("none", "mori")` keeps
        `("none",)`, `device.type in {"cuda", "xpu"}` keeps `{"cuda"}`). A method of a class no instance of
        which can exist leaves it too (`GemmaRMSNorm.forward_with_allreduce_fusion`: graph/tested_classes
        admits `C.m` only in such literals, so nothing tested can be that function)."""
        target = node.comparisons[0]
        right = target.comparator
        if not isinstance(target.operator, (cst.In, cst.NotIn)) or not isinstance(right, (cst.Tuple, cst.List, cst.Set)):
            return None
        held = held_removed(node.left, self.table)
        strings = self.table.strings
        if platform_name(node.left) in strings:
            return None  # `"npu" in ("npu", device)`: the literal's own "npu" answers it

        def gone(element: cst.BaseElement) -> bool:
            if not isinstance(element, cst.Element):
                return False
            value = element.value
            if (isinstance(value, cst.Attribute) and isinstance(value.value, cst.Name)
                    and value.value.value in self.removed_classes):
                return True
            text = _string(value)
            return text is not None and (text in held or text in strings)

        if not any(gone(e) for e in right.elements) or all(gone(e) for e in right.elements):
            return None  # nothing to drop, or the whole test folds where a platform string's does
        kept = drop_from_literal(right, gone)
        if kept is None:
            return None
        new = node.with_changes(comparisons=[target.with_changes(comparator=kept)])
        return Fold(new, None, self.pure(node), True)

    def _literal_compare(self, left: cst.BaseExpression, target: cst.ComparisonTarget) -> Optional[bool]:
        """`self.X == "kimi_k3"` (`!=`, `in (...)`, `is None`) of an attribute whose every value is known: decided
        when the literals compared are none of its values, or hold all of them."""
        if not (isinstance(left, cst.Attribute) and isinstance(left.value, cst.Name) and left.value.value == "self"):
            return None
        values = self.literal_attributes.get(left.attr.value)
        if values is None:
            return None
        op, right = target.operator, target.comparator
        if isinstance(op, (cst.Is, cst.IsNot, cst.Equal, cst.NotEqual)):
            if isinstance(right, cst.Name) and right.value == "None":
                texts: Optional[list] = [None]
            else:
                texts = [_string(right)] if _string(right) is not None and not isinstance(op, (cst.Is, cst.IsNot)) else None
            positive = isinstance(op, (cst.Is, cst.Equal))
        elif isinstance(op, (cst.In, cst.NotIn)) and isinstance(right, (cst.Tuple, cst.List, cst.Set)):
            texts = [_string(e.value) for e in right.elements]
            texts = texts if right.elements and all(t is not None for t in texts) else None
            positive = isinstance(op, cst.In)
        else:
            return None
        if texts is None:
            return None
        if not values & set(texts):
            return not positive
        if values <= set(texts):
            return positive
        return None

    def _served_compare(self, left: cst.BaseExpression, target: cst.ComparisonTarget) -> Optional[bool]:
        """A test of a local holding the served model_type, as the place it copies; `"KimiK3" in arch` of a
        served architecture (a local holding one, or `architectures[0]`) by architecture_substring."""
        op, right = target.operator, target.comparator
        local = self.served_locals.get(left.value) if isinstance(left, cst.Name) else None
        if local is not None and local.place is not None:
            return architecture_compare(local.place, target, self.table)
        if not isinstance(op, (cst.In, cst.NotIn)):
            return None
        held = self.served_locals.get(right.value) if isinstance(right, cst.Name) else None
        if held is not None and held.place is None:
            alternatives: Optional[tuple[str, ...]] = held.alternatives
        else:
            alternatives = () if architecture_element(right, self.table) else None
        if alternatives is not None and architecture_substring(_string(left), alternatives, self.table):
            return isinstance(op, cst.NotIn)
        return None


def module_flags(tree: cst.Module) -> frozenset[str]:
    """Names a module's top level binds by assignment (`_is_npu = is_npu()`, `_use_aiter = False`) or
    imports as private names (`from .utils import _is_hip`): values, never the predicate functions."""
    names: set[str] = set()
    for line in tree.body:
        if not isinstance(line, cst.SimpleStatementLine):
            continue
        for small in line.body:
            if isinstance(small, cst.Assign):
                names.update(t.target.value for t in small.targets if isinstance(t.target, cst.Name))
            elif isinstance(small, cst.AnnAssign) and isinstance(small.target, cst.Name) and small.value:
                names.add(small.target.value)
            elif isinstance(small, cst.ImportFrom) and not isinstance(small.names, cst.ImportStar):
                for alias in small.names:
                    bound = alias.asname.name if alias.asname is not None else alias.name
                    if isinstance(bound, cst.Name) and bound.value.startswith("_") and not bound.value.startswith("__"):
                        names.add(bound.value)
    return frozenset(names)


def none_constants(tree: cst.Module, folder: "Folder") -> frozenset[str]:
    """Private names bound by a top-level `_x = None` and nowhere else in the module's live code (the
    platform branch that could rebind it folds away): `_x is None` holds wherever `_x` is read."""
    candidates = set()
    for line in tree.body:
        if isinstance(line, cst.SimpleStatementLine):
            for small in line.body:
                if (isinstance(small, cst.Assign) and len(small.targets) == 1
                        and isinstance(small.targets[0].target, cst.Name)
                        and small.targets[0].target.value.startswith("_")
                        and isinstance(small.value, cst.Name) and small.value.value == "None"):
                    candidates.add(small.targets[0].target.value)
    if not candidates:
        return frozenset()
    bindings = BindingCounts(folder)
    tree.visit(bindings)
    return frozenset(n for n in candidates if bindings.count.get(n) == 1)


def _empty_literal(value: cst.BaseExpression) -> bool:
    """`()`, `[]`, `frozenset()`, `tuple()`: an empty collection (a name bound to one holds nothing while
    nothing adds to it: a list can grow, so only tuples and frozensets make empty names)."""
    if isinstance(value, (cst.Tuple, cst.List)):
        return not value.elements
    return (isinstance(value, cst.Call) and isinstance(value.func, cst.Name)
            and value.func.value in ("frozenset", "tuple") and not value.args)


def empty_constants(tree: cst.Module, folder: "Folder", single_file_words: Optional[frozenset[str]]) -> frozenset[str]:
    """Names a top-level `NAME = ()` (or `frozenset()`, `tuple()`) binds and nothing else in the module does,
    which no other module can rebind: private ones, and those no other file of the kept tree names
    (`single_file_words`; None = not known: only private names)."""
    candidates = {name for _, name, value in _single_bindings(tree.body)
                  if _empty_literal(value) and not isinstance(value, cst.List)
                  and (name.startswith("_") or (single_file_words is not None and name in single_file_words))}
    if not candidates:
        return frozenset()
    bindings = BindingCounts(folder)
    tree.visit(bindings)
    return frozenset(n for n in candidates if bindings.count.get(n) == 1)


def string_collections(tree: cst.Module, folder: "Folder",
                       single_file_words: Optional[frozenset[str]]) -> dict[str, cst.Tuple]:
    """Names bound as empty_constants' are, but to a tuple or frozenset literal of strings only (`_GEMMA4_MODEL_TYPES
    = ("gemma4", "gemma4_unified")`, `frozenset({"A", "B"})`): name -> the strings as a tuple. Neither can
    change, so `x in NAME` is `x in ("gemma4", "gemma4_unified")`. A set or list literal can (`.add`), so it
    counts only where the module reads it as `in`'s right operand and nowhere else (0.5.23 qwen3_vl's
    `_HOPPER_QWEN3_VL_TYPES = {"qwen3_vl", "qwen3_vl_moe"}`)."""
    candidates = {}
    mutable: set[str] = set()
    for _, name, value in _single_bindings(tree.body):
        if not (name.startswith("_") or (single_file_words is not None and name in single_file_words)):
            continue
        if (isinstance(value, cst.Call) and isinstance(value.func, cst.Name) and value.func.value == "frozenset"
                and len(value.args) == 1 and not value.args[0].keyword and not value.args[0].star):
            value = value.args[0].value
        elif isinstance(value, (cst.Set, cst.List)):
            mutable.add(name)
        elif not isinstance(value, cst.Tuple):
            continue
        if not isinstance(value, (cst.Tuple, cst.Set, cst.List)) or not value.elements:
            continue
        if all(isinstance(e, cst.Element) and _string(e.value) is not None for e in value.elements):
            candidates[name] = cst.Tuple([cst.Element(e.value) for e in value.elements])
    if not candidates:
        return {}
    bindings = BindingCounts(folder)
    tree.visit(bindings)
    tested = _membership_only(tree, mutable & candidates.keys())
    return {n: t for n, t in candidates.items() if bindings.count.get(n) == 1 and (n not in mutable or n in tested)}


def _membership_only(tree: cst.Module, names: set[str]) -> set[str]:
    """Those of `names` whose every occurrence but its one binding is the right operand of `in` / `not in`."""
    if not names:
        return set()
    seen: Counter[str] = Counter()
    tested: Counter[str] = Counter()

    class Count(cst.CSTVisitor):
        def visit_Name(self, node: cst.Name) -> None:
            if node.value in names:
                seen[node.value] += 1

        def visit_Attribute(self, node: cst.Attribute) -> bool:
            node.value.visit(self)  # `x._NAME` is another object's attribute
            return False

        def visit_ComparisonTarget(self, node: cst.ComparisonTarget) -> None:
            if isinstance(node.operator, (cst.In, cst.NotIn)) and isinstance(node.comparator, cst.Name) \
                    and node.comparator.value in names:
                tested[node.comparator.value] += 1

    tree.visit(Count())
    return {n for n in names if seen[n] == tested[n] + 1}


def _single_bindings(statements) -> list[tuple[int, str, cst.BaseExpression]]:
    """(index, name, value) of `name = value` / `name: T = value` among `statements` (one block)."""
    out = []
    for index, line in enumerate(statements):
        if not isinstance(line, cst.SimpleStatementLine):
            continue
        for small in line.body:
            if isinstance(small, cst.Assign) and len(small.targets) == 1:
                target, value = small.targets[0].target, small.value
            elif isinstance(small, cst.AnnAssign) and small.value is not None:
                target, value = small.target, small.value
            else:
                continue
            if isinstance(target, cst.Name):
                out.append((index, target.value, value))
    return out


def _constants(bindings: list[tuple[int, str, cst.BaseExpression]], scope: cst.CSTNode,
               folder: "Folder") -> dict[str, bool]:
    """The bindings whose value a predicate decides, to True or False itself, of names `scope` binds
    only there. The value must be the constant, not only its truth (`x = y or _is_hip` is y's value),
    and it must come from a predicate: a plain `DEBUG = False` is a setting, not a platform fact."""
    if not bindings:
        return {}
    counter = BindingCounts(folder)
    scope.visit(counter)
    once = [(name, value) for _, name, value in bindings if counter.count.get(name) == 1]
    saved = folder.constants
    try:
        while True:  # a constant may derive from one above it (`_b = _a and x()`)
            found = {}
            for name, value in once:
                folded = folder.fold(value, as_value=True)
                if (name not in folder.constants and folded.pred and folded.pure
                        and isinstance(folded.node, cst.Name) and folded.node.value in ("True", "False")):
                    found[name] = folded.node.value == "True"
            if not found:
                return {n: v for n, v in folder.constants.items() if n not in saved}
            folder.constants = {**folder.constants, **found}
    finally:
        folder.constants = saved


def module_constants(tree: cst.Module, folder: "Folder") -> dict[str, bool]:
    """Top-level names bound once, to a value a platform predicate decides, and bound nowhere else in the
    module's live code (`_is_gfx1250 = _is_hip and is_gfx1250_supported()`, `_is_hip = is_hip()`): every
    read of such a name is that constant, so it folds where it stands (an argument `IS_GFX1250=_is_gfx1250`,
    a test)."""
    saved, folder.constants = folder.constants, {}
    try:
        return _constants(_single_bindings(tree.body), tree, folder)
    finally:
        folder.constants = saved


def _walrus_count(node: cst.CSTNode) -> int:
    return len(cst.matchers.findall(node, cst.matchers.NamedExpr()))


def _space_before(ws: cst.BaseParenthesizableWhitespace, before: cst.BaseExpression):
    if getattr(before, "rpar", None):
        return ws
    if isinstance(ws, cst.SimpleWhitespace) and ws.value == "":
        return cst.SimpleWhitespace(" ")
    return ws


def param_names(params: cst.Parameters) -> frozenset[str]:
    names = [p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)]
    if isinstance(params.star_arg, cst.Param):
        names.append(params.star_arg.name.value)
    if params.star_kwarg is not None:
        names.append(params.star_kwarg.name.value)
    return frozenset(names)


class PredicateScope:
    """Mixin for transformers that fold: knows the parameters of the enclosing functions/lambdas."""

    # An attribute constant's store in `__init__` goes only where every read of it folds: fold_platform
    # folds them in every position; remove_dead_branches only decides `if` tests (`or self.is_minimax_m3`
    # in an argument stays), so it drops a store at the end, where no read is left (drop_unread_attribute_stores).
    DROPS_ATTRIBUTE_STORES: ClassVar[bool] = True

    def _setup_folding(self, inputs: CodemodInputs) -> None:
        self._params: list[frozenset[str]] = []
        self._reported_params: set[str] = set()
        self.folder = Folder(inputs, self._is_param, self._param_seen, self._param_value)
        self.folder.module = self.context.full_module_name or ""
        # the fixed parameters of this module's functions: qualname -> {parameter: value}; rules.features'
        # are in the table only in the features batch
        prefix = self.folder.module + ":"
        fixed = fixed_values([*inputs.rules.platform.parameters,
                              *(p for f in inputs.table.features for p in f.parameters)])
        self._fixed_rules = {function[len(prefix):]: values for function, values in fixed.items()
                             if function.startswith(prefix)}
        if inputs.constant_parameters:  # the tree's own constant parameters (graph/constant_parameters)
            for qualname, values in inputs.constant_parameters.folds(self.folder.module).items():
                self._fixed_rules[qualname] = {**values, **self._fixed_rules.get(qualname, {})}
        self._names: list[str] = []  # enclosing classes and functions
        self._fixed: list[dict[str, bool]] = []  # per enclosing function/lambda: its fixed parameters
        self._function_constants: dict[str, dict[str, Optional[bool]]] = {}  # qualname -> its local constants
        self._outer_constants: list[dict[str, Optional[bool]]] = []  # the folder's constants outside each function
        self._served_locals: dict[str, dict[str, ServedLocal]] = {}  # qualname -> its served locals
        self._unread_attributes: frozenset[str] = frozenset()  # attributes only ever stored (unread_attributes)
        self._outer_served: list[dict[str, ServedLocal]] = []  # the folder's served locals outside each function

    def _param_value(self, name: str) -> Optional[bool]:
        """The value rules.platform.parameters gives `name` when the innermost function binding it
        is the rule's function (a nested function or lambda rebinding it hides the rule)."""
        for names, fixed in zip(reversed(self._params), reversed(self._fixed)):
            if name in names:
                return fixed.get(name)
        return None

    def _bind_module(self, tree: cst.Module, original: Optional[cst.Module] = None) -> None:
        """Tell the folder what `tree` binds: names it imports from removed modules (isinstance folds),
        its flags (values that fold as arguments), its None constants and its constants (read from
        `original`, the file before this run's edits, when given); widen the prune pattern so statements
        naming them are visited."""
        from shrinker.codemods.removed_imports import find_dead_imports, module_and_package

        module, package = module_and_package(self.context)
        dead = frozenset(a.bound for aliases in find_dead_imports(tree, package, self.inputs.removed).values()
                         for a in aliases if a.alias is not None and "." not in a.bound)
        self.folder.removed_classes = dead | (self.inputs.tested_only_classes or frozenset())
        self.folder.flags = module_flags(tree)
        self.folder.none_names = none_constants(tree, self.folder)
        self.folder.empty_names = empty_constants(tree, self.folder, self.inputs.single_file_words)
        self.folder.string_collections = string_collections(tree, self.folder, self.inputs.single_file_words)
        # before the constants: a name bound to a constant call's value holds that constant
        self.folder.constant_calls, self.folder.constant_methods = constant_calls(
            tree, module or "", package, self.inputs, self.folder)
        self.folder.called_methods = self.inputs.called_methods or {}
        before = original if original is not None else tree
        self.folder.constants = module_constants(before, self.folder)
        self._served_locals = served_locals(before, self.folder)
        self._function_constants = function_constants(before, self.folder, attribute_vocabulary(self.inputs.rules),
                                                      self._served_locals)
        self.folder.attribute_constants = attribute_constants(before, self.folder, self.inputs.single_file_words,
                                                              attribute_vocabulary(self.inputs.rules))
        self._unread_attributes = unread_attributes(
            tree, self.inputs.single_file_words, attribute_vocabulary(self.inputs.rules),
            frozenset(p.name for p in self.inputs.rules.platform.predicates if p.value is False))
        literals = self.inputs.returned_literals
        self.folder.literal_attributes = dict(literals.attributes.get(module or "", {})) if literals else {}
        widen = (self.folder.removed_classes | self.folder.none_names | self.folder.empty_names | frozenset(self.folder.constants)
                 | frozenset(self.folder.string_collections)
                 | frozenset(self.folder.attribute_constants) | frozenset(self.folder.constant_calls)
                 | frozenset(self.folder.constant_methods) | frozenset(self.folder.called_methods)
                 | frozenset(self.folder.literal_attributes)
                 | (self.inputs.constant_parameters.folded_names(module or "") if self.inputs.constant_parameters
                    else frozenset())
                 | frozenset(name for served in self._served_locals.values() for name in served)
                 | frozenset(name for local in self._function_constants.values() for name in local))
        if widen and self._prune is not None:
            self._prune = re.compile(self._prune.pattern + "|" + "|".join(rf"\b{re.escape(n)}\b" for n in sorted(widen)))

    def _is_param(self, name: str) -> bool:
        return any(name in names for names in self._params)

    def _param_seen(self, node: cst.Name) -> None:
        # `def get_moe_padding_size(is_aiter_moe):` a parameter, not the predicate: left alone, which is
        # always right, so it is no finding (it would stop the batch for nothing).
        self._reported_params.add(node.value)

    def visit_ClassDef(self, node: cst.ClassDef) -> Optional[bool]:
        self._names.append(node.name.value)
        return True

    def leave_ClassDef(self, original_node: cst.ClassDef, updated_node: cst.ClassDef):
        self._names.pop()
        return updated_node

    def visit_FunctionDef(self, node: cst.FunctionDef) -> Optional[bool]:
        self._names.append(node.name.value)
        self._params.append(param_names(node.params))
        self._fixed.append(self._fixed_rules.get(".".join(self._names), {}))
        self._outer_constants.append(self.folder.constants)
        self._outer_served.append(self.folder.served_locals)
        qualname = ".".join(self._names)
        local = self._function_constants.get(qualname, {})
        if local:
            # its own parameters cannot shadow them: a parameter of that name is a second binding
            self.folder.constants = {**self.folder.constants, **local}
        served = self._served_locals.get(qualname, {})
        # a nested function's parameter hides an outer served local of its name
        outer = {n: v for n, v in self.folder.served_locals.items() if n not in self._params[-1]}
        self.folder.served_locals = {**outer, **served}
        return True

    def leave_FunctionDef(self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef):
        local = self._function_constants.get(".".join(self._names), {})
        self._names.pop()
        self._params.pop()
        self._fixed.pop()
        self.folder.constants = self._outer_constants.pop()
        self.folder.served_locals = self._outer_served.pop()
        result, dropped = drop_unread_constants(updated_node, local)
        if dropped:
            self.count("constants_dropped", dropped)
        result = self._drop_idle_globals(result)
        if self.folder.attribute_constants and self.DROPS_ATTRIBUTE_STORES:
            result = self._drop_attribute_stores(result)
        return result

    def _drop_idle_globals(self, function: cst.FunctionDef) -> cst.FunctionDef:
        """`function` without the names of its `global` statements that nothing in it binds (bindings.idle_globals).
        A statement left declaring none goes; its comments stay, on the statement after it (at a function's top
        without the blank lines that set it off)."""
        idle = idle_globals(function, self.folder)
        if not idle:
            return function
        scope = self

        def only_idle(stmt: cst.BaseStatement) -> bool:
            return (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1
                    and isinstance(stmt.body[0], cst.Global)
                    and all(item.name.value in idle for item in stmt.body[0].names))

        class _Globals(cst.CSTTransformer):
            def leave_Global(self, original_node: cst.Global, updated_node: cst.Global):
                kept = [item for item in updated_node.names if item.name.value not in idle]
                if len(kept) == len(updated_node.names) or not kept:
                    return updated_node  # a statement of idle names only goes with its block's edit
                scope.count("idle_globals_dropped", len(updated_node.names) - len(kept))
                kept[-1] = kept[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
                return updated_node.with_changes(names=kept)

            def leave_IndentedBlock(self, original_node: cst.IndentedBlock, updated_node: cst.IndentedBlock):
                if not any(only_idle(stmt) for stmt in updated_node.body):
                    return updated_node
                kept: list[cst.BaseStatement] = []
                carried: list[cst.EmptyLine] = []
                dropped = False
                for stmt in updated_node.body:
                    if only_idle(stmt):
                        scope.count("idle_globals_dropped", len(stmt.body[0].names))
                        carried += stmt.leading_lines
                        dropped = True
                        continue
                    own = list(stmt.leading_lines)
                    if not kept and dropped:  # now a block's first statement: no blank lines set it off
                        while own and own[0].comment is None:
                            own.pop(0)
                    kept.append(stmt.with_changes(leading_lines=[*carried, *own]))
                    carried = []
                comments = [line for line in carried if line.comment is not None]
                if not kept:
                    return updated_node.with_changes(body=[cst.SimpleStatementLine([cst.Pass()], leading_lines=comments)])
                # a block that ended in one keeps its comments as the block's trailing lines
                return updated_node.with_changes(body=kept, footer=[*comments, *updated_node.footer])

        return function.with_changes(body=function.body.visit(_Globals()))

    def drop_unread_attribute_stores(self, module: cst.Module) -> cst.Module:
        """`module` without the stores of the attribute constants no `self.X` reads any more, and of the
        attributes nothing could ever read (attribute_constants.unread_attributes)."""
        unread = self._unread_attributes
        if self.folder.attribute_constants:
            unread |= frozenset(self.folder.attribute_constants) - read_attributes(module)
        if not unread:
            return module
        scope = self

        class _Methods(cst.CSTTransformer):
            def leave_FunctionDef(self, original_node, updated_node):
                return scope._drop_attribute_stores(updated_node, unread)

        return module.visit(_Methods())

    def _drop_attribute_stores(self, init: cst.FunctionDef, names=None) -> cst.FunctionDef:
        """A method (`__init__`, or another that stores the same constant again) without the top-level
        stores of its attribute constants (every read folded), or of `names` among them."""
        if not isinstance(init.body, cst.IndentedBlock):
            return init
        names = self.folder.attribute_constants if names is None else names

        def is_store(stmt: cst.BaseStatement) -> bool:
            if not (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1):
                return False
            small = stmt.body[0]
            if isinstance(small, cst.Assign) and len(small.targets) == 1:
                target = small.targets[0].target
            elif isinstance(small, cst.AnnAssign) and small.value is not None:
                target = small.target
            else:
                return False
            return (isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name)
                    and target.value.value == "self" and target.attr.value in names and self.folder.pure(small.value))

        kept = [s for s in init.body.body if not is_store(s)]
        if len(kept) == len(init.body.body):
            return init
        self.count("attribute_constants_dropped", len(init.body.body) - len(kept))
        if not kept:
            kept = [cst.SimpleStatementLine([cst.Pass()])]
        return init.with_changes(body=init.body.with_changes(body=kept))

    def visit_Lambda(self, node: cst.Lambda) -> Optional[bool]:
        self._params.append(param_names(node.params))
        self._fixed.append({})
        return True

    def leave_Lambda(self, original_node: cst.Lambda, updated_node: cst.Lambda):
        self._params.pop()
        self._fixed.pop()
        return updated_node


@lru_cache(maxsize=8)
def _trigger_regex(names: tuple[str, ...], strings: tuple[str, ...], families: tuple[str, ...] = (),
                   patterns: tuple[str, ...] = ()) -> re.Pattern:
    parts = []
    for name in names:
        parts.append(name_glob_regex(name))
    return re.compile("|".join(parts + vocabulary_patterns(strings, families) + list(patterns)))


# (id(modules), id(names)) -> (modules, names, regex): the entry holds both objects, so a freed set's id
# reused by a new one never finds a stale regex (the symbol batch builds a Removed per cut round)
_REMOVED_MODULES_RE: dict[tuple[int, int], tuple[object, object, re.Pattern]] = {}
_NO_NAMES: dict[str, frozenset[str]] = {}


def mentions_removed_module(source: str, inputs: CodemodInputs) -> bool:
    """The source names a removed module (it may test a class of it: `isinstance(cfg, ModelSlimConfig)`), or
    a name a kept package lost with one (`from sglang.srt.configs import BailingHybridConfig`)."""
    modules = inputs.removed.modules
    if not modules:
        return False
    lost = inputs.removed.names or _NO_NAMES
    key = (id(modules), id(lost))
    cached = _REMOVED_MODULES_RE.get(key)
    if cached is None or cached[0] is not modules or cached[1] is not lost:
        words = sorted({n for names in lost.values() for n in names})
        regex = re.compile("|".join([*(re.escape(m) for m in sorted(modules, key=len, reverse=True)),
                                     *(rf"\b{re.escape(n)}\b" for n in words)]))
        cached = _REMOVED_MODULES_RE[key] = (modules, lost, regex)
    return cached[2].search(source) is not None


def predicate_triggers(inputs: CodemodInputs, extra: tuple[str, ...] = ()) -> re.Pattern:
    """A regex that matches every source text where some predicate, platform string, removed
    architecture, the served model_type or an option holding a registry key occurs (or one of the `extra`
    words)."""
    platform = inputs.rules.platform
    return _trigger_regex(tuple(p.name for p in platform.predicates) + tuple(p.name for p in platform.parameters)
                          + tuple(platform.attributes) + feature_words(inputs) + tuple(extra)
                          + constant_words(inputs)
                          + (inputs.returned_literals.words() if inputs.returned_literals else ())
                          + tuple(sorted(inputs.unset_attributes or ()))
                          + tuple(sorted(inputs.tested_only_classes or ()))
                          + tuple(sorted({m for ms in (inputs.never_produced_members or {}).values() for m in ms}))
                          + (inputs.constant_parameters.words() if inputs.constant_parameters else ())
                          + _sorted_names(inputs.table.architectures)
                          + model_type_words(inputs.rules.architectures)
                          + served_words(inputs.rules.architectures)
                          + (held_words(inputs.rules) if inputs.table.options else ()),
                          tuple(platform.strings.strings), tuple(platform.strings.families),
                          tuple(device_probe_patterns(platform)))


@lru_cache(maxsize=8)
def _sorted_names(names: frozenset[str]) -> tuple[str, ...]:
    return tuple(sorted(names))


def feature_words(inputs: CodemodInputs) -> tuple[str, ...]:
    """Names the feature decisions fold (only when the batch's table holds them)."""
    words: list[str] = []
    for feature in inputs.table.features:
        words += [p.name for p in feature.predicates] + [v.name for v in feature.values]
        words += [*feature.calls, *(c.name for c in feature.constants), *(p.name for p in feature.parameters)]
    return tuple(words)


class _BoundElements(TargetVisitor):
    def __init__(self) -> None:
        self.found: set[int] = set()

    def target(self, node: cst.CSTNode) -> None:
        self.found.update(id(e) for e in cst.matchers.findall(node, cst.matchers.Element()))


def bound_elements(tree: cst.Module) -> frozenset[int]:
    """The ids of the tuple and list elements that a statement binds (`a, self.b = ...`, `for x, y in`)."""
    visitor = _BoundElements()
    tree.visit(visitor)
    return frozenset(visitor.found)


class FoldPlatformPredicates(PredicateScope, ShrinkCodemod):
    """Simplify boolean tests and derived flags with the CUDA values of the platform predicates."""

    NAME = "fold_platform"
    DESCRIPTION = "fold platform predicates (is_hip(), _is_npu, _use_aiter, device == 'npu') to constants"

    def __init__(self, context, inputs: CodemodInputs) -> None:
        super().__init__(context, inputs)
        self._setup_folding(inputs)
        self._bound_elements: frozenset[int] = frozenset()
        self._whole_operands: set[int] = set()  # ids of literals compared whole (==, !=, is)

    @classmethod
    def wants(cls, source: str, inputs: CodemodInputs) -> bool:
        return predicate_triggers(inputs).search(source) is not None or mentions_removed_module(source, inputs)

    def prune_pattern(self) -> re.Pattern:
        return predicate_triggers(self.inputs)

    def transform_module(self, tree: cst.Module) -> cst.Module:
        self._bind_module(tree)
        self._bound_elements = bound_elements(tree)
        return super().transform_module(tree)

    # -- values: arguments, return values, lambda bodies (`disable=_is_npu` -> `disable=False`) ----
    def _value(self, node: cst.BaseExpression) -> Optional[cst.BaseExpression]:
        """`node` folded as a value (exact: `X or False` stays unless X is a bool), None when unchanged."""
        folded = self.folder.fold(node, as_value=True)
        if not folded.pred or folded.node is node or _walrus_count(folded.node) < _walrus_count(node):
            return None
        return swap_expression(node, folded.node)

    def _with_value(self, node, what: str, fold: bool = True):
        """`node` with its `value` folded as a value (counted as `what`), or `node` when nothing folds."""
        value = self._value(node.value) if fold and node.value is not None else None
        if value is None:
            return node
        self.count(what)
        return node.with_changes(value=value)

    def leave_Arg(self, original_node: cst.Arg, updated_node: cst.Arg) -> cst.Arg:
        return self._with_value(updated_node, "arguments_folded", fold=not updated_node.star)

    def leave_Element(self, original_node: cst.Element, updated_node: cst.Element) -> cst.Element:
        """A tuple, list or set element that is an expression (`("PD prefill on ROCm", mode == "prefill"
        and get_platform().is_hip)`): folded as a value. So is a name or attribute read there
        (`(get_platform().is_hip, "ROCm")`), but not one an assignment, loop or `del` binds."""
        fold = isinstance(updated_node.value, _VALUE_KINDS) or (
            isinstance(updated_node.value, (cst.Name, cst.Attribute)) and id(original_node) not in self._bound_elements)
        return self._with_value(updated_node, "elements_folded", fold=fold)

    def leave_DictElement(self, original_node: cst.DictElement, updated_node: cst.DictElement) -> cst.DictElement:
        return self._with_value(updated_node, "elements_folded")

    def leave_Return(self, original_node: cst.Return, updated_node: cst.Return) -> cst.Return:
        return self._with_value(updated_node, "return_values_folded")

    def leave_FormattedStringExpression(self, original_node: cst.FormattedStringExpression,
                                        updated_node: cst.FormattedStringExpression):
        """A replacement field is a value (`f"needs gfx95: {is_gfx95_supported()}"` → `{False}`), unless
        it prints its own text (`{x=}`)."""
        value = None if updated_node.equal is not None else self._value(updated_node.expression)
        if value is None:
            return updated_node
        self.count("fstring_fields_folded")
        return updated_node.with_changes(expression=value)

    def leave_Lambda(self, original_node: cst.Lambda, updated_node: cst.Lambda) -> cst.Lambda:
        value = self._value(updated_node.body)  # before the lambda's parameters leave scope
        if value is not None:
            self.count("lambda_bodies_folded")
            updated_node = updated_node.with_changes(body=value)
        return super().leave_Lambda(original_node, updated_node)

    def leave_Assert(self, original_node: cst.Assert, updated_node: cst.Assert):
        """`assert not _is_npu and ...` that holds on CUDA checks nothing: it goes. One that fails on CUDA
        (`assert is_npu(), "only on Ascend"`) keeps its message, its test written `False`: the answer
        upstream gives there, without reading a predicate the platform batch may take away
        (`get_platform().is_npu` once `is_npu` left the probes raised AttributeError instead)."""
        folded = self.folder.fold(updated_node.test)
        if folded.pred and folded.value is True and folded.pure:
            self.count("asserts_removed")
            return cst.RemoveFromParent()
        if folded.pred and folded.value is False and folded.pure:
            if isinstance(updated_node.test, cst.Name) and updated_node.test.value == "False":
                return updated_node
            self.count("asserts_failing_on_cuda")
            test = cst.Name("False")
            return updated_node.with_changes(test=test, whitespace_after_assert=spaced(updated_node.whitespace_after_assert, test))
        test = self._partial(updated_node.test)
        if test is None:
            return updated_node
        self.count("assert_tests_simplified")
        return updated_node.with_changes(test=test, whitespace_after_assert=spaced(updated_node.whitespace_after_assert, test))

    def _partial(self, test: cst.BaseExpression) -> Optional[cst.BaseExpression]:
        """The simplified test, or None when nothing folds or the whole test is a constant."""
        folded = self.folder.fold(test)
        if not folded.pred or folded.node is test:
            return None
        if folded.value is not None and folded.pure:
            return None  # a constant test: remove_dead_branches decides the branch
        if _walrus_count(folded.node) < _walrus_count(test):
            return None  # simplifying would drop an assignment expression (`(x := f()) or y`)
        return folded.node

    # -- registrations of removed modules; feature set-up calls and constants (a features batch only) --
    def leave_SimpleStatementLine(self, original_node: cst.SimpleStatementLine,
                                  updated_node: cst.SimpleStatementLine):
        if len(updated_node.body) != 1:
            return updated_node
        stmt = updated_node.body[0]
        if isinstance(stmt, cst.Expr) and isinstance(stmt.value, cst.Call) and self._other_devices_record(stmt.value):
            self.count("platform_registrations_removed")
            return cst.RemoveFromParent()
        if isinstance(stmt, cst.Expr) and isinstance(stmt.value, cst.Call) and self.folder.does_nothing(stmt.value):
            self.count("none_calls_removed")
            return cst.RemoveFromParent()
        if isinstance(stmt, cst.Expr) and isinstance(stmt.value, cst.Call) and self._registers_removed(stmt.value):
            # in any batch that deletes modules: the platform batch's npu_memcache left its string naming nothing
            features = bool(self.inputs.table.features)
            self.count("feature_registrations_removed" if features else "removed_module_registrations_removed")
            return cst.RemoveFromParent()
        if not self.inputs.table.features:
            return updated_node
        if isinstance(stmt, cst.Expr) and isinstance(stmt.value, cst.Call) and self._setup_call(stmt.value):
            self.count("feature_calls_removed")
            return cst.RemoveFromParent()
        if isinstance(stmt, cst.ImportFrom):
            assignments = self._constants(stmt)
            if assignments:
                self.count("feature_constants_inlined", len(assignments))
                first = assignments[0].with_changes(leading_lines=updated_node.leading_lines)
                return cst.FlattenSentinel([first, *assignments[1:]])
        return updated_node

    def _other_devices_record(self, call: cst.Call) -> bool:
        """`register_kernel(KernelSpec(..., capabilities=frozenset({CapabilityRequirement.HIP})))`: a
        registration whose arguments run no code, of a record whose devices ([platform].capability_keywords)
        are only other platforms': never dispatched on CUDA (the planner drops the edge to its target)."""
        keywords = self.inputs.rules.platform.capability_keywords
        if not keywords or not call.args or not all(self.folder.pure(a.value) for a in call.args):
            return False
        module = cst.Module([])
        return any(arg.keyword is not None and arg.keyword.value in keywords
                   and other_devices_only(module.code_for_node(arg.value), self.inputs.table.strings)
                   for inner in cst.matchers.findall(call, cst.matchers.Call()) for arg in inner.args)

    def _setup_call(self, call: cst.Call) -> bool:
        """`initialize_mamba_selective_state_update_backend(self.server_args)`: a set-up call of a cut feature."""
        name = _simple_name(call.func)
        calls = {c for f in self.inputs.table.features for c in f.calls}
        return (name in calls and isinstance(call.func, cst.Name)
                and all(self.folder.pure(a.value) for a in call.args))

    def _registers_removed(self, call: cst.Call) -> bool:
        """`Factory.register_backend("aibrix", "sglang...aibrix_kvcache_storage", "Cls")`,
        `register_kernel(KernelSpec(target="sglang...causal_conv1d:causal_conv1d_fwd", ...))`: a
        registration that names a removed module by string and whose arguments run no code (literals,
        names, and calls the rules declare pure, such as the records of `[platform].pure_methods`)."""
        if not call.args or not all(self.folder.pure(a.value) for a in call.args):
            return False
        strings = [_string(n) for a in call.args for n in cst.matchers.findall(a.value, cst.matchers.SimpleString())]
        removed = self.inputs.removed
        return any(s and "." in s and removed.module_removed(s.split(":")[0]) for s in strings)

    def _constants(self, node: cst.ImportFrom) -> list[cst.SimpleStatementLine]:
        """`from <removed> import CHUNK_SIZE as FLA_CHUNK_SIZE` -> `FLA_CHUNK_SIZE = 64` when every name
        imported is a constant the rules give (anything else stays for remove_dead_imports)."""
        if node.relative or node.module is None or isinstance(node.names, cst.ImportStar):
            return []
        module = cst.helpers.get_full_name_for_node(node.module)
        known = {c.name: c.value for f in self.inputs.table.features for c in f.constants if c.module == module}
        out = []
        for alias in node.names:
            name = cst.helpers.get_full_name_for_node(alias.name)
            if name not in known:
                return []
            bound = alias.asname.name.value if alias.asname is not None else name
            value = cst.parse_expression(repr(known[name]))
            # the comment says where the value came from (the module is gone)
            note = cst.TrailingWhitespace(whitespace=cst.SimpleWhitespace("  "),
                                          comment=cst.Comment(f"# {module}.{name} (removed feature)"))
            out.append(cst.SimpleStatementLine(body=[cst.Assign(targets=[cst.AssignTarget(cst.Name(bound))],
                                                                 value=value)], trailing_whitespace=note))
        return out

    def leave_If(self, original_node: cst.If, updated_node: cst.If) -> cst.If:
        test = self._partial(updated_node.test)
        if test is None:
            return updated_node
        self.count("tests_simplified")
        return updated_node.with_changes(
            test=test, whitespace_before_test=spaced(updated_node.whitespace_before_test, test))

    def leave_IfExp(self, original_node: cst.IfExp, updated_node: cst.IfExp) -> cst.IfExp:
        test = self._partial(updated_node.test)
        if test is None:
            return updated_node
        self.count("ternary_tests_simplified")
        return updated_node.with_changes(
            test=test,
            whitespace_after_if=spaced(updated_node.whitespace_after_if, test),
            whitespace_before_else=_space_before(updated_node.whitespace_before_else, test))

    def leave_CompIf(self, original_node: cst.CompIf, updated_node: cst.CompIf) -> cst.CompIf:
        test = self._partial(updated_node.test)
        if test is None:
            return updated_node
        self.count("comprehension_tests_simplified")
        return updated_node.with_changes(
            test=test, whitespace_before_test=spaced(updated_node.whitespace_before_test, test))

    def _platform_registration(self, stmt: cst.BaseStatement) -> bool:
        """`@register_lora_backend("ascend") def create_ascend_backend(): ...`: a factory registered
        under another platform's name is looked up only on that platform."""
        if not isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
            return False
        for deco in stmt.decorators:
            call = deco.decorator
            if (isinstance(call, cst.Call) and len(call.args) == 1 and call.args[0].keyword is None
                    and not call.args[0].star and _string(call.args[0].value) in self.inputs.table.strings):
                return True
        return False

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        body = [stmt for stmt in updated_node.body if not self._platform_registration(stmt)]
        if len(body) == len(updated_node.body):
            return updated_node
        self.count("platform_registrations_removed", len(updated_node.body) - len(body))
        return updated_node.with_changes(body=body)

    def leave_Dict(self, original_node: cst.Dict, updated_node: cst.Dict) -> cst.BaseExpression:
        """Device-keyed tables (`{"npu": NPUGraphRunner, "cuda": ...}`): an entry keyed by another
        platform's name is looked up only on that platform, so it goes. `device_keys` ("cpu") go too,
        but only from a table that has a platform-string key (elsewhere "cpu" is an ordinary value)."""
        strings = self.inputs.table.strings
        keys = [_string(e.key) if isinstance(e, cst.DictElement) else None for e in updated_node.elements]
        if not any(k in strings for k in keys if k is not None):
            return updated_node
        device_keys = frozenset(self.inputs.rules.platform.strings.device_keys)
        drop = {id(e) for e, k in zip(updated_node.elements, keys) if k is not None and (k in strings or k in device_keys)}
        result = drop_from_literal(updated_node, lambda e: id(e) in drop)
        if result is None:
            return updated_node
        self.count("platform_entries_removed", len(drop))
        return result

    def _architecture_list(self, node: cst.BaseExpression) -> cst.BaseExpression:
        """A literal list of architectures: the removed ones go, as no served model can be one of them.
        Such a list holds strings and starred lists only, and nearly every string is an architecture the
        plan knows (kept or removed): 0.5.23's `multimodal_model_archs` names 78 known and 2 that no
        model file registers (Grok1VForCausalLM), which stay with the kept ones."""
        removed = self.inputs.table.architectures
        if not removed or not node.elements:
            return node
        known = removed | frozenset(self.inputs.rules.architectures.keep)
        if any(not isinstance(e, cst.StarredElement) and _string(e.value) is None for e in node.elements):
            return node
        names = [_string(e.value) for e in node.elements if isinstance(e, cst.Element)]
        share = sum(n in known for n in names) / len(names) if names else 0.0
        if share < _ARCHITECTURE_LIST_SHARE or not any(n in removed for n in names):
            return node
        result = drop_from_literal(node, lambda e: _string(e.value) in removed)
        if result is None:
            return node
        self.count("architectures_dropped", sum(n in removed for n in names))
        return result

    def _empty_unpackings(self, node: cst.BaseExpression) -> cst.BaseExpression:
        """`*MIMO_V2_MODEL_ARCHS` in a literal, where the name holds an empty tuple or frozenset
        (Folder.empty_names): it unpacks nothing, so it goes (a set that would empty stays)."""
        empty = self.folder.empty_names
        if not empty:
            return node
        result = drop_from_literal(node, lambda e: isinstance(e, cst.StarredElement)
                                   and isinstance(e.value, cst.Name) and e.value.value in empty)
        if result is None:
            return node
        self.count("empty_unpackings_removed")
        return result

    def visit_Comparison(self, node: cst.Comparison) -> None:
        # a literal compared whole (`architectures == ["Qwen2ForCausalLM"]`) keeps its elements: dropping
        # one changes what it equals (`== []` holds for an empty list); membership (`in`) may lose them
        operands = [node.left, *(t.comparator for t in node.comparisons)]
        for i, target in enumerate(node.comparisons):
            if not isinstance(target.operator, (cst.In, cst.NotIn)):
                self._whole_operands.update({id(operands[i]), id(operands[i + 1])})

    def leave_List(self, original_node: cst.List, updated_node: cst.List) -> cst.BaseExpression:
        return self._literal(original_node, updated_node)

    def leave_Tuple(self, original_node: cst.Tuple, updated_node: cst.Tuple) -> cst.BaseExpression:
        return self._literal(original_node, updated_node)

    def leave_Set(self, original_node: cst.Set, updated_node: cst.Set) -> cst.BaseExpression:
        return self._literal(original_node, updated_node)

    def _literal(self, original: cst.BaseExpression, updated) -> cst.BaseExpression:
        node = self._empty_unpackings(updated)  # `*EMPTY` adds nothing, compared whole or not
        return node if id(original) in self._whole_operands else self._architecture_list(node)

    def _fold_value(self, value: Optional[cst.BaseExpression]) -> Optional[cst.BaseExpression]:
        if value is None or not isinstance(value, (cst.BooleanOperation, cst.UnaryOperation, cst.Comparison)):
            return None
        if isinstance(value, cst.UnaryOperation) and not isinstance(value.operator, cst.Not):
            return None
        folded = self.folder.fold(value)
        if not folded.pred or folded.node is value or _walrus_count(folded.node) < _walrus_count(value):
            return None
        return folded.node

    def _local_flag(self, node: cst.Assign) -> Optional[cst.BaseExpression]:
        """`_use_mlx = use_mlx()` inside a function, `self.use_npu_mxfp8 = use_npu_mxfp8(cfg)` anywhere:
        the constant (the predicate's import can then go). Module-level flags (`_is_hip = is_hip()`)
        stay: other modules import them."""
        fact = isinstance(node.value, cst.Attribute) and platform_fact(node.value, self.inputs.table.platform)
        if not (isinstance(node.value, cst.Call) or fact) or len(node.targets) != 1:
            return None
        target = node.targets[0].target
        if not (isinstance(target, cst.Attribute) or (self._params and isinstance(target, cst.Name))):
            return None
        folded = self.folder.fold(node.value)
        if folded.pred and folded.pure and folded.value is not None:
            # the value, not its truth: a returns_none predicate's call folds to `None`
            return folded.node if _is_none(folded.node) else constant(folded.value)
        return None

    def _tested_only(self, node: cst.CSTNode) -> bool:
        return isinstance(node, cst.Name) and node.value in (self.inputs.tested_only_classes or ())

    def _without_tested_only(self, node: cst.Assign) -> Optional[cst.Assign]:
        """`_SIZEABLE_POOLS = (MHATokenToKVPool, MiniMaxSparseKVPool)` at module level, a class only tested
        against in it: the class goes from the tuple (graph/tested_classes counts such a tuple's classes tested
        only when every read of the tuple is an isinstance class, so no object of it can match)."""
        if (self._names or len(node.targets) != 1 or not isinstance(node.targets[0].target, cst.Name)
                or not isinstance(node.value, cst.Tuple)
                or not all(isinstance(e, cst.Element) and isinstance(e.value, cst.Name) for e in node.value.elements)
                or not any(self._tested_only(e.value) for e in node.value.elements)):
            return None
        value = drop_from_literal(node.value, lambda e: self._tested_only(e.value))
        return None if value is None else node.with_changes(value=value)

    def leave_Annotation(self, original_node: cst.Annotation, updated_node: cst.Annotation) -> cst.Annotation:
        """`kvcache: HiSparseDSATokenToKVPool | MiniMaxSparseKVPool`: a class only tested against leaves a `|`
        union of annotations (graph/tested_classes admits it in plain functions' and variables' annotations
        only, which nothing builds objects from); a union of such classes alone stays."""
        annotation = self._union_without_tested_only(updated_node.annotation)
        if annotation is updated_node.annotation or annotation is None:
            return updated_node
        self.count("tested_only_classes_unannotated")
        return updated_node.with_changes(annotation=annotation)

    def _union_without_tested_only(self, node: cst.BaseExpression) -> Optional[cst.BaseExpression]:
        """`node` without the tested-only classes of its `|` union; None when nothing would be left."""
        if self._tested_only(node):
            return None
        if not (isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.BitOr)):
            return node
        left, right = self._union_without_tested_only(node.left), self._union_without_tested_only(node.right)
        if left is None or right is None:
            return left if right is None else right
        return node if left is node.left and right is node.right else node.with_changes(left=left, right=right)

    def leave_Assign(self, original_node: cst.Assign, updated_node: cst.Assign) -> cst.Assign:
        pruned = self._without_tested_only(updated_node)
        if pruned is not None:
            self.count("tested_only_classes_untupled")
            return pruned
        local = self._local_flag(updated_node)
        if local is not None:
            self.count("flags_folded")
            return updated_node.with_changes(value=local)
        value = self._fold_value(updated_node.value)
        if value is None:
            value = self._assigned_value(updated_node.value)
        if value is None:
            return updated_node
        self.count("flags_folded")
        return updated_node.with_changes(value=value)

    def _assigned_value(self, value: cst.BaseExpression) -> Optional[cst.BaseExpression]:
        """The value of an assignment with what folds as a value folded: a flag standing alone
        (`self.use_fused_clamp_act_mul = _is_hip` -> `= False`, `IS_QUICK_AR_AVAILABLE = _is_hip`) or a
        boolean operand nested in it (`x and ((a or (_is_hip and b)) if c else d)` -> `(a or False)`).
        Exact for values, as arguments are; tests inside it (a ternary's) were simplified already."""
        if isinstance(value, cst.Name):
            return self._value(value)
        result = self._operands(value)
        return None if result is value else result

    def _operands(self, node: cst.BaseExpression) -> cst.BaseExpression:
        """`node` with each boolean operand that folds as a value folded, the outermost first."""
        if isinstance(node, (cst.BooleanOperation, cst.UnaryOperation, cst.Comparison)):
            folded = self._value(node)
            if folded is not None:
                return folded
        if isinstance(node, cst.BooleanOperation):
            left, right = self._operands(node.left), self._operands(node.right)
            return node if left is node.left and right is node.right else node.with_changes(left=left, right=right)
        if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Not):
            inner = self._operands(node.expression)
            return node if inner is node.expression else node.with_changes(expression=inner)
        if isinstance(node, cst.IfExp):  # its test is leave_IfExp's
            body, orelse = self._operands(node.body), self._operands(node.orelse)
            return node if body is node.body and orelse is node.orelse else node.with_changes(body=body, orelse=orelse)
        return node

    def leave_AnnAssign(self, original_node: cst.AnnAssign, updated_node: cst.AnnAssign) -> cst.AnnAssign:
        value = self._fold_value(updated_node.value)
        if value is None and updated_node.value is not None:
            value = self._assigned_value(updated_node.value)
        if value is None:
            return updated_node
        self.count("flags_folded")
        return updated_node.with_changes(value=value)


class FoldFeatures(FoldPlatformPredicates):
    """The same folding for a features batch, whose predicate table holds the feature decisions alone
    (apply builds it): it implies remove_dead_branches but not the platform import/bound codemods,
    which belong to the platform batch (their findings would stop this batch for platform code)."""

    NAME = "fold_features"
    DESCRIPTION = "fold feature decisions (mambaish_config(...) -> None, fa_impl_ver == 4 -> False) to constants"


class _PlatformTests(cst.CSTVisitor):
    def __init__(self, inputs: CodemodInputs, module: cst.Module) -> None:
        self.module = module
        self._params: list[frozenset[str]] = []
        self.folder = Folder(inputs, lambda name: any(name in p for p in self._params))
        self.found: list[cst.CSTNode] = []

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._params.append(param_names(node.params))

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self._params.pop()

    def visit_Lambda(self, node: cst.Lambda) -> None:
        self._params.append(param_names(node.params))

    def leave_Lambda(self, original_node: cst.Lambda) -> None:
        self._params.pop()

    def _check(self, test: cst.BaseExpression) -> None:
        if self.folder.fold(test).pred:
            self.found.append(test)

    def visit_If(self, node: cst.If) -> None:
        self._check(node.test)

    def visit_IfExp(self, node: cst.IfExp) -> None:
        self._check(node.test)

    def visit_CompIf(self, node: cst.CompIf) -> None:
        self._check(node.test)


def platform_tests(source: str, inputs: CodemodInputs) -> list[tuple[int, str]]:
    """(line, test) of every `if`/`elif`/ternary/comprehension test in which a platform predicate
    still folds: after the platform codemods only tests kept for side effects should remain."""
    if predicate_triggers(inputs).search(source) is None:
        return []
    module = cst.parse_module(source)
    visitor = _PlatformTests(inputs, module)
    module.visit(visitor)
    lines = node_lines(module, visitor.found)
    return [(lines.get(id(n), 0), module.code_for_node(n).strip()) for n in visitor.found]


def _is_none(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value == "None"
