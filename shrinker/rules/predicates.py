"""What platform predicates are worth on CUDA, and the value of a guard expression under them.

Used by the planner (is this guarded import dead on CUDA?) and by the folding codemod.
"""

from __future__ import annotations

from fnmatch import fnmatchcase
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Iterable, Mapping, Sequence

import libcst as cst
import libcst.helpers

from shrinker.rules.patterns import pattern_matches
from shrinker.rules.schema import Architectures, Feature, FeatureValue, Platform, Predicate

# What a predicate's name looks like (`is_npu`, `_use_aiter_moe`, `has_amx`); group 1: its first word,
# which names the platform when it is one of the vocabulary's.
PREDICATE_NAME = re.compile(r"^_?(?:is|use|has)_([a-z0-9]+)(?:_\w*)?$", re.IGNORECASE)


class MethodNames:
    """The method names rules.platform.methods gives: exact names, or globs (`_build_ascend_*`)."""

    def __init__(self, patterns: list[str]) -> None:
        self.exact = frozenset(p for p in patterns if "*" not in p)
        self.globs = tuple(sorted(p for p in patterns if "*" in p))

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and (name in self.exact or any(fnmatchcase(name, g) for g in self.globs))

    def regex(self) -> re.Pattern:
        """Matches source text that may name one of these methods (a cheap pre-filter)."""
        parts = [re.escape(m) for m in sorted(self.exact)]
        parts += [r"\w*".join(re.escape(piece) for piece in g.split("*")) for g in self.globs]
        return re.compile("|".join(parts))


class PlatformStrings(frozenset):
    """Platform names (`"npu"`, `"aiter"`): a text names a platform when it is one, or when one of its
    `_`/`-` separated words is (`"kernel_ascend"`, `AttnForwardMethod.MHA_NPU` -> "mha_npu"). A word
    that is a chip family prefix followed by digits (`gfx` -> `gfx1250`) names one too."""

    def __new__(cls, strings: Iterable[str] = (), families: Iterable[str] = ()):
        self = super().__new__(cls, strings)
        self.family = (re.compile(rf"^(?:{'|'.join(map(re.escape, sorted(families)))})\d+$")
                       if families else None)
        return self

    def __init__(self, strings: Iterable[str] = (), families: Iterable[str] = ()) -> None:
        super().__init__()

    def word(self, word: str) -> bool:
        return frozenset.__contains__(self, word) or bool(self.family and self.family.match(word))

    def __contains__(self, text: object) -> bool:
        if not isinstance(text, str):
            return False
        low = text.lower()
        return self.word(low) or any(self.word(word) for word in re.split(r"[_-]", low))


def vocabulary_patterns(strings: Sequence[str], families: Sequence[str] = ()) -> list[str]:
    """Regex alternatives for text that names a platform of the vocabulary (a cheap pre-filter of the
    files a fold must read): a quoted name or one word of one ("kernel_ascend"), an enum member
    (.MHA_NPU), and a predicate named for it (`_is_xpu_available`, `is_gfx1250_supported`)."""
    words = [re.escape(s) for s in strings] + [re.escape(f) + r"\d+" for f in families]
    if not words:
        return []
    either = "|".join(words)
    upper = "|".join([re.escape(s.upper()) for s in strings] + [re.escape(f.upper()) + r"\d+" for f in families])
    return [rf"""['"](?:[\w.]*[_-])?(?:{either})(?:[_-][\w.-]*)?['"]""",
            rf"\.(?:\w*_)?(?:{upper})(?:_\w*)?\b",
            rf"\b_?(?:is|use|has)_(?:{either})(?:_\w*)?\b"]


@lru_cache(maxsize=8)
def _vocabulary_name(words: tuple[str, ...]) -> re.Pattern:
    either = "|".join(re.escape(w) for w in sorted(set(words), key=len, reverse=True))
    return re.compile(rf"(?:^|_)(?:{either})\d*(?=_|$)", re.IGNORECASE)


def attribute_vocabulary(rules) -> re.Pattern:
    """Attribute names one of whose `_`-separated parts names another platform (its vocabulary's strings
    and families: `use_aiter_...`, `use_gfx950_...`) or another model family (`is_gpt_oss`, `is_gemma4`)."""
    strings = rules.platform.strings
    return _vocabulary_name(tuple([*strings.strings, *strings.families, *rules.architectures.other_families]))


