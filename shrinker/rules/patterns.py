"""Dotted module patterns as the rules write them (`*` one part, `**` any parts, trailing `.**` a subtree).

Shared by the planner ([[remove]] / [[keep]]) and the feature value rules (`modules`)."""

from __future__ import annotations

import fnmatch
import re
from functools import lru_cache


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

