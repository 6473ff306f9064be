"""Which files of a tree read given names, by a text scan: `.name` (an attribute) or "name" (a string,
as getattr / setattr / dict keys spell it). Word-bounded, comments included, so it errs towards
"read": a name shared with another attribute counts as read. A plain store, `x.name = value`, is not
a read (`x.name += 1` and `x.name == v` are): setting a field nothing reads keeps nothing alive.

`dataclass_fields` lists a dataclass's annotated fields (ServerArgs'), the names those checks scan for.

Used where a decision needs upstream's reads as well as the kept tree's: the ServerArgs report, the
attribute tables whose entries go only when upstream read them (rules.attribute_tables
`only_removed_readers`), and verify's check of the CLI options that went with such entries.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Iterable

from shrinker.graph.sources import python_sources


def name_readers(tree: Path, names: Iterable[str], skip: str = "") -> dict[str, list[str]]:
    """name -> tree paths (other than `skip`) that read it as `.name` or "name"."""
    names = sorted(set(names))
    found: dict[str, list[str]] = {n: [] for n in names}
    if not names:
        return found
    alternatives = "|".join(map(re.escape, names))
    words = re.compile(r"\.(" + alternatives + r")\b(?!\s*=(?!=))|[\"'](" + alternatives + r")[\"']")
    for rel, text in python_sources(tree):
        if rel == skip:
            continue
        for name in {m.group(1) or m.group(2) for m in words.finditer(text)}:
            found[name].append(rel)
    return found


def dataclass_fields(source: str, class_name: str) -> list[tuple[str, int]]:
    """(name, line) of the annotated fields of `class_name` (class-body `name: T [= default]`)."""
    for node in ast.parse(source).body:
        if isinstance(node, ast.ClassDef) and node.name == class_name:
            return [(s.target.id, s.lineno) for s in node.body
                    if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)
                    and not s.target.id.startswith("_")]
    return []
