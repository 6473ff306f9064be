"""Private attributes nothing in the kept tree sets: `getattr(self, "_kimi_split_gguf_kv_b", False)` in the
DeepSeek attention reads a flag only Kimi K3's attention subclass set (models/kimi_k3.py, removed), so on
every object the kept tree makes it is the default (folded by the codemods' Folder).

Exact as far as the text shows (like the attribute constants' single-file words): the name is private
(`_x`, not dunder), it occurs in one file of the kept tree only, and every occurrence there is the literal
name of a `getattr(self, "_x", ...)` or `hasattr(self, "_x")` read. So no kept code stores it by attribute,
by literal `setattr`, or reads it any other way; only `self` is read, whose class the tree defines (an
outside object, a checkpoint's config, may carry any attribute).
"""

from __future__ import annotations

import re
from pathlib import Path

from shrinker.graph.sources import python_sources, single_file_words

_READ = re.compile(r"""\b(?:getattr|hasattr)\(\s*self\s*,\s*["'](_[A-Za-z0-9]\w*)["']""")


def unset_attributes(tree: Path, words: frozenset[str] | None = None) -> frozenset[str]:
    """The private attribute names only read, through getattr/hasattr of `self`, in one file (module doc)."""
    words = single_file_words(tree) if words is None else words
    found: set[str] = set()
    for _, text in python_sources(tree):
        for name in set(_READ.findall(text)):
            if name.startswith("__") or name not in words:
                continue
            reads = len(re.findall(rf"""\b(?:getattr|hasattr)\(\s*self\s*,\s*["']{name}["']""", text))
            if reads == len(re.findall(rf"\b{name}\b", text)):
                found.add(name)
    return frozenset(found)
