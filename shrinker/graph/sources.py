"""The Python sources of a tree, as text: the graph floor owns them, so every floor above reads them here."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Callable, Iterator, Mapping, Optional

from shrinker.graph.discover import IMPORT_ROOTS


def python_sources(tree: Path) -> Iterator[tuple[str, str]]:
    """(tree-relative path, text) of every .py file under the tree's import roots."""
    for root in IMPORT_ROOTS:
        base = tree / root
        if base.is_dir():
            for path in base.rglob("*.py"):
                yield path.relative_to(tree).as_posix(), path.read_text(errors="replace")


def tree_source_reader(tree: Path, module_path: Mapping[str, str]) -> Callable[[str], Optional[str]]:
    """module -> its source in `tree` (None for a namespace package or a missing file)."""
    def source_of(module: str) -> Optional[str]:
        rel = module_path.get(module)
        path = tree / rel if rel else None
        return path.read_text(errors="replace") if path is not None and path.is_file() else None
    return source_of


_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")


def single_file_words(tree: Path) -> frozenset[str]:
    """Identifiers (any word of the source text: names, attributes, strings, comments) that occur in one
    .py file of `tree` only."""
    files: Counter[str] = Counter()
    for _, text in python_sources(tree):
        files.update(set(_IDENTIFIER.findall(text)))
    return frozenset(word for word, n in files.items() if n == 1)