def feature_class_globs(rules) -> list[str]:
    """The class globs every [[features]] rule names (`classes`): removed with their feature."""
    return [c for f in rules.features for c in f.classes]


def without_predicates(platform: Platform) -> Platform:
    """The platform rules less their predicates and strings (a table of feature decisions alone)."""
    strings = platform.strings.model_copy(update={"strings": [], "device_keys": []})
    return platform.model_copy(update={"predicates": [], "strings": strings, "parameters": []})


@dataclass(frozen=True)
class HeldKeys:
    """A registry's `held_at` places and the keys the plan removes from it."""

    registry: str
    places: tuple[str, ...]
    removed: frozenset[str]


class PredicateTable:
    """Look up a name's value on CUDA: True/False, or None when unknown.

    With `features` (rules.features) the table also knows what a product decision fixes: feature
    predicates (`mambaish_config(cfg)` -> None), values a name never holds (`fa_impl_ver` != 4)."""

    def __init__(self, platform: Platform, features: Sequence[Feature] = (), architectures: Iterable[str] = (),
                 serving: Architectures | None = None, options: Sequence[HeldKeys] = ()):
        self.platform = platform
        # Places that hold a registry key the deployment picked, each with the keys the plan removes
        # (`self.tool_call_parser == "kimi_k3"` is False once the kimi_k3 parser went).
        self.options = tuple(o for o in options if o.places and o.removed)
        # Where the served model's architectures stand (`hf_config.architectures`, rules.architectures.served).
        self.served = tuple(serving.served) if serving else ()
        # The model_type values the kept architectures' checkpoints carry, and where the served model's
        # model_type stands (`*.hf_config.model_type`): `hf_config.model_type == "gpt_oss"` is False.
        self.model_types = frozenset(serving.model_types) if serving else frozenset()
        self.model_type_at = tuple(serving.model_type_at) if serving else ()
        # Functions that read an attribute as getattr does (rules.architectures.readers).
        self.readers = ("getattr", *(serving.readers if serving else ()))
        # The architectures the pruned tree serves (rules.architectures.keep): a substring of none of them
        # is in no served architecture name (`"KimiK3" in arch`).
        self.kept_architectures = frozenset(serving.keep) if serving else frozenset()
        # Architectures the profile removes: `arch == "Qwen2ForCausalLM"` holds only while serving one,
        # which the pruned tree cannot (its model registry lacks it), so the test is False there.
        self.architectures = frozenset(architectures)
        predicates = [*platform.predicates, *(p for f in features for p in f.predicates)]
        self._exact = {p.name: p for p in predicates if not any(c in p.name for c in "*?[")}
        self._globs = [p for p in predicates if any(c in p.name for c in "*?[")]
        self.strings = PlatformStrings(platform.strings.strings, platform.strings.families)
        self.values: dict[str, FeatureValue] = {v.name: v for f in features for v in f.values}
        self.features = tuple(features)

    def returns_none(self, name: str) -> bool:
        """`name(...)` is a feature predicate that returns None (so `is None` holds)."""
        pred = self._lookup(name)
        return pred is not None and pred.returns_none

    def never(self, name: str, module: str = "", param: bool = False) -> FeatureValue | None:
        """The rule saying which values `name` never holds here; a parameter only in the rule's modules."""
        rule = self.values.get(name)
        if rule is None:
            return None
        if param or (module and rule.modules):
            if not module or not any(pattern_matches(p, module) for p in rule.modules):
                return None
        return rule

    @lru_cache(maxsize=4096)
    def _lookup(self, name: str):
        return self.written_rule_for(name) or self._by_vocabulary(name)

    def _by_vocabulary(self, name: str) -> Predicate | None:
        """A called predicate no rule names but whose first word is a platform of the vocabulary
        ([platform.strings]: `is_xpu_available()`, `use_aiter_moe()`) is False on CUDA, as `is_xpu()`
        is: a new release's new platform check needs no new rule. Only the first word counts
        (`is_cuda_or_hip()`, `is_not_npu()` stay unknown), and only calls (a bare name may be a variable),
        with or without arguments (`use_npu_arch35_mxfp8_wo_a(quant_config)`: the arguments are evaluated
        only when they have no side effects)."""
        m = PREDICATE_NAME.match(name)
        word = m.group(1).lower() if m else ""
        if not word or not self.strings.word(word):
            return None
        return Predicate(name=name, value=False, calls_only=True, with_args=True,
                         reason=f"named for another platform ('{word}', the [platform.strings] vocabulary)")

    def value(self, name: str, called: bool) -> bool | None:
        pred = self._lookup(name)
        if pred is None or (pred.calls_only and not called):
            return None
        return pred.value

    def takes_args(self, name: str) -> bool:
        """True when the rules fold calls of `name` that pass arguments (`with_args`)."""
        pred = self._lookup(name)
        return pred is not None and pred.with_args

    def rule_for(self, name: str):
        return self._lookup(name)

    def written_rule_for(self, name: str):
        """The predicate rule that names `name` (exactly or by glob), not the vocabulary's."""
        if name in self._exact:
            return self._exact[name]
        return next((p for p in self._globs if fnmatchcase(name, p.name)), None)


