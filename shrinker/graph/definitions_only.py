"""Whether importing a module only defines things: the test a module must pass before the plan may cut it
for kept code that only tests `isinstance` against its classes (plan/reach.py).

Cutting such a module loses what its import runs. A module whose top level is imports, a docstring,
functions and classes under decorators that only wrap (`torch.compile`, `dataclass`, `property`), and
assignments of literals, names and a few constructors (`logging.getLogger(__name__)`) registers nothing,
so with it gone no kept code can reach its classes: each isinstance test against them is False. A class
may still announce itself to a base that watches its subclasses (`__init_subclass__`, a metaclass, a
`Base.__subclasses__()` scan elsewhere in the tree): each base is followed through the module's imports
to its class in the tree, and one that watches, or one that cannot be found, keeps the module. A base
from outside the tree (`torch.nn.Module`) is taken as one that does not. Read with `ast`, rule-free.
"""

from __future__ import annotations

import ast
import re
from typing import Callable, Iterable, Optional

from shrinker.graph.bindings import dotted
from shrinker.graph.parse import resolve_relative

# Decorators and calls whose run only wraps or builds a value (Python's and the kernel libraries').
PURE_DECORATORS = frozenset({
    "dataclass", "dataclasses.dataclass", "property", "staticmethod", "classmethod", "abstractmethod",
    "abc.abstractmethod", "cached_property", "functools.cached_property", "lru_cache", "functools.lru_cache",
    "cache", "functools.cache", "overload", "typing.overload", "override", "typing_extensions.override",
    "torch.compile", "torch.no_grad", "torch.inference_mode", "triton.jit", "enum.unique", "unique",
})
PURE_CALLS = frozenset({
    "logging.getLogger", "getLogger", "TypeVar", "typing.TypeVar", "NewType", "typing.NewType", "frozenset",
    "set", "tuple", "dict", "list", "object", "field", "dataclasses.field",
})
_WATCHING_METACLASSES = frozenset({"ABCMeta", "abc.ABCMeta", "type"})  # metaclasses known to register nothing
_SUBCLASS_SCAN = re.compile(r"\b([A-Za-z_]\w*)\.__subclasses__\(")


def scanned_bases(texts: Iterable[str]) -> frozenset[str]:
    """Names of the classes some module lists the subclasses of (`BaseReq.__subclasses__()`)."""
    return frozenset(name for text in texts for name in _SUBCLASS_SCAN.findall(text))


def _pure_value(node: Optional[ast.expr]) -> bool:
    """A value whose evaluation runs nothing of the tree's: literals, names, attribute reads, containers of
    them, and calls of PURE_CALLS with such arguments."""
    if node is None or isinstance(node, (ast.Constant, ast.Name, ast.Attribute)):
        return True
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return all(_pure_value(e) for e in node.elts)
    if isinstance(node, ast.Dict):
        return all(_pure_value(k) for k in node.keys if k is not None) and all(_pure_value(v) for v in node.values)
    if isinstance(node, ast.Call):
        return (dotted(node.func) in PURE_CALLS and all(_pure_value(a) for a in node.args)
                and all(_pure_value(k.value) for k in node.keywords))
    if isinstance(node, ast.Subscript):  # a type annotation's value: `Optional[int]`
        return _pure_value(node.value) and _pure_value(node.slice)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return _pure_value(node.left) and _pure_value(node.right)
    return False


def _pure_decorator(node: ast.expr) -> bool:
    call = node if isinstance(node, ast.Call) else None
    name = dotted(call.func if call else node)
    return name in PURE_DECORATORS and (call is None or (all(_pure_value(a) for a in call.args)
                                                         and all(_pure_value(k.value) for k in call.keywords)))


def _binds(target: ast.expr) -> bool:
    """An assignment target that only binds names (`REG["m"] = ...`, `mod.X = ...` change another object)."""
    if isinstance(target, ast.Name):
        return True
    return isinstance(target, (ast.Tuple, ast.List)) and all(_binds(e) for e in target.elts)


