"""The Python sources of a tree, as text: the graph floor owns them, so every floor above reads them here."""

from __future__ import annotations

import ast
import gc
import re
from collections import Counter
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterable, Iterator, Mapping, Optional

from shrinker.graph.discover import IMPORT_ROOTS


@contextmanager
def collector_paused():
    """Pause the cycle collector while many syntax trees are held: `ast` nodes form no cycles, so reference
    counting frees them all the same, and each collection would walk every held node again (a whole-tree
    table took 23 s with it, 14 s without)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def python_sources(tree: Path) -> Iterator[tuple[str, str]]:
    """(tree-relative path, text) of every .py file under the tree's import roots."""
    for root in IMPORT_ROOTS:
        base = tree / root
        if base.is_dir():
            for path in base.rglob("*.py"):
                yield path.relative_to(tree).as_posix(), path.read_text(errors="replace")


def parsed_modules(texts: Iterable[str]) -> Iterator[ast.Module]:
    """Each text parsed; one upstream ships unparseable (a template, a fixture) is no scan's business."""
    for text in texts:
        try:
            yield ast.parse(text)
        except (SyntaxError, ValueError):
            continue


def tree_source_reader(tree: Path, module_path: Mapping[str, str]) -> Callable[[str], Optional[str]]:
    """module -> its source in `tree` (None for a namespace package or a missing file)."""
    def source_of(module: str) -> Optional[str]:
        rel = module_path.get(module)
        path = tree / rel if rel else None
        return path.read_text(errors="replace") if path is not None and path.is_file() else None
    return source_of


_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")


def identifiers(text: str) -> set[str]:
    """Every word of a source text that could be an identifier (names, attributes, strings, comments)."""
    return set(_IDENTIFIER.findall(text))


def single_file_words(tree: Path) -> frozenset[str]:
    """Identifiers (any word of the source text: names, attributes, strings, comments) that occur in one
    .py file of `tree` only."""
    files: Counter[str] = Counter()
    for _, text in python_sources(tree):
        files.update(identifiers(text))
    return frozenset(word for word, n in files.items() if n == 1)


_METHOD_DEF = re.compile(r"^[ \t]+(?:async[ \t]+)?def[ \t]+(\w+)", re.MULTILINE)


def method_definitions(tree: Path, texts: Optional[Iterable[str]] = None) -> Counter[str]:
    """How often each name is defined as an indented `def` across the tree (or `texts`, its sources): a method
    (over-approximated: nested functions count too, which only keeps more methods and reports more strings)."""
    counts: Counter[str] = Counter()
    for text in (t for _, t in python_sources(tree)) if texts is None else texts:
        counts.update(_METHOD_DEF.findall(text))
    return counts


def name_table(tree: Path, where: str) -> dict[str, str]:
    """`module:NAME` of a top-level dict literal of string values keyed by enum members (fused_op's
    `BACKEND_METHODS = {KernelBackend.AOT: "forward_aot", ...}`) -> {"AOT": "forward_aot", ...}; {} when the
    module or the name is absent (a release before the table) or an entry is not of that shape."""
    module, _, name = where.partition(":")
    rel = Path(*module.split("."))
    for root in IMPORT_ROOTS:
        for path in (tree / root / rel.with_suffix(".py"), tree / root / rel / "__init__.py"):
            if path.is_file():
                return _name_table(ast.parse(path.read_text(errors="replace")), name)
    return {}


def _name_table(module: ast.Module, name: str) -> dict[str, str]:
    for stmt in module.body:
        target = (stmt.target if isinstance(stmt, ast.AnnAssign)
                  else stmt.targets[0] if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 else None)
        if not (isinstance(target, ast.Name) and target.id == name and isinstance(stmt.value, ast.Dict)):
            continue
        table = {}
        for key, value in zip(stmt.value.keys, stmt.value.values):
            if not (isinstance(key, ast.Attribute) and isinstance(value, ast.Constant) and isinstance(value.value, str)):
                return {}
            table[key.attr] = value.value
        return table
    return {}
