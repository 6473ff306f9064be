"""Enum members of another platform that nothing in the kept tree names: no code can produce one but a lookup
by a value that names that platform.

0.5.23's `MoeA2ABackend.MORI = "mori"`, `MoeRunnerBackend.INTEL_XPU = "intel_xpu"`, `TransferBackend.ASCEND =
"ascend"`: every CLI choice naming another platform went (the choices rules), no kept code reads the member, and
`MoeA2ABackend(get_exec().moe.moe_a2a_backend)` can only meet a value the pruned option accepts. A member goes
when each holds, read from the whole tree's text (`ast`, rule-free but for the vocabulary the caller passes):
- its class is the only class of that name, a plain `Enum`/`IntEnum`/`StrEnum`/`Flag` subclass (mixins allowed)
  with no decorator but `unique`, no metaclass or class keywords, no `_missing_`, `__new__`,
  `_generate_next_value_` or `_ignore_` (each can map a value to a member by code), and no method that may
  list its members (`cls` used but as `cls.MEMBER` or `cls(value)`, `type(...)`, `__class__`);
- the member is `NAME = "value"` in the class body and the vocabulary names the value (`"mori"`, `"ascend_tp"`);
- the identifier NAME occurs nowhere else: no name, attribute, keyword, definition or string that could look
  it up (`"MORI"`, `"E.MORI"`; prose is no lookup), except as a member of another class read under that
  class's own name (`KernelBackend.AITER`, where nothing rebinds `KernelBackend`);
- every use of the class name is `E.member` (no dunder or sunder: `__members__`, `_value2member_map_`), a
  call `E(x)` none of whose literal arguments is a candidate's value, an annotation, the class argument of
  `isinstance`/`issubclass`, or an alternative of a module-level union alias (`Like = E | Other`) whose own
  uses are all of these kinds: no iteration (`for b in E`, `list(E)`), membership (`"mori" in E`) or value passed
  on, which could list or test the members;
- at least one member of the class stays.
Exact for every value the kept CLI accepts: a lookup of a removed value raised ValueError later (the platform's
code is gone) and now raises it at the lookup. Outside the class, code holding a member could still list its
siblings through `type(member)`; the tree is not searched for that (no kept code does it for these enums).
"""

from __future__ import annotations

import ast
import re
from collections import Counter, defaultdict
from pathlib import Path
from typing import Callable, Iterable

from shrinker.graph.sources import python_sources

_ENUM_BASES = {"Enum", "IntEnum", "StrEnum", "Flag", "IntFlag"}
_DECORATORS = {"unique", "enum.unique"}
_VALUE_HOOKS = {"_missing_", "__new__", "_generate_next_value_", "_ignore_"}
_LOOKUP = re.compile(r"[\w.:]*?(\w+)")  # a string that could name a member: `M`, `E.M`, `pkg.mod:E.M`


def platform_enum_members(tree: Path, names_platform: Callable[[str], bool]) -> dict[str, frozenset[str]]:
    """Enum class name -> the members that go (module doc); `names_platform` says whether a value names
    another platform (the predicate table's vocabulary)."""
    return platform_enum_members_in((text for _, text in python_sources(tree)), names_platform)


def platform_enum_members_in(texts: Iterable[str], names_platform: Callable[[str], bool]
                             ) -> dict[str, frozenset[str]]:
    found = _Found()
    for text in texts:
        try:
            module = ast.parse(text)
        except (SyntaxError, ValueError):
            continue
        _Scan(module, found, names_platform).run()
    for alias, names in found.aliases.items():
        if alias in found.bad_classes:  # the alias is iterated or passed on: so may the class be
            found.bad_classes |= names
    out: dict[str, frozenset[str]] = {}
    for name, members in found.candidates.items():
        if found.classes[name] != 1 or name in found.bad_classes:
            continue
        gone = frozenset(m for m, value in members.items()
                         if _occurrences(found, name, m) == found.definitions[m] and value not in found.looked_up[name])
        if gone and len(gone) < found.member_count[name]:
            out[name] = gone
    return out


