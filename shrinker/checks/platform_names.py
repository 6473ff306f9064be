"""Undefined names that were unbound on CUDA upstream too: bound only under another platform's guard.

`if _is_hip: from aiter.ops.shuffle import shuffle_weight` binds `shuffle_weight` only on ROCm. Upstream on
CUDA, any code reaching a use of it raises NameError; once the folding removes the dead import, pyflakes
calls the use undefined, but the pruned tree behaves exactly as upstream did. Such a use is a note
("unbound on CUDA upstream too"), not a regression. A name counts only when every binding of it in the
upstream file sits in a block that is dead on CUDA: the body of an `if`/`elif` whose test folds to False
(rules.platform predicates), the `else` of one that folds to True, or a `try` body that imports a
platform package first (it always raises ImportError on CUDA).

The same for `self_attributes` (`split_unset`): a read of an attribute upstream's file sets only in code
dead on CUDA, or of a method the pruning removed that raised NameError on CUDA whenever called, failed
upstream on CUDA too.
"""

from __future__ import annotations

import ast
import copy
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


_EXITS = (ast.Return, ast.Raise, ast.Continue, ast.Break)


def stores_by_liveness(source: str, table: PredicateTable, packages: frozenset[str]) -> tuple[set[str], set[str]]:
    """(attributes set somewhere live on CUDA, attributes set only in dead code) of a module's source.

    A store is `obj.X = / += / for obj.X in / with ... as obj.X`, `setattr(obj, "X", ...)` or a name of
    a class body. Dead: the blocks `bindings_by_liveness` calls dead, and the rest of a block after an
    `if` that always runs an exit (`if not is_xpu(): ...; return`). A test may read an attribute the
    file only ever sets to one constant (`self.uses_aiter = _is_hip and ...` makes `if
    self.uses_aiter:` False)."""
    tree = ast.parse(source)
    values: dict[str, set] = {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in (e for target in targets for e in ast.walk(target)):
                if isinstance(t, ast.Attribute) and isinstance(t.ctx, ast.Store):
                    value = None
                    if isinstance(node, ast.Assign) and len(node.targets) == 1 and node.targets[0] is t:
                        value = evaluate_source(ast.unparse(node.value), table)
                    values.setdefault(t.attr, set()).add(value)
    constants = {attr: next(iter(v)) for attr, v in values.items() if len(v) == 1 and None not in v}

    class _Fold(ast.NodeTransformer):
        def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
            if isinstance(node.ctx, ast.Load) and node.attr in constants:
                return ast.copy_location(ast.Constant(constants[node.attr]), node)
            return self.generic_visit(node)

    def value_of(test: ast.expr) -> bool | None:
        return evaluate_source(ast.unparse(_Fold().visit(copy.deepcopy(test))), table)

    live: set[str] = set()
    dead: set[str] = set()

    def stored(node: ast.AST) -> set[str]:
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            return {node.attr}
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "setattr"
                and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant)
                and isinstance(node.args[1].value, str)):
            return {node.args[1].value}
        if isinstance(node, ast.ClassDef):
            out = set()
            for stmt in node.body:
                if isinstance(stmt, (ast.Assign, ast.AnnAssign)):
                    targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                    out |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
                else:
                    out |= names_bound_by(stmt)
            return out
        return set()

    def exits(block: list[ast.stmt]) -> bool:
        return bool(block) and isinstance(block[-1], _EXITS)

    def visit_block(block: list[ast.stmt], is_dead: bool) -> None:
        for stmt in block:
            visit(stmt, is_dead)
            if isinstance(stmt, ast.If) and not is_dead:
                value = value_of(stmt.test)
                if (value is True and exits(stmt.body)) or (value is False and exits(stmt.orelse)):
                    is_dead = True  # the rest of the block never runs on CUDA

    def visit(node: ast.AST, is_dead: bool) -> None:
        (dead if is_dead else live).update(stored(node))
        if isinstance(node, ast.If):
            value = value_of(node.test)
            visit(node.test, is_dead)
            visit_block(node.body, is_dead or value is False)
            visit_block(node.orelse, is_dead or value is True)
            return
        if isinstance(node, ast.Try) and node.body and imports_package(node.body[0], packages):
            visit_block(node.body, True)
            for child in (*node.handlers, *node.orelse, *node.finalbody):
                visit(child, is_dead)
            return
        for name, block in ast.iter_fields(node):
            if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                visit_block(block, is_dead)
            elif isinstance(block, list):
                for child in block:
                    if isinstance(child, ast.AST):
                        visit(child, is_dead)
            elif isinstance(block, ast.AST):
                visit(block, is_dead)

    visit_block(tree.body, False)
    return live, dead - live