def env_flag_name(call: cst.Call, platform: Platform) -> str | None:
    """The environment variable an env-flag read names: `envs.SGLANG_X.get()` -> "SGLANG_X",
    `get_bool_env_var("SGLANG_X", "false")` -> "SGLANG_X" (rules.platform.env_flags: the registry
    object and the reader functions; env_flag_reads: the registry entries' read methods); None for
    any other call. A predicate of that name gives the flag's value on CUDA, for flags that only
    select another platform's kernels."""
    func, env_flags = call.func, platform.env_flags
    if (isinstance(func, cst.Attribute) and func.attr.value in platform.env_flag_reads and not call.args
            and isinstance(func.value, cst.Attribute) and isinstance(func.value.value, cst.Name)
            and func.value.value.value in env_flags):
        return func.value.attr.value
    if isinstance(func, cst.Name) and func.value in env_flags and call.args and not call.args[0].keyword:
        return _string_value(call.args[0].value)
    return None


def combine(left: bool | None, right: bool | None, is_and: bool) -> bool | None:
    """Three-valued `and` / `or`: a known False (True) operand decides `and` (`or`) alone."""
    if is_and:
        if left is False or right is False:
            return False
        return True if (left and right) else None
    if left is True or right is True:
        return True
    return False if (left is False and right is False) else None


def _name_of(node: cst.BaseExpression) -> str | None:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return node.attr.value
    return None


