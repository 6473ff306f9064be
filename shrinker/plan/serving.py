"""A kept architecture must not select a removed registry key: the plan fails when it does.

Upstream picks serving defaults per architecture: 0.5.16's arg_groups/overrides.py has
`@_register_for("DeepseekV4ForCausalLM") def _deepseek_v4_overrides(...)` returning
`{"attention_backend": "dsv4", ...}`. Had the rules removed `dsv4` (as they once did), every V4
server of the pruned tree would have asked the registry for a backend it no longer has, while
upstream served V4. This check finds that class of break statically, for every release:

- where: kept files that name a kept architecture (`[architectures].keep`), and kept files that define
  one (`class DeepseekV4ForCausalLM`: the whole model file is that architecture's own code);
- context: a function whose decorator names kept architectures (`@_register_for("DeepseekV4...")`,
  `@_register_for(lambda arch: "X" in arch)`), an `if`/`elif` body whose test names them with `==`/`in`
  (`if model_arch in ["DeepseekV3ForCausalLM", ...]:`), or the model file itself;
- selection: a removed key's string assigned, returned, passed as a keyword or default, or a dict value
  (`{"attention_backend": "dsv4"}`), directly or as a branch of `x if c else y` / `a or b`
  (the same shapes regen's key evidence reads, shrinker/regen/signals.py).

Keys a platform word names (`aiter`, `intel_xpu`: [platform.strings]) stay out: the branch that picks
them is dead on CUDA. Another architecture's pick (`fa4` for MiniMax-M3) is no finding.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Iterable, Mapping

import libcst as cst
import libcst.matchers as m
from libcst.metadata import MetadataWrapper, PositionProvider

from shrinker.rules.predicates import PlatformStrings
from shrinker.rules.schema import Rules

# Registry kinds whose keys name classes or modules (architectures by EntryClass, a package's exports),
# not strings code picks: a serving default never selects one.
_CLASS_KEYED = frozenset({"module_scan", "package_exports"})


def selected_strings(expr: cst.BaseExpression) -> list[cst.SimpleString]:
    """The string literals an expression can evaluate to (through `if/else` and `or`)."""
    if isinstance(expr, cst.SimpleString):
        return [expr]
    if isinstance(expr, cst.IfExp):
        return selected_strings(expr.body) + selected_strings(expr.orelse)
    if isinstance(expr, cst.BooleanOperation) and isinstance(expr.operator, cst.Or):
        return selected_strings(expr.left) + selected_strings(expr.right)
    return []


def _strings(node: cst.CSTNode) -> set[str]:
    out = set()
    for s in m.findall(node, m.SimpleString()):
        value = s.evaluated_value
        if isinstance(value, str):
            out.add(value)
    return out


def _names_kept(test: cst.BaseExpression, kept: frozenset[str]) -> set[str]:
    """Kept architectures an `if` test selects with `==` / `in` (a `!=` / `not in` test selects others)."""
    found: set[str] = set()
    for comparison in m.findall(test, m.Comparison()):
        if any(isinstance(t.operator, (cst.NotEqual, cst.NotIn, cst.IsNot)) for t in comparison.comparisons):
            continue
        found |= _strings(comparison) & kept
    return found


class SelectionVisitor(cst.CSTVisitor):
    """Calls `_take(expr)` on every expression whose string can be a selected key: an assigned or
    returned value, a parameter default, a keyword argument (regen's key evidence reads these too)."""

    METADATA_DEPENDENCIES = (PositionProvider,)

    def _take(self, expr: cst.BaseExpression | None) -> None:
        """What a selected string means: each visitor's own (here, nothing)."""

    def visit_Assign(self, node: cst.Assign) -> None:
        self._take(node.value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._take(node.value)

    def visit_Return(self, node: cst.Return) -> None:
        self._take(node.value)

    def visit_Param(self, node: cst.Param) -> None:
        self._take(node.default)

    def visit_Arg(self, node: cst.Arg) -> None:
        if node.keyword is not None:
            self._take(node.value)


class _ArchitectureSelections(SelectionVisitor):
    def __init__(self, kept: frozenset[str], wanted: Mapping[str, str], whole_file: set[str]) -> None:
        self.kept, self.wanted = kept, wanted  # wanted: removed key -> its registry
        self.context: list[set[str]] = [set(whole_file)]
        self.found: list[tuple[int, str, str, list[str]]] = []  # (line, registry, key, architectures)
        self._bodies: dict[int, set[str]] = {}  # id(if body) -> architectures its test selects

    def _take(self, expr: cst.BaseExpression | None) -> None:
        archs = set().union(*self.context)
        if expr is None or not archs:
            return
        for s in selected_strings(expr):
            value = s.evaluated_value
            if isinstance(value, str) and value in self.wanted:
                line = self.get_metadata(PositionProvider, s).start.line
                self.found.append((line, self.wanted[value], value, sorted(archs)))

    # -- contexts
    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.context.append(set().union(*(_strings(d.decorator) & self.kept for d in node.decorators)))

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.context.pop()

    def visit_If(self, node: cst.If) -> None:
        self._bodies[id(node.body)] = _names_kept(node.test, self.kept)

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        self.context.append(self._bodies.pop(id(node), set()))

    def leave_IndentedBlock(self, original_node: cst.IndentedBlock) -> None:
        self.context.pop()

    # -- selections: SelectionVisitor's, and a dict value (`{"attention_backend": "dsv4"}`)
    def visit_DictElement(self, node: cst.DictElement) -> None:
        if isinstance(node.key, cst.SimpleString):
            self._take(node.value)


def architecture_selections(tree: Path, kept_paths: Iterable[str], rules: Rules,
                            removed_keys: Mapping[str, Iterable[str]]) -> list[str]:
    """"path:line: ..." for each removed key a kept architecture's own code selects (empty: none)."""
    kept = frozenset(rules.architectures.keep)
    platform = PlatformStrings(rules.platform.strings.strings, rules.platform.strings.families)
    string_keyed = {r.name for r in rules.registries if r.kind not in _CLASS_KEYED}
    wanted = {key: reg for reg, keys in sorted(removed_keys.items()) if reg in string_keyed
              for key in keys if key not in platform}
    if not kept or not wanted:
        return []
    mentions = re.compile("|".join(re.escape(a) for a in sorted(kept, key=len, reverse=True)))
    defines = re.compile(r"^class\s+(" + "|".join(re.escape(a) for a in sorted(kept)) + r")\b", re.MULTILINE)
    findings = []
    for path in sorted(p for p in kept_paths if p.endswith(".py")):
        text = (tree / path).read_text(errors="replace")
        if not mentions.search(text) or not any(f'"{k}"' in text or f"'{k}'" in text for k in wanted):
            continue
        try:
            wrapper = MetadataWrapper(cst.parse_module(text))
        except cst.ParserSyntaxError:
            continue
        visitor = _ArchitectureSelections(kept, wanted, set(defines.findall(text)))
        wrapper.visit(visitor)
        for line, reg, key, archs in visitor.found:
            findings.append(f"{path}:{line}: {', '.join(archs)} selects {reg} key {key!r}, which the plan "
                            f"removes: keep it (rules {reg} keep) or the architecture cannot be served")
    return findings
