"""Patterns as the rules write them: dotted module patterns (`*` one part, `**` any parts, trailing `.**` a
subtree), shared by the planner ([[remove]] / [[keep]]) and the feature value rules (`modules`); and the
side-effect-free calls of `[platform].pure_methods`, shared by the fold (libcst) and the graph's constant
functions (ast)."""

from __future__ import annotations

import ast
import fnmatch
import re
from functools import lru_cache
from typing import Callable, Iterable

from shrinker.graph.bindings import dotted


@lru_cache(maxsize=None)
def _pattern_regex(pattern: str) -> re.Pattern:
    subtree = pattern.endswith(".**")
    parts = (pattern[:-3] if subtree else pattern).split(".")
    body = r"\.".join(r"[^.]+(?:\.[^.]+)*" if p == "**" else fnmatch.translate(p)[4:-3].replace(".*", "[^.]*")
                      for p in parts)
    tail = r"(?:\..+)?" if subtree else ""
    return re.compile("^" + body + tail + "$")


def pattern_matches(pattern: str, module: str) -> bool:
    """Dotted patterns: `*` is one part, `**` any number of parts, a trailing `.**` the module and its subtree."""
    return bool(_pattern_regex(pattern).match(module))


def name_glob_regex(name: str) -> str:
    """A predicate name's glob (`*aiter*`, `is_gfx9[45]*`) as a regex fragment matching it inside code
    text: each wildcard or class becomes `\\w*`; a plain name is itself, escaped."""
    return r"\w*".join(re.escape(part) for part in re.split(r"[*?]|\[[^]]*\]", name))



def pure_call_matches(pattern: str, name: str, callee: str, arguments: int, literal_arguments: bool) -> bool:
    """A `pure_methods` pattern against one call: `name` is the called name (`numel`), `callee` the callee as
    written (`CapabilityRequirement.cuda`, for a dotted pattern), `arguments` how many it passes and
    `literal_arguments` whether each is a positional string literal. `name()` matches calls with no
    arguments only, `name("")` calls with string literals only."""
    if "." in pattern.split("(")[0]:
        name = callee
    if pattern.endswith('("")'):
        return fnmatch.fnmatchcase(name, pattern[:-4]) and arguments > 0 and literal_arguments
    if pattern.endswith("()"):
        return fnmatch.fnmatchcase(name, pattern[:-2]) and not arguments
    return fnmatch.fnmatchcase(name, pattern)


def pure_ast_calls(patterns: Iterable[str]) -> Callable[[ast.Call], bool]:
    """The calls (ast) the `pure_methods` patterns declare side-effect free (their receivers and arguments
    are the caller's to check)."""
    patterns = tuple(patterns)

    def pure(call: ast.Call) -> bool:
        func = call.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
        if name is None:
            return False
        arguments = [*call.args, *call.keywords]
        literal = all(isinstance(a, ast.Constant) and isinstance(a.value, str) for a in arguments)
        return any(pure_call_matches(p, name, dotted(func), len(arguments), literal) for p in patterns)

    return pure