def dotted_name(node: cst.BaseExpression) -> str | None:
    """`AttentionArch.SSM` for a chain of attributes over a name; None for anything else (a call, a subscript)."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        base = dotted_name(node.value)
        return f"{base}.{node.attr.value}" if base else None
    return None


def _string_value(node: cst.BaseExpression) -> str | None:
    if isinstance(node, cst.SimpleString):
        return node.evaluated_value if isinstance(node.evaluated_value, str) else None
    return None


def platform_name(node: cst.BaseExpression) -> str | None:
    """What a compare operand names as a platform: a string literal (`"npu"`), or an enum member
    spelled in capitals (`TransferBackend.ASCEND` -> "ascend"); None for anything else."""
    text = _string_value(node)
    if text is not None:
        return text
    if isinstance(node, cst.Attribute) and isinstance(node.value, (cst.Name, cst.Attribute)):
        attr = node.attr.value
        if attr.isupper():
            return attr.lower()
    return None


def platform_attribute_probe(node: cst.Call, platform: Platform) -> str | None:
    """`hasattr(pool, "req_to_c128_sidecar")` or `getattr(layer, "aiter_bpreshuffled", False)` with an
    attribute of [platform].attributes: the name, else None. On CUDA such a test is False, such a getattr
    its default (`platform_attribute_default`)."""
    if not isinstance(node.func, cst.Name) or any(a.keyword or a.star for a in node.args):
        return None
    if node.func.value == "hasattr" and len(node.args) == 2:
        name = _string_value(node.args[1].value)
    elif node.func.value == "getattr" and len(node.args) == 3 and platform_attribute_default(node) is not None:
        name = _string_value(node.args[1].value)
    else:
        return None
    return name if name in platform.attributes else None


def platform_attribute_default(node: cst.Call) -> bool | None:
    """The literal bool default of `getattr(x, NAME, True/False)` (what it returns where x has no NAME), else
    None; a hasattr is False."""
    if isinstance(node.func, cst.Name) and node.func.value == "hasattr":
        return False
    default = node.args[2].value if len(node.args) == 3 else None
    if isinstance(default, cst.Name) and default.value in ("True", "False"):
        return default.value == "True"
    return None


def platform_fact(node: cst.Attribute, platform: Platform) -> str | None:
    """`get_platform().is_hip`: the attribute's name when it is read on a platform-facts object
    ([platform].fact_objects; `name()` means a call with no arguments), else None. Such a read is the
    predicate of that name, called (`get_platform().is_cuda` is `is_cuda()`, where `tensor.is_cuda` is
    torch's attribute and stays)."""
    owner = node.value
    for pattern in platform.fact_objects:
        if pattern.endswith("()"):
            if (isinstance(owner, cst.Call) and not owner.args
                    and cst.helpers.get_full_name_for_node(owner.func) == pattern[:-2]):
                return node.attr.value
        elif cst.helpers.get_full_name_for_node(owner) == pattern:
            return node.attr.value
    return None


def device_probe(node: cst.Call, platform: Platform, strings: "PlatformStrings") -> str | None:
    """`torch.xpu.is_available()`: the platform word of a device-presence call of
    [platform].device_probes (no arguments), else None. No such device is present on CUDA."""
    if node.args or not platform.device_probes:
        return None
    name = cst.helpers.get_full_name_for_node(node.func) or ""
    for pattern in platform.device_probes:
        m = re.fullmatch(re.escape(pattern).replace(r"\*", r"(\w+)"), name)
        if m and all(strings.word(w.lower()) for w in m.groups()):
            return m.group(1)
    return None


def device_probe_patterns(platform: Platform) -> list[str]:
    """Regex alternatives for the device probes and build attributes (`torch.xpu.is_available`,
    `torch.version.hip`): a pre-filter of the files a fold reads."""
    words = "|".join(re.escape(s) for s in platform.strings.strings)
    globs = [*platform.device_probes, *platform.build_attributes]
    return [re.escape(p).replace(r"\*", f"(?:{words})") + r"\b" for p in globs if words]


def evaluate(node: cst.BaseExpression, table: PredicateTable, module: str = "",
             fixed: Mapping[str, bool] | None = None) -> bool | None:
    """The value of a boolean expression on CUDA, or None when it depends on anything else.
    `module`: where the expression stands (feature value rules scoped to modules); `fixed`: the
    parameters a rule fixes in the function it stands in (rules' [[...parameters]])."""
    if isinstance(node, cst.Name) and node.value in ("True", "False"):
        return node.value == "True"
    if build_attribute(node, table.platform, table.strings) is not None:
        return False  # `torch.version.hip`: None on a CUDA build
    if fixed and isinstance(node, cst.Name) and node.value in fixed:
        return fixed[node.value]
    if isinstance(node, cst.Attribute) and (fact := platform_fact(node, table.platform)) is not None:
        return table.value(fact, called=True)
    if isinstance(node, (cst.Name, cst.Attribute)):
        name = _name_of(node)
        return table.value(name, called=False) if name else None
    if isinstance(node, cst.Call):
        flag = env_flag_name(node, table.platform)
        if flag is not None:
            return table.value(flag, called=True)
        if device_probe(node, table.platform, table.strings) is not None:
            return False
        if platform_attribute_probe(node, table.platform) is not None:
            return platform_attribute_default(node)
        name = _name_of(node.func)
        if not name or (node.args and not table.takes_args(name)):
            return None
        return table.value(name, called=True)
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Not):
        inner = evaluate(node.expression, table, module, fixed)
        return None if inner is None else not inner
    if isinstance(node, cst.BooleanOperation):
        left, right = evaluate(node.left, table, module, fixed), evaluate(node.right, table, module, fixed)
        return combine(left, right, isinstance(node.operator, cst.And))
    if isinstance(node, cst.NamedExpr):  # `if cfg := mambaish_config(x):` tests the value
        return evaluate(node.value, table, module, fixed)
    if isinstance(node, cst.Comparison) and len(node.comparisons) == 1:
        target = node.comparisons[0]
        if (isinstance(target.operator, (cst.Is, cst.IsNot)) and isinstance(target.comparator, cst.Name)
                and target.comparator.value == "None"
                and build_attribute(node.left, table.platform, table.strings) is not None):
            return isinstance(target.operator, cst.Is)
        return _compare(node.left, target, table, module)
    return None


