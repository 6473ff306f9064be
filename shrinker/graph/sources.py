"""The Python sources of a tree, as text: the graph floor owns them, so every floor above reads them here."""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

from shrinker.graph.discover import IMPORT_ROOTS


def python_sources(tree: Path) -> Iterator[tuple[str, str]]:
    """(tree-relative path, text) of every .py file under the tree's import roots."""
    for root in IMPORT_ROOTS:
        base = tree / root
        if base.is_dir():
            for path in base.rglob("*.py"):
                yield path.relative_to(tree).as_posix(), path.read_text(errors="replace")
