"""Undefined names that were unbound on CUDA upstream too: bound only under another platform's guard.

`if _is_hip: from aiter.ops.shuffle import shuffle_weight` binds `shuffle_weight` only on ROCm. Upstream on
CUDA, any code reaching a use of it raises NameError; once the folding removes the dead import, pyflakes
calls the use undefined, but the pruned tree behaves exactly as upstream did. Such a use is a note
("unbound on CUDA upstream too"), not a regression. A name counts only when every binding of it in the
upstream file sits in a block that is dead on CUDA: the body of an `if`/`elif` whose test folds to False
(rules.platform predicates), the `else` of one that folds to True, or a `try` body that imports a
platform package first (it always raises ImportError on CUDA).
"""

from __future__ import annotations

import ast
from functools import lru_cache
from pathlib import Path

from shrinker.graph.bindings import imports_package, names_bound_by
from shrinker.rules.predicates import PredicateTable, evaluate_source


def bindings_by_liveness(source: str, table: PredicateTable, packages: frozenset[str]) -> tuple[set[str], set[str]]:
    """(names bound somewhere live on CUDA, names bound only in dead blocks) of a module's source."""
    live: set[str] = set()
    dead: set[str] = set()
    tree = ast.parse(source)

    def visit(node: ast.AST, is_dead: bool) -> None:
        (dead if is_dead else live).update(names_bound_by(node))
        if isinstance(node, ast.If):
            value = evaluate_source(ast.unparse(node.test), table)
            visit(node.test, is_dead)
            for stmt in node.body:
                visit(stmt, is_dead or value is False)
            for stmt in node.orelse:
                visit(stmt, is_dead or value is True)
            return
        if isinstance(node, ast.Try) and node.body and imports_package(node.body[0], packages):
            for stmt in node.body:
                visit(stmt, True)
            for child in (*node.handlers, *node.orelse, *node.finalbody):
                visit(child, is_dead)
            return
        for child in ast.iter_child_nodes(node):
            visit(child, is_dead)

    visit(tree, False)
    return live, dead - live


@lru_cache(maxsize=256)
def _dead_only(path: str, mtime: float, table: PredicateTable, packages: frozenset[str]) -> frozenset[str]:
    try:
        return frozenset(bindings_by_liveness(Path(path).read_text(errors="replace"), table, packages)[1])
    except (OSError, SyntaxError, ValueError):
        return frozenset()


def unbound_upstream_too(upstream_root: Path, rel: str, name: str, rules) -> bool:
    """True when `name`, undefined in pruned `rel`, was bound in upstream's `rel` only in dead blocks."""
    path = Path(upstream_root) / rel
    if not path.is_file():
        return False
    table = _table(rules)
    return name in _dead_only(str(path), path.stat().st_mtime, table, frozenset(rules.platform.packages))


def _table(rules) -> PredicateTable:
    """One PredicateTable per Rules object, kept on it (an id()-keyed dict could outlive the object)."""
    table = getattr(rules, "_predicate_table", None)
    if table is None:
        table = PredicateTable(rules.platform)
        object.__setattr__(rules, "_predicate_table", table)
    return table


def split_undefined(findings: list, upstream_root: Path, rules) -> tuple[list, list[str]]:
    """Undefined-name regressions -> (real regressions, notes for names unbound on CUDA upstream too).
    A finding's key is (rel, "undefined", name)."""
    if rules is None:
        return list(findings), []
    real, notes = [], []
    for f in findings:
        rel, _, name = f.key
        if unbound_upstream_too(upstream_root, rel, name, rules):
            notes.append(f"{f.text}: bound upstream only on other platforms (NameError on CUDA there too)")
        else:
            real.append(f)
    return real, notes