def literal(node: cst.BaseExpression) -> int | str | None:
    """An int or str literal's value (the operand of a feature value compare)."""
    if isinstance(node, cst.Integer):
        return int(node.value, 0)
    return _string_value(node)


def never_compare(left: cst.BaseExpression, target: cst.ComparisonTarget, rule_of) -> bool | None:
    """`x == v` / `x != v` / `x in (v, ...)` / `x is None` where a feature rule fixes the answer.

    `rule_of(node)`: the FeatureValue for an operand naming a variable/attribute, or "none" for a call
    of a predicate that returns None, else None."""
    op, right = target.operator, target.comparator
    if isinstance(op, (cst.Is, cst.IsNot)) and isinstance(right, cst.Name) and right.value == "None":
        rule = rule_of(left)
        if rule == "none" or (isinstance(rule, FeatureValue) and rule.none):
            return isinstance(op, cst.Is)
        return None
    rule = rule_of(left)
    if not isinstance(rule, FeatureValue):
        return None
    if isinstance(op, (cst.Equal, cst.NotEqual)):
        if _never_holds(right, rule):
            return isinstance(op, cst.NotEqual)
    elif isinstance(op, (cst.In, cst.NotIn)) and isinstance(right, (cst.Tuple, cst.List, cst.Set)):
        if right.elements and all(_never_holds(e.value, rule) for e in right.elements):
            return isinstance(op, cst.NotIn)
    return None


def _never_holds(node: cst.BaseExpression, rule: FeatureValue) -> bool:
    """`node` is a literal of the rule's `never` or a dotted reference of its `never_members`."""
    value = literal(node)
    if value is not None:
        return value in rule.never
    return bool(rule.never_members) and dotted_name(node) in rule.never_members


def _rule_of(table: PredicateTable, module: str):
    def rule_of(node: cst.BaseExpression):
        if isinstance(node, cst.Call):
            name = _name_of(node.func)
            return "none" if name and table.returns_none(name) else None
        name = _name_of(node)
        # the planner cannot tell a parameter from a variable: a rule scoped to modules folds both there
        return table.never(name, module) if name else None
    return rule_of


def _compare(left: cst.BaseExpression, target: cst.ComparisonTarget, table: PredicateTable,
             module: str = "") -> bool | None:
    if table.values or table.features:
        value = never_compare(left, target, _rule_of(table, module))
        if value is not None:
            return value
    op, right = target.operator, target.comparator
    if isinstance(op, (cst.Equal, cst.NotEqual)):
        text = platform_name(right) if platform_name(left) is None else platform_name(left)
        if text is not None and text in table.strings:
            return isinstance(op, cst.NotEqual)
        return architecture_compare(left, target, table)
    if isinstance(op, (cst.In, cst.NotIn)) and isinstance(right, (cst.Tuple, cst.List, cst.Set)):
        values = [_string_value(e.value) for e in right.elements]
        if values and all(v is not None and v in table.strings for v in values):
            return isinstance(op, cst.NotIn)
    return architecture_compare(left, target, table)


def architecture_compare(left: cst.BaseExpression, target: cst.ComparisonTarget,
                         table: PredicateTable) -> bool | None:
    """`x == "Qwen2ForCausalLM"` / `x != ...` / `x in ("LlamaForCausalLM", ...)` where every string is an
    architecture the profile removes: False (True for != / not in). Only literals written in the test
    count: `"Qwen2ForCausalLM" in SUPPORTED` asks a collection, not the served model, and stays, unless
    the collection is one that holds the served model's architectures (`served`: the rules'
    `*.hf_config.architectures`). `x in ()`, what a literal is left with once its removed architectures
    went, is False. The served model's model_type (`hf_config.model_type == "gpt_oss"`) compares the same
    way against the model types the kept architectures serve (model_type_compare), and a place holding a
    picked registry key against the keys the plan removes (option_compare)."""
    op, right = target.operator, target.comparator
    if isinstance(op, (cst.In, cst.NotIn)) and isinstance(right, (cst.Tuple, cst.List)) and not right.elements:
        return isinstance(op, cst.NotIn)
    value = model_type_compare(left, target, table)
    if value is None:
        value = option_compare(left, target, table)
    if value is not None or not table.architectures:
        return value
    architectures = table.architectures
    if isinstance(op, (cst.In, cst.NotIn)) and _string_value(left) in architectures and served_place(right, table):
        return isinstance(op, cst.NotIn)
    if isinstance(op, (cst.Equal, cst.NotEqual)):
        if _string_value(left) in architectures or _string_value(right) in architectures:
            return isinstance(op, cst.NotEqual)
        if _served_list_of_removed(left, right, table) or _served_list_of_removed(right, left, table):
            return isinstance(op, cst.NotEqual)
    elif isinstance(op, (cst.In, cst.NotIn)) and isinstance(right, (cst.Tuple, cst.List, cst.Set)):
        values = [_string_value(e.value) for e in right.elements]
        if values and all(v in architectures for v in values):
            return isinstance(op, cst.NotIn)
    return None


