"""Check the rules' fixed parameters (rules.platform.parameters) against a tree.

A rule says: every call of `function` passes, for parameter `name`, an expression worth `value` on
CUDA (`try_fused_hc_post_pre(..., _is_gfx95_supported)`), so the codemods may fold the parameter
inside that function like a predicate. That is only true while the callers say so: the plan reads
every call in the tree and fails, naming the call, when one passes anything else (or when the
function rebinds the parameter, or is not where the rule says).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Collection, Iterable, Mapping

import libcst as cst
import libcst.matchers as m
from libcst.metadata import MetadataWrapper, PositionProvider

from shrinker.errors import ShrinkError
from shrinker.graph.discover import discover, module_paths
from shrinker.rules.predicates import PredicateTable, evaluate
from shrinker.rules.schema import FixedParameter, Rules


@dataclass(frozen=True)
class CallSite:
    path: str
    line: int
    passed: str  # the argument's source, or "default: <expr>"


def _find_def(tree: ast.Module, qualname: str) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    body: list[ast.stmt] = tree.body
    node = None
    for part in qualname.split("."):
        node = next((n for n in body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                     and n.name == part), None)
        if node is None:
            return None
        body = node.body
    return node if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) else None


def _rebinds(fn: ast.AST, name: str) -> int:
    """Line of a statement in `fn` (outside nested scopes too: any) that assigns `name`, else 0."""
    for node in ast.walk(fn):
        if isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, (ast.Store, ast.Del)):
            return node.lineno
    return 0


def _param_slot(fn: ast.FunctionDef | ast.AsyncFunctionDef, name: str, method: bool
                ) -> tuple[int | None, ast.expr | None, bool]:
    """(positional index as callers count it, default expression, found)."""
    args = fn.args
    positional = [*args.posonlyargs, *args.args]
    defaults = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
    for index, arg in enumerate(positional):
        if arg.arg == name:
            return (index - 1 if method else index), defaults[index], True
    for arg, default in zip(args.kwonlyargs, args.kw_defaults):
        if arg.arg == name:
            return None, default, True
    return None, None, False


def fixed_values(params: Iterable[FixedParameter]) -> dict[str, dict[str, bool]]:
    """{"module:qualname": {parameter: value}} of fixed-parameter rules (planner and codemods read it)."""
    out: dict[str, dict[str, bool]] = {}
    for param in params:
        out.setdefault(param.function, {})[param.name] = param.value
    return out


def check_parameters(root: Path, rules: Rules, files: list[tuple[str, str]] | None = None,
                     removed_keys: Mapping[str, Collection[str]] | None = None) -> dict[str, list[CallSite]]:
    """{"module:qualname(name)": call sites} for every rule; ShrinkError naming what does not hold.
    `removed_keys`: the plan's removed registry keys; a [[features]] parameter's call inside the
    function of one of them does not count (without them every call counts)."""
    features = [p for f in rules.features for p in f.parameters]
    params: list[FixedParameter] = [*rules.platform.parameters, *features]
    if not params:
        return {}
    table = PredicateTable(rules.platform)
    if files is None:
        files = [(f.path, (root / f.path).read_text(errors="replace"))
                 for f in discover(root) if f.path.endswith(".py")]
    sources = files
    by_path = dict(sources)
    problems: list[str] = []
    out: dict[str, list[CallSite]] = {}
    for rule in params:
        module, _, qualname = rule.function.partition(":")
        key = f"{rule.function}({rule.name})"
        path = next((p for p in module_paths(module) if p in by_path), None)
        text = by_path.get(path) if path else None
        fn = _find_def(ast.parse(text), qualname) if text is not None else None
        if fn is None:
            problems.append(f"{key}: no function {qualname} in module {module}")
            continue
        method = "." in qualname
        index, default, found = _param_slot(fn, rule.name, method)
        if not found:
            problems.append(f"{key}: {qualname} has no parameter {rule.name}")
            continue
        if line := _rebinds(fn, rule.name):
            problems.append(f"{key}: {path}:{line} assigns {rule.name} inside the function")
        # a constructor's callers call the class; a subclass's super().__init__ is not read, so it fails
        owner = qualname.split(".")[-2] if qualname.endswith(".__init__") else ""
        callee = owner or fn.name
        if owner:
            problems += [f"{key}: {rel}:{line} subclasses {owner} (its super().__init__ calls are not checked)"
                         for rel, source in sources for line in _subclasses(source, owner)]
        cut = features and rule in features
        sites: list[CallSite] = []
        call_word = re.compile(rf"\b{re.escape(callee)}\s*\(")
        for rel, source in sources:
            if not call_word.search(source):
                continue
            removed = _removed_registrations(rules, rel, source, removed_keys) if cut and removed_keys else []
            for line, expr, passed in _calls(source, callee, rule.name, index, default):
                if any(start <= line <= end for start, end in removed):
                    continue  # inside a removed registry key's function: the cut takes the call with it
                value = evaluate(expr, table, module) if expr is not None else None
                site = CallSite(rel, line, passed)
                if value is not rule.value:
                    problems.append(f"{key}: {rel}:{line} passes {passed}, which is not {rule.value} on CUDA")
                sites.append(site)
        out[key] = sites
    if problems:
        raise ShrinkError("rules.platform.parameters do not hold: " + "; ".join(problems))
    return out


def _subclasses(source: str, name: str) -> list[int]:
    """Lines of the classes in `source` that list `name` among their bases."""
    if not re.search(rf"class\s+\w+\s*\([^)]*\b{re.escape(name)}\b", source):
        return []
    return [node.lineno for node in ast.walk(ast.parse(source)) if isinstance(node, ast.ClassDef)
            and any((b.id if isinstance(b, ast.Name) else b.attr if isinstance(b, ast.Attribute) else "") == name
                    for b in node.bases)]


def _removed_registrations(rules: Rules, rel: str, source: str, removed_keys: Mapping[str, Collection[str]]
                           ) -> list[tuple[int, int]]:
    """Line spans of the functions of `rel` registered under a key the plan removes from a decorator
    registry (`@register_attention_backend("fa4")`): the registry codemod takes them out of the tree."""
    spans: list[tuple[int, int]] = []
    for registry in rules.registries:
        removed = removed_keys.get(registry.name, ())
        if registry.kind != "decorator" or not removed or rel not in module_paths(registry.module):
            continue
        for node in ast.walk(ast.parse(source)):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for deco in node.decorator_list:
                if (isinstance(deco, ast.Call) and deco.args and isinstance(deco.args[0], ast.Constant)
                        and (deco.func.id if isinstance(deco.func, ast.Name) else
                             getattr(deco.func, "attr", "")) == registry.decorator
                        and deco.args[0].value in removed):
                    spans.append((node.lineno, node.end_lineno or node.lineno))
    return spans


def _calls(source: str, fn_name: str, param: str, index: int | None, default: ast.expr | None):
    """(line, argument as a CST expression or None, its text) of each call of `fn_name`."""
    module = cst.parse_module(source)
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    positions = wrapper.resolve(PositionProvider)
    for call in m.findall(wrapper.module, m.Call()):
        assert isinstance(call, cst.Call)
        func = call.func
        name = func.value if isinstance(func, cst.Name) else func.attr.value if isinstance(func, cst.Attribute) else ""
        if name != fn_name:
            continue
        line = positions[call].start.line
        arg = next((a for a in call.args if a.keyword and a.keyword.value == param), None)
        if arg is None and index is not None:
            positional = [a for a in call.args if not a.keyword and not a.star]
            if any(a.star for a in call.args):
                yield line, None, "*args"
                continue
            arg = positional[index] if index < len(positional) else None
        if arg is not None:
            yield line, arg.value, module.code_for_node(arg.value).strip()
        elif default is not None:
            text = ast.unparse(default)
            yield line, cst.parse_expression(text), f"default: {text}"
        else:
            yield line, None, "nothing"
