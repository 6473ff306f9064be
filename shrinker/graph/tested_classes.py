"""Classes the kept tree only ever tests against: no instance of one can exist, so `isinstance(x, C)` is False.

0.5.23's memory_pool.MiniMaxSparseKVPool once the MiniMax models went: the disaggregation, HiCache and HiSparse
code still asks `isinstance(pool, MiniMaxSparseKVPool)`, but nothing constructs one any more. Such a class
is found from the whole tree's text (`ast`, rule-free) when each holds:
- one class of that name in the tree and no other binding of the name (a def, an assignment, an import
  under another name): every occurrence of the identifier means that class;
- no base of another class, no call, no attribute read (`C.create(...)`, `mod.C`), no value passed on: every
  read is the class argument of a builtin `isinstance` (alone, in a tuple, in a `|` union), a type
  annotation of a function's parameter or return or of a variable outside a class body (a class body's
  annotation is a pydantic or dataclass field, which a parser may construct), or an element of a
  module-level tuple that is itself read only as `isinstance`'s class argument (`_SIZEABLE_POOLS`), or
  `C.m` for a method `m` the class body defines once with a plain `def` (no decorator: a classmethod may build
  `cls()`) as an element of a literal that is the right operand of `in` or `not in` (allreduce's
  `type(plan.norm).forward_with_allreduce_fusion in (RMSNorm.f, GemmaRMSNorm.f)`: C's own function object is
  reachable only through such reads, or through an instance, so no value tested can be it); an annotated
  function has no decorator beyond the method kinds (an endpoint's parameter is built by its framework); the
  module binding `isinstance` itself is not the builtin, so none of its tests count;
- no string names it (`"MiniMaxSparseKVPool"`, `"pkg.mod:MiniMaxSparseKVPool"`: a lookup by name may
  construct it; prose that mentions it is no lookup);
- it is no Protocol, takes no metaclass or class keywords and defines no `__subclasshook__` or
  `__instancecheck__` (`isinstance` against those may hold for objects of other classes); it has no
  decorator (a registration builds it by key); its module imports no unpickler (pickle, dill, cloudpickle:
  custom_logit_processor builds a client's `DisallowedTokensLogitsProcessor` from bytes).
Instances come from a constructor call, a subclass's, a lookup by name or bytes unpickled; the tree has none.
"""

from __future__ import annotations

import ast
import re
from collections import Counter, defaultdict
from pathlib import Path
from typing import Iterable

from shrinker.graph.sources import parsed_modules, python_sources

# decorators that leave a function called as written (no framework builds its parameters)
METHOD_KINDS = {"staticmethod", "classmethod", "property", "abstractmethod", "override", "cached_property"}
_HOOKS = {"__subclasshook__", "__instancecheck__"}
_UNPICKLERS = {"pickle", "dill", "cloudpickle"}
NAME_LOOKUP = re.compile(r"[\w.:]*?(\w+)")  # a string that could name a class or member: `C`, `a.b.C`, `a.b:C`


def classes_only_tested(tree: Path) -> frozenset[str]:
    """The names of the tree's classes that only `isinstance` tests and annotations read (module doc)."""
    return classes_only_tested_in(text for _, text in python_sources(tree))


def classes_only_tested_in(texts: Iterable[str]) -> frozenset[str]:
    found = _Found()
    for module in parsed_modules(texts):
        _Scan(module, found).run()
    bad = set(found.bad)
    for name, members in found.tuple_members.items():
        if name in bad or found.tuple_bindings[name] != 1:  # a tuple read otherwise: its classes are read so
            bad |= members
    return frozenset(name for name in found.fit if found.classes[name] == 1 and name not in bad
                     and name in found.tested and found.method_reads[name] <= found.plain_methods[name])


class _Found:
    """What the scan of every module gathers."""

    def __init__(self) -> None:
        self.classes: Counter[str] = Counter()  # class name -> its class statements
        self.fit: set[str] = set()  # defined as a class that may be tested only
        self.bad: set[str] = set()  # read, bound or named otherwise somewhere
        self.tested: set[str] = set()  # the class argument of some isinstance test
        self.tuple_members: dict[str, set[str]] = defaultdict(set)  # module-level tuple of names -> its names
        self.tuple_bindings: Counter[str] = Counter()
        self.plain_methods: dict[str, set[str]] = defaultdict(set)  # class -> methods its body defines plainly
        self.method_reads: dict[str, set[str]] = defaultdict(set)  # class -> `C.m` read as an `in` element