def served_place(node: cst.BaseExpression, table: PredicateTable) -> bool:
    """`node` reads where the served model's architectures stand (`[architectures].served` globs), itself or
    through a reader (`getattr(hf_config, "architectures", None)`, model_type_place), or that place with an empty
    fallback (`hf_config.architectures or []`: a removed architecture is in neither)."""
    while isinstance(node, cst.BooleanOperation) and isinstance(node.operator, cst.Or) \
            and isinstance(node.right, (cst.List, cst.Tuple)) and not node.right.elements:
        node = node.left
    name = model_type_place(node, table.readers)
    return name is not None and any(fnmatchcase(name, pattern) for pattern in table.served)


def _served_list_of_removed(place: cst.BaseExpression, literal: cst.BaseExpression, table: PredicateTable) -> bool:
    """`hf_config.architectures == ["Qwen3_5ForConditionalGeneration"]`: the served model's architectures (a
    `served` place) equal to a list or tuple literal of architectures the profile removes and nothing else;
    a served checkpoint's list never is one. An empty literal decides nothing (`architectures == []` may hold)."""
    if not isinstance(literal, (cst.List, cst.Tuple)) or not literal.elements or not served_place(place, table):
        return False
    return all(isinstance(e, cst.Element) and _string_value(e.value) in table.architectures
               for e in literal.elements)


def architecture_substring(fragment: str | None, alternatives: Iterable[str], table: PredicateTable) -> bool:
    """`fragment in <a served architecture name>` is False: the fragment is part of some architecture the
    profile removes (`"KimiK3"` of KimiK3ForConditionalGeneration) and of no kept one, nor of the literals
    the operand may hold instead (`arch = architectures[0] if architectures else ""`). A fragment of no
    removed architecture (`"DeepseekV41"`, a checkpoint name the config maps to a kept one) decides nothing."""
    if not fragment or not table.kept_architectures:
        return False
    if any(fragment in name for name in (*table.kept_architectures, *alternatives)):
        return False
    return any(fragment in name for name in table.architectures)


def model_type_place(node: cst.BaseExpression, readers: Sequence[str] = ("getattr",)) -> str | None:
    """The dotted place a compare operand reads: `self.hf_config.model_type`, or `getattr(self.hf_config,
    "model_type", None)` read as the same place (the rules' `model_type_at` globs say which places hold the
    served model_type; `readers`, the functions that read as getattr does); None for anything else. A
    default that could hold a name (`getattr(c, "model_type", "qwen")`) is no such read: only none, None,
    or an empty string, list or tuple (`[None]` too) stands for the place."""
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value in readers \
            and 2 <= len(node.args) <= 3 and not any(a.keyword or a.star for a in node.args):
        if len(node.args) == 3 and not _holds_no_name(node.args[2].value):
            return None
        base, name = dotted_name(node.args[0].value), _string_value(node.args[1].value)
        return f"{base}.{name}" if base and name else None
    return dotted_name(node)


def _holds_no_name(default: cst.BaseExpression) -> bool:
    """None, "", [], (), [None]: a default no compare with a name's string can match."""
    if isinstance(default, cst.Name):
        return default.value == "None"
    if isinstance(default, (cst.List, cst.Tuple)):
        return all(isinstance(e, cst.Element) and _holds_no_name(e.value) for e in default.elements)
    return _string_value(default) == ""