def _type_checking(node: ast.If) -> bool:
    return dotted(node.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING")


def _statements_define(body: list[ast.stmt], in_class: bool) -> bool:
    for stmt in body:
        if isinstance(stmt, (ast.Import, ast.ImportFrom, ast.Pass)):
            continue
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
            continue  # a docstring
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if not all(_pure_decorator(d) for d in stmt.decorator_list):
                return False
            if not all(_pure_value(d) for d in (*stmt.args.defaults, *stmt.args.kw_defaults)):
                return False
            continue
        if isinstance(stmt, ast.ClassDef):
            if not all(_pure_decorator(d) for d in stmt.decorator_list):
                return False
            if any(k.arg == "metaclass" and dotted(k.value) not in _WATCHING_METACLASSES for k in stmt.keywords):
                return False
            if not _statements_define(stmt.body, in_class=True):
                return False
            continue
        if isinstance(stmt, ast.Assign) and _pure_value(stmt.value) and all(_binds(t) for t in stmt.targets):
            continue
        if isinstance(stmt, ast.AnnAssign) and _pure_value(stmt.value) and _binds(stmt.target):
            continue
        if isinstance(stmt, ast.If) and _type_checking(stmt):
            continue  # never runs
        if isinstance(stmt, ast.Try) and not in_class and _statements_define(stmt.body, False) and all(
                _statements_define(h.body, False) for h in stmt.handlers) and _statements_define(
                stmt.orelse + stmt.finalbody, False):
            continue
        return False
    return True


def runs_only_definitions(text: str) -> bool:
    """Importing the module defines functions, classes and plain values and runs nothing else."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return False
    return _statements_define(tree.body, in_class=False)


def bases_watch(text: str, module: str, is_package: bool, source_of: Callable[[str], Optional[str]],
                scanned: frozenset[str], package_of: Callable[[str], bool], in_tree: Callable[[str], bool]) -> bool:
    """Some class the module defines has a base in the tree, at any depth, that sees its subclasses: one
    defining `__init_subclass__`, built by a metaclass other than ABCMeta, or named in a
    `__subclasses__()` scan (`scanned`); or a base the module's imports do not lead to (kept: unknown).
    `source_of(m)`: a module's text, None where the tree has no file for it; `package_of(m)`: it is a
    package; `in_tree(m)`: m lies under one of the tree's top-level packages (else it is a library's)."""
    seen: set[tuple[str, str]] = set()

    def watches(tree: ast.Module, mod: str, is_pkg: bool, cls: ast.ClassDef) -> bool:
        if any(k.arg == "metaclass" and dotted(k.value) not in _WATCHING_METACLASSES for k in cls.keywords):
            return True
        if any(isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)) and s.name == "__init_subclass__"
               for s in cls.body):
            return True
        return any(base_watches(tree, mod, is_pkg, base) for base in cls.bases)

    def base_watches(tree: ast.Module, mod: str, is_pkg: bool, base: ast.expr) -> bool:
        name = dotted(base)
        if not name:
            return True
        if name.rpartition(".")[2] in scanned:
            return True
        found = _find_class(tree, mod, is_pkg, name)
        if found is None:
            return True
        if found == "outside":
            return False
        where, where_pkg, where_tree, cls = found
        if (where, cls.name) in seen:
            return False
        seen.add((where, cls.name))
        return watches(where_tree, where, where_pkg, cls)

    def _find_class(tree: ast.Module, mod: str, is_pkg: bool, name: str):
        head, _, rest = name.partition(".")
        for stmt in tree.body:
            if isinstance(stmt, ast.ClassDef) and stmt.name == head and not rest:
                return mod, is_pkg, tree, stmt
        for stmt in ast.walk(tree):
            if isinstance(stmt, ast.ImportFrom):
                origin = resolve_relative(mod, is_pkg, stmt.level, stmt.module or "")
                for alias in stmt.names:
                    if (alias.asname or alias.name) == head:
                        return _class_in(origin, alias.name) if not rest else _class_in(
                            f"{origin}.{alias.name}", rest)
            elif isinstance(stmt, ast.Import):
                for alias in stmt.names:
                    bound = alias.asname or alias.name.partition(".")[0]
                    if bound == head and rest:
                        target = alias.name if alias.asname else head
                        where = f"{target}.{rest}" if alias.asname else name
                        owner, _, cls_name = where.rpartition(".")
                        return _class_in(owner, cls_name)
        return None

    def _class_in(owner: str, cls_name: str):
        text_of = source_of(owner)
        if text_of is None:
            return None if in_tree(owner) else "outside"  # a library's class (torch.nn.Module)
        try:
            tree = ast.parse(text_of)
        except SyntaxError:
            return None
        return _find_class(tree, owner, package_of(owner), cls_name)

    try:
        tree = ast.parse(text)
    except SyntaxError:
        return True
    return any(isinstance(stmt, ast.ClassDef) and watches(tree, module, is_package, stmt) for stmt in tree.body)