def _occurrences(found: "_Found", enum: str, member: str) -> int:
    """How often the tree may name `enum.member`: every occurrence of the identifier, except `R.member` where
    R is another class of the tree under its own name (no assignment, parameter or `as` binds R anywhere, and
    the enum is never passed on, so R cannot hold it)."""
    others = sum(n for (receiver, attr), n in found.class_reads.items()
                 if attr == member and receiver != enum and found.classes[receiver] and receiver not in found.rebound)
    return found.words[member] + sum(n for (_, attr), n in found.class_reads.items() if attr == member) - others


class _Found:
    def __init__(self) -> None:
        self.classes: Counter[str] = Counter()  # class name -> class statements of that name
        self.candidates: dict[str, dict[str, str]] = {}  # enum name -> {member: value the vocabulary names}
        self.member_count: Counter[str] = Counter()  # enum name -> its members
        self.bad_classes: set[str] = set()
        self.words: Counter[str] = Counter()  # identifier -> its occurrences (names, attributes, lookup strings)
        self.class_reads: Counter[tuple[str, str]] = Counter()  # (receiver name, attribute) -> reads `R.A`
        self.rebound: set[str] = set()  # names some assignment, parameter or `as` binds
        self.definitions: Counter[str] = Counter()  # identifier -> candidate member definitions of that name
        self.looked_up: dict[str, set[str]] = defaultdict(set)  # enum name -> literal values E(...) is called with
        self.aliases: dict[str, set[str]] = defaultdict(set)  # union type alias -> the names it joins