def model_type_words(serving: Architectures) -> tuple[str, ...]:
    """The attribute names the served model_type is read by (the last part of each `model_type_at` glob):
    a file naming none of them tests no model_type (the folding codemods' and the plan's pre-filters)."""
    return tuple(sorted({glob.rpartition(".")[2] for glob in serving.model_type_at} if serving.model_types else ()))


def served_words(serving: Architectures) -> tuple[str, ...]:
    """The names the served architectures are read by (the last part of each `served` glob): a file naming
    none of them holds no local copying one (`arch = architectures[0] ...`, codemods/served_locals)."""
    return tuple(sorted({glob.rpartition(".")[2] for glob in serving.served}))


def model_type_compare(left: cst.BaseExpression, target: cst.ComparisonTarget,
                       table: PredicateTable) -> bool | None:
    """`<served model_type> == "gpt_oss"` / `!=` / `in ("qwen3", ...)` / `not in` where no literal is a
    model type the kept architectures serve (rules' [architectures].model_types, globs): False (True for the
    negations). The operand must be a place the rules name (`model_type_at`), so a model_type read off
    some other config (a vision tower's, a loop variable) never folds."""
    if not table.model_type_at or not table.model_types:
        return None
    place = model_type_place(left, table.readers)
    if place is None or not any(fnmatchcase(place, pattern) for pattern in table.model_type_at):
        return None
    op, right = target.operator, target.comparator
    if isinstance(op, (cst.Equal, cst.NotEqual)):
        values = [_string_value(right)]
    elif isinstance(op, (cst.In, cst.NotIn)) and isinstance(right, (cst.Tuple, cst.List, cst.Set)):
        values = [_string_value(e.value) for e in right.elements]
    else:
        return None
    if values and all(v is not None and not any(fnmatchcase(v, t) for t in table.model_types) for v in values):
        return isinstance(op, (cst.NotEqual, cst.NotIn))
    return None


def removed_architectures(rules, removed_keys) -> frozenset[str]:
    """The architectures the plan removes: the removed keys of every model-scan registry."""
    names = (r.name for r in rules.registries if r.kind == "module_scan")
    return frozenset(k for n in names for k in removed_keys.get(n, ()))


def removed_options(rules, removed_keys) -> tuple[HeldKeys, ...]:
    """Each registry with `held_at` places, with the keys the plan removes from it."""
    return tuple(HeldKeys(r.name, tuple(r.held_at), frozenset(removed_keys.get(r.name, ())))
                 for r in rules.registries if r.held_at)


def profile_table(rules, removed_keys, platform: Platform | None = None,
                  features: Sequence[Feature] = ()) -> PredicateTable:
    """The table a profile folds with: the platform's predicates (or `platform`), `features`, and what the
    plan's removed registry keys decide (architectures, the served model_type, options holding a key)."""
    return PredicateTable(rules.platform if platform is None else platform, features,
                          removed_architectures(rules, removed_keys), rules.architectures,
                          removed_options(rules, removed_keys))


def held_words(rules) -> tuple[str, ...]:
    """The attribute names a picked key is read by (the last part of each `held_at` glob): the pre-filter
    of the files a fold visits, as model_type_words is."""
    return tuple(sorted({re.sub(r"\W", "", g.rpartition(".")[2]) for r in rules.registries for g in r.held_at}
                        - {""}))


def option_place(node: cst.BaseExpression) -> str | None:
    """The dotted place a compare operand reads, where a call without arguments is a part of its own
    (`get_serving().tool_call_parser`); None for anything else."""
    if isinstance(node, cst.Call) and not node.args:
        base = option_place(node.func)
        return f"{base}()" if base else None
    if isinstance(node, cst.Attribute):
        base = option_place(node.value)
        return f"{base}.{node.attr.value}" if base else None
    return node.value if isinstance(node, cst.Name) else None


def held_removed(operand: cst.BaseExpression, table: PredicateTable) -> frozenset[str]:
    """The keys the plan removes from the registries whose picked key `operand` holds (its held_at places)."""
    place = option_place(operand)
    if place is None:
        return frozenset()
    return frozenset().union(*(held.removed for held in table.options
                               if any(fnmatchcase(place, g) for g in held.places)))


