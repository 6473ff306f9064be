"""Attributes that hold one constant for an object's whole life: `self.X = False` in `__init__`, read
only as `self.X` in that class, named by the platform vocabulary or another model family.

SGLang shapes (0.5.23): `self.use_aiter_fused_fp8_writer = False` (dsa_indexer.py, once `_use_aiter`
folded), `self.is_gpt_oss = (hasattr(...) and ...hf_config.model_type == "gpt_oss")` (serving_chat.py,
False once the served model_type folds), `self._gfx950_fused = None`. fold_platform reads each `self.X`
as its value, so `if self.use_aiter_fused_fp8_writer:` is a dead branch like `if _use_aiter:`, and drops
the store when it stands at the top of `__init__`.

What makes it exact (each checked, else the attribute is left alone):
- the name occurs in no other file of the kept tree (`CodemodInputs.single_file_words`): nothing else
  reads or writes it through any object, by attribute or by string;
- in its file every occurrence of the word is `self.X` inside one class's methods (no class attribute,
  property, string, `getattr`, nested class), and the file never writes attributes by name
  (`setattr(self`, `__dict__`, `vars(self)`);
- exactly one live store, a plain `self.X = value` (or `self.X: T = value`) in that class's `__init__`, on
  the path every call runs: at its top, or inside `if` branches whose tests fold to a constant (the others
  are dead and go in this run), never in a loop, `with`, `try` or an undecided `if`; no `return` in
  `__init__` and no read of `self.X` in `__init__` before the store (upstream would raise AttributeError
  there);
- the value folds, free of side effects, to True, False or None; any other store, in `__init__` or another
  method, is a plain store of the same constant (0.5.23's unquant: `self._aiter_runner: Optional[MoeRunner]
  = None` in `__init__` and again in `create_moe_runner`): storing it again changes nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional

import libcst as cst
import libcst.helpers  # noqa: F401  (cst.helpers)
import libcst.matchers  # noqa: F401  (cst.matchers)

from shrinker.codemods.bindings import TargetVisitor
from shrinker.graph.bindings import LOOKUP_ANY, LOOKUP_CALLS

if TYPE_CHECKING:
    from shrinker.codemods.fold_platform import Folder

Constant = Optional[bool]  # True, False or None
_BY_NAME = re.compile(r"setattr\(\s*self\b|__dict__|vars\(\s*self\s*\)")


@dataclass
class _Use:
    node: cst.Attribute
    owner: Optional[str]  # the innermost enclosing class's qualified name, None outside any class
    method: Optional[str]  # that class's method it is in; None in a nested function or lambda's own scope
    order: int  # traversal order, to tell a read before the store from one after
    store: bool = False
    simple_store: Optional[cst.Assign | cst.AnnAssign] = None  # the `self.X = value` it is the one target of


class _Scan(TargetVisitor):
    """Every `self.X` in a module: where it stands and whether it is written."""

    def __init__(self) -> None:
        super().__init__()
        self.uses: dict[str, list[_Use]] = {}
        self.returns_in_init: set[str] = set()  # classes whose __init__ has a return
        self._classes: list[str] = []
        self._functions: list[tuple[int, str]] = []  # (class depth, name)
        self._targets: set[int] = set()
        self._simple: dict[int, cst.Assign | cst.AnnAssign] = {}
        self._order = 0  # `self.X` nodes seen so far

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._classes.append(f"{self._classes[-1]}.{node.name.value}" if self._classes else node.name.value)

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        self._classes.pop()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._functions.append((len(self._classes), node.name.value))

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self._functions.pop()

    def visit_Lambda(self, node: cst.Lambda) -> None:
        self._functions.append((len(self._classes), "<lambda>"))

    def leave_Lambda(self, original_node: cst.Lambda) -> None:
        self._functions.pop()

    def visit_Return(self, node: cst.Return) -> None:
        if self._method() == "__init__":
            self.returns_in_init.add(self._classes[-1])

    def _method(self) -> Optional[str]:
        """The method directly inside the innermost class (None inside a nested function or lambda)."""
        if not self._classes or not self._functions or self._functions[-1][0] != len(self._classes):
            return None
        inner = [f for f in self._functions if f[0] == len(self._classes)]
        return self._functions[-1][1] if len(inner) == 1 else None

    def visit_Assign(self, node: cst.Assign) -> None:
        if len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Attribute):
            self._simple[id(node.targets[0].target)] = node

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        super().visit_AnnAssign(node)
        if node.value is not None and isinstance(node.target, cst.Attribute):
            self._simple[id(node.target)] = node

    def target(self, node: cst.CSTNode) -> None:
        self._targets.update(id(n) for n in cst.matchers.findall(node, cst.matchers.Attribute()))

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if isinstance(node.value, cst.Name) and node.value.value == "self":
            self._order += 1
            use = _Use(node, self._classes[-1] if self._classes else None, self._method(), self._order,
                       store=id(node) in self._targets, simple_store=self._simple.get(id(node)))
            self.uses.setdefault(node.attr.value, []).append(use)


def read_attributes(tree: cst.Module) -> set[str]:
    """The names X of every `self.X` the module reads (writes aside)."""
    scan = _Scan()
    tree.visit(scan)
    return {name for name, uses in scan.uses.items() if any(not use.store for use in uses)}


# An object's namespace read whole (`self.__dict__`, `vars(self)`); graph/bindings' NAMESPACE_CALLS also has
# globals()/locals(), which read a module's or a frame's names, not an object's attributes.
_NAMESPACE_READS = re.compile(r"__dict__|\bvars\(")


def _reads_by_computed_name(tree: cst.Module) -> bool:
    """The module may read an attribute whose name it computes: `getattr(self, k)`, `hasattr(x, name)` with a
    name that is not a string literal, `attrgetter(path)` unless every path is one, any other lookup call
    (graph/bindings LOOKUP_ANY: `methodcaller(name)`), or a namespace read (`__dict__`, `vars(`). A literal name
    (`getattr(layer, "aiter_bpreshuffled", False)`) is a word `_occurrences` counts."""
    if _NAMESPACE_READS.search(tree.code):
        return True
    for call in cst.matchers.findall(tree, cst.matchers.Call()):
        if not isinstance(call.func, (cst.Name, cst.Attribute)):
            continue  # `attrgetter("a")(self)`: the inner call is the lookup
        func = cst.helpers.get_full_name_for_node(call.func) or ""
        short = func.rpartition(".")[2]
        if func in LOOKUP_CALLS or short in ("getattr", "hasattr"):
            names = call.args[1:2]
        elif short == "attrgetter":
            names = call.args
        elif short in LOOKUP_ANY:
            return True
        else:
            continue
        if not names or any(a.star or not isinstance(a.value, cst.SimpleString) for a in names):
            return True
    return False


def unread_attributes(tree: cst.Module, single_file_words: Optional[frozenset[str]], names: re.Pattern,
                      predicates: frozenset[str] = frozenset()) -> frozenset[str]:
    """Attributes named by the platform vocabulary, another model family or a predicate rule
    (`use_fused_clamp_act_mul`, a ROCm-only flag) that `tree` only ever stores, as
    plain `self.X = value` statements in methods, and that no other file names (0.5.23's deepseek_v2
    `self.use_fused_clamp_act_mul = False`, once its one read folded in an earlier run): nothing can read
    them, so their stores with a pure value go (fold_platform's drop_unread_attribute_stores). A file that
    may read an attribute by a computed name (`getattr(self, k)`, `__dict__`, `vars(`) keeps all of them; a
    literal name read by getattr counts as an occurrence."""
    if not single_file_words or _reads_by_computed_name(tree):
        return frozenset()
    scan = _Scan()
    tree.visit(scan)
    occurrences = _occurrences(tree)
    return frozenset(
        name for name, uses in scan.uses.items()
        if name in single_file_words and (names.search(name) or name in predicates) and occurrences.get(name) == len(uses)
        and all(u.store and u.simple_store is not None and u.method is not None for u in uses))


def _occurrences(tree: cst.Module) -> dict[str, int]:
    """How often each word stands in the code as a name or an attribute, or inside a string literal."""
    counts: dict[str, int] = {}

    class _Words(cst.CSTVisitor):
        def visit_Name(self, node: cst.Name) -> None:
            counts[node.value] = counts.get(node.value, 0) + 1

        def visit_SimpleString(self, node: cst.SimpleString) -> None:
            for word in re.findall(r"\w+", node.value):
                counts[word] = counts.get(word, 0) + 1

        def visit_FormattedStringText(self, node: cst.FormattedStringText) -> None:
            for word in re.findall(r"\w+", node.value):
                counts[word] = counts.get(word, 0) + 1

    tree.visit(_Words())
    return counts


def _live_stores(init: cst.FunctionDef, folder: "Folder") -> tuple[set[int], set[int]]:
    """Ids of the Assign statements on `__init__`'s path every call runs, and of those in dead branches
    (the ones under a loop, `with`, `try` or an undecided `if` are in neither: conditional)."""
    live: set[int] = set()
    dead: set[int] = set()

    def mark_dead(node: cst.CSTNode) -> None:
        dead.update(id(a) for a in cst.matchers.findall(node, cst.matchers.Assign() | cst.matchers.AnnAssign()))

    def walk(block: cst.BaseSuite, alive: bool) -> None:
        if not alive:
            mark_dead(block)
            return
        for stmt in block.body if isinstance(block, cst.IndentedBlock) else [block]:
            if isinstance(stmt, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
                live.update(id(small) for small in stmt.body if isinstance(small, (cst.Assign, cst.AnnAssign)))
            elif isinstance(stmt, cst.If):
                if_chain(stmt, True)

    def if_chain(node: cst.If, alive: bool) -> None:
        if not alive:
            mark_dead(node)
            return
        folded = folder.fold(node.test)
        value = folded.value if folded.pure else None
        if value is None:
            return
        walk(node.body, value is True)
        if isinstance(node.orelse, cst.If):
            if_chain(node.orelse, value is False)
        elif isinstance(node.orelse, cst.Else):
            walk(node.orelse.body, value is False)

    walk(init.body, True)
    return live, dead


def _init_of(tree: cst.Module, qualname: str) -> Optional[cst.FunctionDef]:
    parts = qualname.split(".")
    body: list = list(tree.body)
    cls: Optional[cst.ClassDef] = None
    for part in parts:
        cls = next((s for s in body if isinstance(s, cst.ClassDef) and s.name.value == part), None)
        if cls is None:
            return None
        body = list(cls.body.body) if isinstance(cls.body, cst.IndentedBlock) else []
    inits = [s for s in body if isinstance(s, cst.FunctionDef) and s.name.value == "__init__"]
    return inits[0] if len(inits) == 1 else None


def attribute_constants(tree: cst.Module, folder: "Folder", single_file_words: Optional[frozenset[str]],
                        names: re.Pattern) -> dict[str, Constant]:
    """Attribute name -> its constant, for the attributes of `tree`'s classes that hold one (module doc)."""
    if not single_file_words:
        return {}
    source = tree.code
    if _BY_NAME.search(source):
        return {}
    scan = _Scan()
    tree.visit(scan)
    found: dict[str, Constant] = {}
    for name, uses in scan.uses.items():
        if name not in single_file_words or not names.search(name):
            continue
        owners = {u.owner for u in uses}
        if len(owners) != 1 or None in owners:
            continue
        owner = next(iter(owners))
        if owner in scan.returns_in_init or len(re.findall(rf"\b{re.escape(name)}\b", source)) != len(uses):
            continue
        if any(u.method is None for u in uses):
            continue  # read in a nested function or lambda: its `self` may be another object
        init = _init_of(tree, owner)
        stores = [u for u in uses if u.store]
        if init is None or any(u.simple_store is None for u in stores):
            continue
        live, dead = _live_stores(init, folder)
        live_stores = [u for u in stores if id(u.simple_store) in live]
        others = [u for u in stores if id(u.simple_store) not in live and id(u.simple_store) not in dead]
        if len(live_stores) != 1:
            continue
        store = live_stores[0]
        if any(u.method == "__init__" and not u.store and u.order < store.order for u in uses):
            continue  # read before it is set: upstream raises there
        value = _constant(store.simple_store.value, folder)
        if value is not _UNKNOWN and all(_constant(u.simple_store.value, folder) is value for u in others):
            found[name] = value  # type: ignore[assignment]
    return found


_UNKNOWN = object()


def _constant(value: cst.BaseExpression, folder: "Folder"):
    if isinstance(value, cst.Name) and value.value in ("True", "False", "None"):
        return {"True": True, "False": False, "None": None}[value.value]
    folded = folder.fold(value, as_value=True)
    if folded.pred and folded.pure and isinstance(folded.node, cst.Name) and folded.node.value in ("True", "False"):
        return folded.node.value == "True"
    return _UNKNOWN