_SIMPLE = (ast.Expr, ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Return)
_MAYBE_SKIPPED = (ast.IfExp, ast.BoolOp, ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp,
                  ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def methods_failing_on_cuda(source: str, table: PredicateTable, packages: frozenset[str]) -> set[str]:
    """Names of methods that raise NameError on CUDA whenever called: a simple statement of the body
    that always runs (no earlier statement may exit) reads a module name bound only in dead code
    (`w = dynamic_mxfp4_quant(w)`, imported under `if _is_hip:`)."""
    dead_only = bindings_by_liveness(source, table, packages)[1]
    out: set[str] = set()

    def reads_dead(node: ast.AST, local: set[str]) -> bool:
        if isinstance(node, _MAYBE_SKIPPED):
            return False
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            return node.id in dead_only and node.id not in local
        return any(reads_dead(child, local) for child in ast.iter_child_nodes(node))

    for cls in ast.walk(ast.parse(source)):
        if not isinstance(cls, ast.ClassDef):
            continue
        for fn in cls.body:
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            local = {n for node in ast.walk(fn) if node is not fn for n in names_bound_by(node)}
            for stmt in fn.body:
                if isinstance(stmt, _SIMPLE) and reads_dead(stmt, local):
                    out.add(fn.name)
                    break
                if any(isinstance(n, _EXITS) for n in ast.walk(stmt)):
                    break  # the rest may never run
    return out


@lru_cache(maxsize=256)
def _failed_upstream(path: str, mtime: float, table: PredicateTable, packages: frozenset[str]
                     ) -> tuple[frozenset[str], frozenset[str]]:
    """(attributes set only in dead code, methods that raise NameError on CUDA) of an upstream file."""
    try:
        source = Path(path).read_text(errors="replace")
        return (frozenset(stores_by_liveness(source, table, packages)[1]),
                frozenset(methods_failing_on_cuda(source, table, packages)))
    except (OSError, SyntaxError, ValueError):
        return frozenset(), frozenset()


def split_unset(findings: list, upstream_root: Path, rules) -> tuple[list, list[str]]:
    """self_attributes regressions -> (real regressions, notes for reads that failed on CUDA upstream
    too: the attribute upstream's file set only in code dead on CUDA (AttributeError there too), or a
    method of it that raises NameError on CUDA whenever called, which the pruning removed). A finding's
    key is (rel, "unset-attribute", class, attribute)."""
    if rules is None:
        return list(findings), []
    table, packages = _table(rules), frozenset(rules.platform.packages)
    real, notes = [], []
    for f in findings:
        rel, attr = f.key[0], f.key[-1]
        path = Path(upstream_root) / rel
        dead, failing = _failed_upstream(str(path), path.stat().st_mtime, table, packages) if path.is_file() \
            else (frozenset(), frozenset())
        if attr in dead:
            notes.append(f"{f.text}: set upstream only in code dead on CUDA (AttributeError on CUDA there too)")
        elif attr in failing:
            notes.append(f"{f.text}: upstream's {attr}() uses a name bound only on other platforms "
                         "(NameError on CUDA there)")
        else:
            real.append(f)
    return real, notes