def option_compare(left: cst.BaseExpression, target: cst.ComparisonTarget,
                   table: PredicateTable) -> bool | None:
    """`<a place holding a picked key> == "kimi_k3"` / `!=` / `in (...)` / `not in`, where every literal is a
    key the plan removes from that place's registry: False (True for the negations). Such a key has no
    entry left to answer to (its parser, its backend went), so the kept tree never serves with it. The
    operand may stand on either side of `==`; a literal that is not a removed key (a kept key, "auto",
    a typo) decides nothing."""
    if not table.options:
        return None
    op, right = target.operator, target.comparator
    if isinstance(op, (cst.Equal, cst.NotEqual)):
        pairs = [(left, [_string_value(right)]), (right, [_string_value(left)])]
    elif isinstance(op, (cst.In, cst.NotIn)) and isinstance(right, (cst.Tuple, cst.List, cst.Set)) \
            and right.elements:
        pairs = [(left, [_string_value(e.value) for e in right.elements])]
    else:
        return None
    for operand, values in pairs:
        place = option_place(operand)
        if place is None or None in values:
            continue
        for held in table.options:
            if all(v in held.removed for v in values) and any(fnmatchcase(place, g) for g in held.places):
                return isinstance(op, (cst.NotEqual, cst.NotIn))
    return None


_QUOTED_NAME = re.compile(r"""["']([A-Za-z_]\w*)["']""")


def quotes_one_of(text: str, names: frozenset[str]) -> bool:
    """Whether source text quotes one of `names` (`"Qwen2ForCausalLM"`): a cheap pre-filter."""
    return bool(names) and any(m.group(1) in names for m in _QUOTED_NAME.finditer(text))


@lru_cache(maxsize=65536)
def _parse(text: str) -> cst.BaseExpression | None:
    for candidate in (text, f"({text})"):  # a guard `cfg := f(x)` parses only in parentheses
        try:
            return cst.parse_expression(candidate)
        except Exception:
            continue
    return None


def evaluate_source(text: str, table: PredicateTable, module: str = "",
                    fixed: Mapping[str, bool] | None = None) -> bool | None:
    node = _parse(text)
    return None if node is None else evaluate(node, table, module, fixed)


_ATTRIBUTE_WORDS = re.compile(r"\.\s*([A-Za-z_]\w*)")


def other_devices_only(source: str, strings: "PlatformStrings") -> list[str] | None:
    """The devices a record's `capabilities` value names when it names only other platforms' devices
    (`frozenset({CapabilityRequirement.HIP})` -> ["HIP"]), else None: a record served only there is never
    dispatched on CUDA. Only attribute names count (`Requirement.HIP`, `Requirement.cuda(min_sm=90)`); a
    value naming CUDA, or no device at all (a loop variable, `CUDA_ONLY`), says nothing."""
    devices = [w for w in _ATTRIBUTE_WORDS.findall(source) if w.lower() == "cuda" or w.lower() in strings]
    if not devices or any(w.lower() == "cuda" for w in devices):
        return None
    return devices


def build_attribute(node: cst.BaseExpression, platform: Platform, strings: "PlatformStrings") -> str | None:
    """`torch.version.hip`, `getattr(torch.version, "musa", None)`: the platform word of a read of
    [platform].build_attributes (`*` a platform word), else None. Such a read is None on a CUDA build:
    torch.version.hip is None there, and a vendor fork's own attribute (torch.version.musa) is absent, read
    only through getattr(..., None) or after hasattr."""
    if isinstance(node, cst.Call):
        if (not isinstance(node.func, cst.Name) or node.func.value != "getattr" or len(node.args) != 3
                or any(a.keyword or a.star for a in node.args)
                or not (isinstance(node.args[2].value, cst.Name) and node.args[2].value.value == "None")):
            return None
        word = _string_value(node.args[1].value)
        dotted = f"{cst.helpers.get_full_name_for_node(node.args[0].value) or ''}.{word}"
    elif isinstance(node, cst.Attribute):
        dotted, word = cst.helpers.get_full_name_for_node(node) or "", node.attr.value
    else:
        return None
    if not word or word not in strings:
        return None
    for pattern in platform.build_attributes:
        if fnmatchcase(dotted, pattern.replace("*", word)):
            return word
    return None