class _Scan:
    def __init__(self, module: ast.Module, found: _Found) -> None:
        self.module, self.found, self.bad = module, found, found.bad
        self.parents: dict[ast.AST, ast.AST] = {}
        for node in ast.walk(module):
            for child in ast.iter_child_nodes(node):
                self.parents[child] = node
        # a module binding `isinstance` has no builtin test: every read there counts as a use
        self.own_isinstance = any(isinstance(n, ast.Name) and n.id == "isinstance" and isinstance(n.ctx, ast.Store)
                                  or isinstance(n, (ast.FunctionDef, ast.ClassDef)) and n.name == "isinstance"
                                  for n in ast.walk(module))
        # a module that unpickles may build its classes from bytes a client sent (custom_logit_processor's
        # dill.loads of a `DisallowedTokensLogitsProcessor`)
        self.unpickles = any(_imported_roots(n) & _UNPICKLERS for n in ast.walk(module))
        # module-level `T = (A, B)`: A and B count as tested if T is read only as an isinstance class
        self.tuples: dict[int, str] = {}
        for node in module.body:
            if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                    and isinstance(node.value, ast.Tuple) and all(isinstance(e, ast.Name) for e in node.value.elts)):
                self.tuples[id(node.value)] = self.tuples[id(node.targets[0])] = node.targets[0].id

    def run(self) -> None:
        for node in ast.walk(self.module):
            if isinstance(node, ast.ClassDef):
                self.found.classes[node.name] += 1
                hooks = {n.name for n in node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
                if (node.keywords or node.decorator_list or hooks & _HOOKS or self.unpickles
                        or any("Protocol" in ast.unparse(b) for b in node.bases)):
                    self.bad.add(node.name)  # registered by its decorator, or tested structurally
                else:
                    self.found.fit.add(node.name)
                    self.found.plain_methods[node.name] |= _plain_methods(node)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.bad.add(node.name)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                for alias in node.names:
                    if alias.asname and alias.asname != alias.name.rpartition(".")[2]:
                        self.bad.update({alias.asname, alias.name.rpartition(".")[2]})
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                match = NAME_LOOKUP.fullmatch(node.value.strip())
                if match:
                    self.bad.add(match.group(1))
            elif isinstance(node, ast.Name):
                if id(node) in self.tuples:
                    self.found.tuple_bindings[node.id] += 1
                elif not isinstance(node.ctx, ast.Load) or not self._allowed(node):
                    self.bad.add(node.id)
            elif isinstance(node, ast.Attribute):
                self.bad.add(node.attr)
            elif isinstance(node, (ast.Global, ast.Nonlocal)):
                self.bad.update(node.names)
            elif isinstance(node, ast.arg):
                self.bad.add(node.arg)  # a parameter of that name would shadow the class
            elif isinstance(node, ast.ExceptHandler) and node.name:
                self.bad.add(node.name)

    def _isinstance_class(self, node: ast.expr) -> bool:
        if self.own_isinstance:
            return False
        child, parent = node, self.parents.get(node)
        while isinstance(parent, ast.Tuple) or (isinstance(parent, ast.BinOp) and isinstance(parent.op, ast.BitOr)):
            child, parent = parent, self.parents.get(parent)
        return (isinstance(parent, ast.Call) and isinstance(parent.func, ast.Name) and parent.func.id == "isinstance"
                and len(parent.args) == 2 and not parent.keywords and parent.args[1] is child)

    def _allowed(self, node: ast.Name) -> bool:
        if self._isinstance_class(node):
            self.found.tested.add(node.id)
            return True
        if self._member_compared(node):
            return True
        tuple_name = self.tuples.get(id(self.parents.get(node)))
        if tuple_name is not None:
            self.found.tuple_members[tuple_name].add(node.id)
            self.found.tested.add(node.id)
            return True
        return self._annotation(node)

    def _member_compared(self, node: ast.Name) -> bool:
        """`C.m` as an element of a literal on the right of `in`/`not in` (the method is checked after the scan)."""
        attribute = self.parents.get(node)
        literal = self.parents.get(attribute)
        compare = self.parents.get(literal)
        if not (isinstance(attribute, ast.Attribute) and attribute.value is node
                and isinstance(literal, (ast.Tuple, ast.List, ast.Set)) and isinstance(compare, ast.Compare)
                and len(compare.ops) == 1 and isinstance(compare.ops[0], (ast.In, ast.NotIn))
                and compare.comparators[0] is literal):
            return False
        self.found.method_reads[node.id].add(attribute.attr)
        return True

    def _annotation(self, node: ast.expr) -> bool:
        """An annotation of a plain function's parameter or return, or of a variable outside a class body."""
        child, parent = node, self.parents.get(node)
        while parent is not None and not isinstance(parent, (ast.stmt, ast.arg, ast.arguments)):
            child, parent = parent, self.parents.get(parent)
        if isinstance(parent, ast.arg) and parent.annotation is child:
            function = self.parents.get(self.parents.get(parent))
            return isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)) and _plain(function)
        if isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef)) and parent.returns is child:
            return _plain(parent)
        if isinstance(parent, ast.AnnAssign) and parent.annotation is child:
            return not isinstance(self.parents.get(parent), ast.ClassDef)
        return False


def _plain_methods(node: ast.ClassDef) -> set[str]:
    """The names the class body binds once, to an undecorated `def` (`__new__` builds an instance)."""
    bound: Counter[str] = Counter()
    plain: set[str] = set()
    for statement in node.body:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
            bound[statement.name] += 1
            if not statement.decorator_list and statement.name != "__new__":
                plain.add(statement.name)
        else:  # any other binding in the body, a `def` under an `if` too
            for target in ast.walk(statement):
                if isinstance(target, ast.Name) and not isinstance(target.ctx, ast.Load):
                    bound[target.id] += 1
                elif isinstance(target, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    bound[target.name] += 1
    return {name for name in plain if bound[name] == 1}


def _imported_roots(node: ast.AST) -> set[str]:
    """The top-level packages an import statement takes from (none for anything else)."""
    if isinstance(node, ast.Import):
        return {a.name.partition(".")[0] for a in node.names}
    if isinstance(node, ast.ImportFrom) and not node.level:
        return {(node.module or "").partition(".")[0]}
    return set()


def _plain(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """No decorator beyond the method kinds (`@app.post` builds its parameters from their annotations)."""
    def name(d: ast.expr) -> str:
        d = d.func if isinstance(d, ast.Call) else d
        return d.attr if isinstance(d, ast.Attribute) else d.id if isinstance(d, ast.Name) else ""

    return all(name(d) in METHOD_KINDS for d in function.decorator_list)