class _Scan:
    def __init__(self, module: ast.Module, found: _Found, names_platform: Callable[[str], bool]) -> None:
        self.module, self.found, self.names_platform = module, found, names_platform
        self.parents: dict[int, ast.AST] = {}
        self.annotations: set[int] = set()
        for node in ast.walk(module):
            for child in ast.iter_child_nodes(node):
                self.parents[id(child)] = node
            for annotation in _annotations_of(node):
                self.annotations.update(id(n) for n in ast.walk(annotation))

    def run(self) -> None:
        for node in ast.walk(self.module):
            self._count_words(node)
            if isinstance(node, ast.ClassDef):
                self.found.classes[node.name] += 1
                self._enum(node)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                self._use(node, node.id)
            elif isinstance(node, ast.Attribute):
                self._use(node, node.attr)

    def _count_words(self, node: ast.AST) -> None:
        words = self.found.words
        if isinstance(node, ast.Name):
            words[node.id] += 1
            if not isinstance(node.ctx, ast.Load):
                self.found.rebound.add(node.id)
        elif isinstance(node, ast.Attribute):
            if isinstance(node.value, ast.Name):  # `KernelBackend.AITER` names KernelBackend's member
                self.found.class_reads[(node.value.id, node.attr)] += 1
            else:
                words[node.attr] += 1
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            words[node.name] += 1
        elif isinstance(node, ast.keyword) and node.arg:
            words[node.arg] += 1
        elif isinstance(node, ast.arg):
            words[node.arg] += 1
            self.found.rebound.add(node.arg)
        elif isinstance(node, ast.alias):
            for part in (node.asname or "", *node.name.split(".")):
                if part:
                    words[part] += 1
            if node.asname:
                self.found.rebound.add(node.asname)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            words.update(node.names)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            match = _LOOKUP.fullmatch(node.value.strip())  # a lookup may name it; prose ("requires AITER") not
            if match:
                words[match.group(1)] += 1

    def _enum(self, node: ast.ClassDef) -> None:
        if not any(_last_name(b) in _ENUM_BASES for b in node.bases):
            return
        members = {}
        count = 0
        for stmt in node.body:
            if (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)
                    and not stmt.targets[0].id.startswith("_")):
                count += 1
                value = stmt.value
                if (isinstance(value, ast.Constant) and isinstance(value.value, str)
                        and self.names_platform(value.value)):
                    members[stmt.targets[0].id] = value.value
            elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and stmt.name in _VALUE_HOOKS:
                self.found.bad_classes.add(node.name)
            elif isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id in _VALUE_HOOKS
                                                      for t in stmt.targets):
                self.found.bad_classes.add(node.name)
        if (node.keywords or any(ast.unparse(d) not in _DECORATORS for d in node.decorator_list)
                or _lists_itself(node)):
            self.found.bad_classes.add(node.name)
        self.found.member_count[node.name] += count
        if members:
            self.found.candidates.setdefault(node.name, {}).update(members)
            self.found.definitions.update(members.keys())  # each definition's target counted once by _count_words

    def _use(self, node: ast.expr, name: str) -> None:
        """A read of `name` (a Name, or an attribute `mod.E`) where name may be an enum of the scan: its
        uses must be members, lookups, annotations or class tests (module doc)."""
        if id(node) in self.annotations:
            return
        parent = self.parents.get(id(node))
        if isinstance(parent, ast.Attribute) and parent.value is node:
            if parent.attr.startswith("_"):
                self.found.bad_classes.add(name)  # __members__, _value2member_map_, _member_map_
            return
        if isinstance(parent, ast.Call) and parent.func is node:
            for arg in parent.args:
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                    self.found.looked_up[name].add(arg.value)
            return
        if self._class_test(node):
            return
        alias = self._union_alias(node)
        if alias is not None:  # `MoeRunnerBackendLike = MoeRunnerBackend | RegisteredMoeRunnerBackend`
            self.found.aliases[alias].add(name)
            return
        self.found.bad_classes.add(name)

    def _union_alias(self, node: ast.expr) -> str | None:
        """The name a module-level `X = A | B` binds, when `node` is one of its alternatives: a type alias, whose
        own uses then stand for the class's (checked like the class name)."""
        child, parent = node, self.parents.get(id(node))
        while isinstance(parent, ast.BinOp) and isinstance(parent.op, ast.BitOr):
            child, parent = parent, self.parents.get(id(parent))
        if (child is not node and isinstance(parent, ast.Assign) and parent.value is child
                and parent in self.module.body and len(parent.targets) == 1 and isinstance(parent.targets[0], ast.Name)):
            return parent.targets[0].id
        return None

    def _class_test(self, node: ast.expr) -> bool:
        child, parent = node, self.parents.get(id(node))
        while isinstance(parent, ast.Tuple) or (isinstance(parent, ast.BinOp) and isinstance(parent.op, ast.BitOr)):
            child, parent = parent, self.parents.get(id(parent))
        return (isinstance(parent, ast.Call) and isinstance(parent.func, ast.Name)
                and parent.func.id in ("isinstance", "issubclass") and len(parent.args) == 2
                and parent.args[1] is child)


def _lists_itself(node: ast.ClassDef) -> bool:
    """A method of the enum may list its members through `cls`, `type(self)` or `self.__class__` (`for m in
    cls`, `cls.__members__`): any use of those but `cls.MEMBER` or `cls(value)` counts."""
    parents = {id(c): p for p in ast.walk(node) for c in ast.iter_child_nodes(p)}
    for sub in ast.walk(node):
        if isinstance(sub, ast.Attribute) and sub.attr == "__class__":
            return True
        if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name) and sub.func.id == "type":
            return True
        if isinstance(sub, ast.Name) and sub.id == "cls" and isinstance(sub.ctx, ast.Load):
            parent = parents.get(id(sub))
            if not ((isinstance(parent, ast.Attribute) and not parent.attr.startswith("_"))
                    or (isinstance(parent, ast.Call) and parent.func is sub)):
                return True
    return False


def _annotations_of(node: ast.AST) -> list[ast.expr]:
    if isinstance(node, ast.arg) and node.annotation is not None:
        return [node.annotation]
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.returns is not None:
        return [node.returns]
    if isinstance(node, ast.AnnAssign):
        return [node.annotation]
    return []


def _last_name(node: ast.expr) -> str:
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else ""
