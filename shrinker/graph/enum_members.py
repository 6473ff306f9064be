"""Enum members the kept tree cannot hold, from one `ast` scan of the whole tree (`enum_facts`), read two ways.

`platform_members`: members of another platform that nothing names; no code can produce one but a lookup by a
value that names that platform. 0.5.23's `TransferBackend.MORI = "mori"`, `MoeRunnerBackend.INTEL_XPU =
"intel_xpu"`: every CLI choice naming another platform went (the choices rules), no kept code reads the member,
and `MoeRunnerBackend(get_exec().moe.moe_runner_backend)` can only meet a value the pruned option accepts. A
member goes when each holds (rule-free but for the vocabulary the caller passes):
- its class is the only class of that name, a plain `Enum`/`IntEnum`/`StrEnum`/`Flag` subclass (mixins allowed)
  with no decorator but `unique`, no metaclass or class keywords, no `__new__`, `_generate_next_value_`,
  `_ignore_` or `_missing_` (each can map a value to a member by code) but a `_missing_` that finds members by
  their value alone (`for m in cls: if value == m.value: return m`, a fixed answer for `None`), and no method
  that may list its members (`cls` used but as `cls.MEMBER` or `cls(value)`, `type(...)`, `__class__`);
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

`never_produced`: members no code produces, whose tests are therefore decided. 0.5.23's
`StateType.QSA_PENDING`, `QSA_COMPRESSED` and `MINIMAX_DENSE_KV`: only the Qwen4 and MiniMax pools appended them
to a transfer's state types; the disaggregation connections still test them (`st in (StateType.QSA_PENDING,
...)`, lookup tables keyed by them). A member is never produced when, besides the class conditions above:
- the enum is never called (`E(value)` may produce any member) and no field's annotation names it (a class
  body's annotation: pydantic, msgspec; a decorated function's parameter: an endpoint's framework builds members
  from values), but that of a plain class or `@dataclass` (no base, no pydantic import in its module) never
  passed on as a value (`msgspec.convert(x, K)` would build members) but returned by a module-level factory
  whose every call's value is only called (0.5.23's `get_kv_class` returns `KVArgs`, and
  `kv_args_class = get_kv_class(...); kv_args = kv_args_class()`);
- its value is a string no other literal of the tree equals (a `str` enum's member equals its value);
- every read of it, `E.M` under the class's own name, is a test with an operand a fold may drop (a name, an
  attribute, a constant, a subscript, `getattr(x, "name", d)`): `x == E.M`, `is`, `!=`, `is not`, `E.M in y`;
  or an element of a literal (or `frozenset(...)` of one) that `in` tests; or an element of a literal, or a key
  of a dict literal whose entry's value is a name, attribute, constant or lambda, that a name holds which its
  file binds once and reads only by `in`, `N[k]` or `N.get(...)` (a module-level one named in no other file),
  or a dict looked up at once (`{...}[k]`); the identifier occurs nowhere else.
Exact on the premise every producer is in the kept tree (both disaggregation peers run it, and a DeepSeek
checkpoint's transfer never carries those states upstream either).
"""

from __future__ import annotations

import ast
import re
from collections import Counter, defaultdict
from pathlib import Path
from typing import Callable, Iterable, Mapping

from shrinker.graph.sources import parsed_modules, python_sources
from shrinker.graph.tested_classes import METHOD_KINDS, NAME_LOOKUP

_ENUM_BASES = {"Enum", "IntEnum", "StrEnum", "Flag", "IntFlag"}
_DECORATORS = {"unique", "enum.unique"}
_VALUE_HOOKS = {"_missing_", "__new__", "_generate_next_value_", "_ignore_"}
COLLECTION_CALLS = {"frozenset", "set", "tuple", "list"}
_WORDS = re.compile(r"\w+")
_TESTED = object()


def platform_enum_members(tree: Path, names_platform: Callable[[str], bool]) -> dict[str, frozenset[str]]:
    """Enum class name -> the members that go (module doc); `names_platform` says whether a value names
    another platform (the predicate table's vocabulary)."""
    return platform_members(enum_facts(tree), names_platform)


def platform_enum_members_in(texts: Iterable[str], names_platform: Callable[[str], bool]
                             ) -> dict[str, frozenset[str]]:
    return platform_members(enum_facts_in(texts), names_platform)


def enum_facts(tree: Path) -> "_Found":
    """What the scan of the whole tree gathers about its enums, for `platform_members` and `never_produced`."""
    return enum_facts_in(text for _, text in python_sources(tree))


def enum_facts_in(texts: Iterable[str]) -> "_Found":
    found = _Found()
    for index, module in enumerate(parsed_modules(texts)):
        _Scan(module, found, index).run()
    for alias, names in found.aliases.items():
        if alias in found.bad_classes:  # the alias is iterated or passed on: so may the class be
            found.bad_classes |= names
    for name, functions in found.returned.items():
        if name in found.members or not all(_only_called(found, f) for f in functions):
            found.bad_classes.add(name)  # an enum returned, or a class whose factory's value goes elsewhere
    return found


def _only_called(found: "_Found", function: str) -> bool:
    """The module-level function is defined once and each of its calls' values is only called (the class it
    returns is only instantiated)."""
    return (found.functions[function] == 1 and function not in found.bad_classes
            and found.call_sites[function] == found.safe_sites[function])


def platform_members(found: "_Found", names_platform: Callable[[str], bool]) -> dict[str, frozenset[str]]:
    out: dict[str, frozenset[str]] = {}
    for name, members in found.members.items():
        if found.classes[name] != 1 or name in found.bad_classes:
            continue
        gone = frozenset(m for m, value in members.items()
                         if isinstance(value, str) and names_platform(value)
                         and _occurrences(found, name, m) == found.definitions[m]
                         and value not in found.looked_up[name])
        if gone and len(gone) < found.member_count[name]:
            out[name] = gone
    return out


def never_produced(found: "_Found") -> dict[str, frozenset[str]]:
    """Enum class name -> the members no code can produce (module doc of codemods/enum_members): every read
    is a test or stands in a collection only tests read, the enum is never called (`E(value)` may produce any
    member), and no other literal equals the member's value (a `str` or `int` enum equals its value)."""
    out: dict[str, frozenset[str]] = {}
    for name, members in found.members.items():
        if (found.classes[name] != 1 or name in found.bad_classes or name in found.called or name in found.parsed
                or any(found.classes[k] != 1 or k in found.bad_classes for k in found.dataclass_fields.get(name, ()))):
            continue
        never = frozenset(m for m, value in members.items()
                          if found.class_reads[(name, m)] and _only_tested(found, name, m)
                          and _occurrences(found, name, m) == found.definitions[m] + found.class_reads[(name, m)]
                          and isinstance(value, str) and found.literals[value] == list(members.values()).count(value))
        if never and len(never) < found.member_count[name]:
            out[name] = never
    return out


def unnamed_members(found: "_Found", among: Mapping[str, frozenset[str]]) -> dict[str, frozenset[str]]:
    """Of the members `among` lists (those `never_produced` found before their tests folded), the ones nothing
    names any more, of enums nothing calls: their definitions are dead, and removing them makes code outside
    the tree that still names one fail at once instead of passing a test that no longer looks for it."""
    out: dict[str, frozenset[str]] = {}
    for name, members in among.items():
        if (found.classes[name] != 1 or name in found.bad_classes or name in found.called
                or name not in found.members):
            continue
        gone = frozenset(m for m in members if m in found.members[name]
                         and _occurrences(found, name, m) == found.definitions[m])
        if gone and len(gone) < found.member_count[name]:
            out[name] = gone
    return out


def _only_tested(found: "_Found", enum: str, member: str) -> bool:
    key = (enum, member)
    collected = found.collected_reads.get(key, [])
    if found.tested_reads[key] + len(collected) != found.class_reads[key]:
        return False
    return all((file, holder) in found.lookup_only and (not module_level or found.files_with[holder] == 1)
               for file, holder, module_level in collected)


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
        self.members: dict[str, dict[str, object]] = {}  # enum name -> {member: its literal value}
        self.member_count: Counter[str] = Counter()  # enum name -> its members
        self.bad_classes: set[str] = set()
        self.words: Counter[str] = Counter()  # identifier -> its occurrences (names, attributes, lookup strings)
        self.class_reads: Counter[tuple[str, str]] = Counter()  # (receiver name, attribute) -> reads `R.A`
        self.rebound: set[str] = set()  # names some assignment, parameter or `as` binds
        self.definitions: Counter[str] = Counter()  # identifier -> enum member definitions of that name
        self.looked_up: dict[str, set[str]] = defaultdict(set)  # enum name -> literal values E(...) is called with
        self.called: set[str] = set()  # names some call `N(...)` calls
        self.aliases: dict[str, set[str]] = defaultdict(set)  # union type alias -> the names it joins
        self.literals: Counter[object] = Counter()  # str/int constant -> its occurrences
        # never_produced: reads `R.A` in a test (`x == R.A`, `R.A in y`, an element of a literal `in` tests), and
        # those standing in a collection bound to a name: (R, A) -> [(file, name, module level)]
        self.tested_reads: Counter[tuple[str, str]] = Counter()
        self.collected_reads: dict[tuple[str, str], list[tuple[int, str, bool]]] = defaultdict(list)
        self.lookup_only: set[tuple[int, str]] = set()  # (file, name) bound once, read only by `in`/`[k]`/`.get`
        self.files_with: Counter[str] = Counter()  # identifier -> files it occurs in
        self.parsed: set[str] = set()  # names in a field's or a decorated function's parameter annotation
        self.dataclass_fields: dict[str, set[str]] = defaultdict(set)  # name -> plain dataclasses annotating with it
        self.returned: dict[str, set[str]] = defaultdict(set)  # class name -> module-level functions returning it
        self.functions: Counter[str] = Counter()  # function name -> its definitions
        self.call_sites: Counter[str] = Counter()  # function name -> its calls
        self.safe_sites: Counter[str] = Counter()  # function name -> calls whose value is only called


class _Scan:
    def __init__(self, module: ast.Module, found: _Found, index: int = 0) -> None:
        self.module, self.found, self.index = module, found, index
        self.parents: dict[int, ast.AST] = {}
        self.annotations: set[int] = set()
        for node in ast.walk(module):
            for child in ast.iter_child_nodes(node):
                self.parents[id(child)] = node
            for annotation in _annotations_of(node):
                self.annotations.update(id(n) for n in ast.walk(annotation))
        # a field's annotation (a class body's, or a decorated function's parameter: pydantic, dataclasses,
        # an endpoint's framework) lets a parser build a member from a value: never_produced counts it made
        pydantic = any(isinstance(n, (ast.Import, ast.ImportFrom)) and "pydantic" in ast.unparse(n)
                       for n in ast.walk(module))
        for node in ast.walk(module):
            parsed = []
            if isinstance(node, ast.ClassDef):
                fields = [s.annotation for s in node.body if isinstance(s, ast.AnnAssign)]
                if fields and not pydantic and _plain_dataclass(node):
                    # a dataclass builds nothing from values; a converter (msgspec.convert) needs the class
                    # passed on, which never_produced checks once every file is read
                    for sub in (n for f in fields for n in ast.walk(f)):
                        if isinstance(sub, (ast.Name, ast.Attribute)):
                            found.dataclass_fields[sub.id if isinstance(sub, ast.Name) else sub.attr].add(node.name)
                else:
                    parsed = fields
            elif (isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                  and any(_last_name(d.func if isinstance(d, ast.Call) else d) not in METHOD_KINDS
                          for d in node.decorator_list)):
                parsed = [a.annotation for a in (*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs)
                          if a.annotation is not None]
            for annotation in parsed:
                for sub in ast.walk(annotation):
                    if isinstance(sub, (ast.Name, ast.Attribute)):
                        found.parsed.add(sub.id if isinstance(sub, ast.Name) else sub.attr)
                    elif isinstance(sub, ast.Constant) and isinstance(sub.value, str):
                        found.parsed.update(_WORDS.findall(sub.value))  # a string annotation

    def run(self) -> None:
        seen: set[str] = set()
        for node in ast.walk(self.module):
            self._count_words(node, seen)
            if isinstance(node, ast.ClassDef):
                self.found.classes[node.name] += 1
                self._enum(node)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                self._use(node, node.id)
            elif isinstance(node, ast.Attribute):
                self._use(node, node.attr)
                if isinstance(node.value, ast.Name):
                    self._test_position(node)
            elif isinstance(node, ast.Constant) and isinstance(node.value, (str, int)) and not isinstance(node.value, bool):
                self.found.literals[node.value] += 1
            if isinstance(node, ast.Call) and isinstance(node.func, (ast.Name, ast.Attribute)):
                self._call_site(node)
            elif (isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                  and not any(_last_name(d) == "overload" for d in node.decorator_list)):
                self.found.functions[node.name] += 1  # `@overload` stubs define nothing
        self.found.files_with.update(seen)
        self._collections()

    def _count_words(self, node: ast.AST, seen: set[str]) -> None:
        words = self.found.words

        def add(word: str) -> None:
            words[word] += 1
            seen.add(word)

        if isinstance(node, ast.Name):
            add(node.id)
            if not isinstance(node.ctx, ast.Load):
                self.found.rebound.add(node.id)
        elif isinstance(node, ast.Attribute):
            seen.add(node.attr)
            if isinstance(node.value, ast.Name):  # `KernelBackend.AITER` names KernelBackend's member
                self.found.class_reads[(node.value.id, node.attr)] += 1
            else:
                add(node.attr)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            add(node.name)
        elif isinstance(node, ast.keyword) and node.arg:
            add(node.arg)
        elif isinstance(node, ast.arg):
            add(node.arg)
            self.found.rebound.add(node.arg)
        elif isinstance(node, ast.alias):
            for part in (node.asname or "", *node.name.split(".")):
                if part:
                    add(part)
            if node.asname:
                self.found.rebound.add(node.asname)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            for name in node.names:
                add(name)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            match = NAME_LOOKUP.fullmatch(node.value.strip())  # a lookup may name it; prose ("requires AITER") not
            if match:
                add(match.group(1))

    def _enum(self, node: ast.ClassDef) -> None:
        if not any(_last_name(b) in _ENUM_BASES for b in node.bases):
            return
        members: dict[str, object] = {}
        count = 0
        for stmt in node.body:
            if (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)
                    and not stmt.targets[0].id.startswith("_")):
                count += 1
                value = stmt.value
                members[stmt.targets[0].id] = value.value if isinstance(value, ast.Constant) else None
            elif (isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and stmt.name in _VALUE_HOOKS
                  and not _value_faithful_missing(stmt)):
                self.found.bad_classes.add(node.name)
            elif isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id in _VALUE_HOOKS
                                                      for t in stmt.targets):
                self.found.bad_classes.add(node.name)
        if (node.keywords or any(ast.unparse(d) not in _DECORATORS for d in node.decorator_list)
                or _lists_itself(node)):
            self.found.bad_classes.add(node.name)
        self.found.member_count[node.name] += count
        if members:
            self.found.members.setdefault(node.name, {}).update(members)
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
            self.found.called.add(name)
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
        function = self._enclosing_function(node)
        if isinstance(parent, ast.Return) and function is not None and function in self.module.body:
            # `return KVArgs` from a module-level factory (0.5.23's get_kv_class): checked against its callers
            self.found.returned[name].add(function.name)
            return
        self.found.bad_classes.add(name)

    def _enclosing_function(self, node: ast.AST):
        parent = self.parents.get(id(node))
        while parent is not None and not isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef)):
            parent = self.parents.get(id(parent))
        return parent

    def _call_site(self, call: ast.Call) -> None:
        """A call of a function `f(...)`/`m.f(...)`: safe when its value is only called, at once (`f(...)()`) or
        through a local its function reads only as a callee (`cls = f(...); obj = cls()`) or in a test
        (`cls is not None and issubclass(cls, Base)`)."""
        name = call.func.id if isinstance(call.func, ast.Name) else call.func.attr
        self.found.call_sites[name] += 1
        parent = self.parents.get(id(call))
        if isinstance(parent, ast.Call) and parent.func is call:
            self.found.safe_sites[name] += 1
            return
        function = self._enclosing_function(call)
        if (function is None or not isinstance(parent, ast.Assign) or len(parent.targets) != 1
                or not isinstance(parent.targets[0], ast.Name)):
            return
        local = parent.targets[0].id
        uses = [n for n in ast.walk(function) if isinstance(n, ast.Name) and n.id == local]
        if all(isinstance(n.ctx, ast.Load) and self._instantiated_or_tested(n) for n in uses
               if n is not parent.targets[0]):
            self.found.safe_sites[name] += 1

    def _instantiated_or_tested(self, node: ast.Name) -> bool:
        """`cls(...)`, `cls is None`, `cls is not None`, `issubclass(cls, X)`: nothing a converter could get."""
        parent = self.parents.get(id(node))
        if isinstance(parent, ast.Call):
            return parent.func is node or (isinstance(parent.func, ast.Name) and parent.func.id == "issubclass"
                                           and parent.args[:1] == [node])
        return (isinstance(parent, ast.Compare) and len(parent.ops) == 1
                and isinstance(parent.ops[0], (ast.Is, ast.IsNot))
                and isinstance(parent.comparators[0], ast.Constant) and parent.comparators[0].value is None)

    # -- never_produced: where a member read `R.A` stands ------------------------------------------------
    def _test_position(self, node: ast.Attribute) -> None:
        """Count `R.A` as tested when only a test reads it: an operand of `==`/`!=`/`is`/`is not`, the left of
        `in`, an element of a literal (or of `frozenset(...)` of one) that `in` tests or that a name holds, a
        key of a dict literal that is looked up at once or that a name holds (checked per file later)."""
        key = (node.value.id, node.attr)
        parent = self.parents.get(id(node))
        if isinstance(parent, ast.Compare) and len(parent.ops) == 1:
            other = parent.comparators[0] if parent.left is node else parent.left
            if isinstance(parent.ops[0], (ast.Eq, ast.NotEq, ast.Is, ast.IsNot)) and _simple(other):
                self.found.tested_reads[key] += 1
            elif isinstance(parent.ops[0], (ast.In, ast.NotIn)) and parent.left is node and _simple(other):
                self.found.tested_reads[key] += 1
            return
        if isinstance(parent, (ast.Tuple, ast.List, ast.Set)) and node in parent.elts:
            holder = self._holder(parent)
            if holder is _TESTED:
                self.found.tested_reads[key] += 1
            elif holder is not None:
                self.found.collected_reads[key].append(holder)
            return
        if isinstance(parent, ast.Dict) and node in parent.keys:
            value = parent.values[parent.keys.index(node)]
            if not isinstance(value, (ast.Name, ast.Attribute, ast.Constant, ast.Lambda)):
                return  # building the entry's value may do something: the entry stays, so the member is made
            outer = self.parents.get(id(parent))
            if ((isinstance(outer, ast.Subscript) and outer.value is parent)
                    or (isinstance(outer, ast.Attribute) and outer.attr == "get"
                        and isinstance(self.parents.get(id(outer)), ast.Call))):
                self.found.tested_reads[key] += 1
            else:
                holder = self._bound_by(parent)
                if holder is not None:
                    self.found.collected_reads[key].append(holder)

    def _holder(self, literal: ast.expr):
        """_TESTED when `in` tests the literal (or `frozenset(literal)`) at once; (file, name, module level) when
        a plain assignment binds it; else None."""
        outer = self.parents.get(id(literal))
        if (isinstance(outer, ast.Call) and isinstance(outer.func, ast.Name) and outer.args == [literal]
                and outer.func.id in COLLECTION_CALLS and not outer.keywords):
            literal, outer = outer, self.parents.get(id(outer))
        if (isinstance(outer, ast.Compare) and len(outer.ops) == 1 and isinstance(outer.ops[0], (ast.In, ast.NotIn))
                and outer.comparators[0] is literal and _simple(outer.left)):
            return _TESTED
        return self._bound_by(literal)

    def _bound_by(self, value: ast.expr):
        outer = self.parents.get(id(value))
        if isinstance(outer, (ast.Assign, ast.AnnAssign)) and outer.value is value:
            targets = outer.targets if isinstance(outer, ast.Assign) else [outer.target]
            target = targets[0]
            if len(targets) == 1 and isinstance(target, ast.Name):
                return (self.index, target.id, outer in self.module.body)
        return None

    def _collections(self) -> None:
        """The names of this file bound once and read only as `in`'s right operand, `N[k]` or `N.get(...)`."""
        bindings: Counter[str] = Counter()
        bad: set[str] = set()
        for node in ast.walk(self.module):
            if isinstance(node, ast.Name):
                if not isinstance(node.ctx, ast.Load):
                    bindings[node.id] += 1
                elif not self._lookup_use(node):
                    bad.add(node.id)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                bindings[node.name] += 1
            elif isinstance(node, ast.arg):
                bindings[node.arg] += 1
            elif isinstance(node, ast.alias):
                bindings[(node.asname or node.name).split(".")[0]] += 1
            elif isinstance(node, (ast.Global, ast.Nonlocal)):
                bad.update(node.names)
        self.found.lookup_only.update((self.index, n) for n, c in bindings.items() if c == 1 and n not in bad)

    def _lookup_use(self, node: ast.Name) -> bool:
        parent = self.parents.get(id(node))
        if isinstance(parent, ast.Compare) and len(parent.ops) == 1 and parent.comparators[0] is node:
            return isinstance(parent.ops[0], (ast.In, ast.NotIn))
        if isinstance(parent, ast.Subscript) and parent.value is node:
            return isinstance(parent.ctx, ast.Load)
        return (isinstance(parent, ast.Attribute) and parent.attr == "get"
                and isinstance(self.parents.get(id(parent)), ast.Call))

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


def _plain_dataclass(node: ast.ClassDef) -> bool:
    """`class K:` or `@dataclass class K:` with no base, keyword or other decorator: its fields hold what code
    stores."""
    return (not node.bases and not node.keywords
            and all(ast.unparse(d.func if isinstance(d, ast.Call) else d) in ("dataclass", "dataclasses.dataclass")
                    for d in node.decorator_list))


def _simple(node: ast.expr) -> bool:
    """An operand whose evaluation a fold may drop: a name, an attribute, a constant, a tuple or list of such, a
    subscript of such, or `getattr(x, "name", default)` of such (an attribute read)."""
    if isinstance(node, (ast.Name, ast.Constant)):
        return True
    if isinstance(node, (ast.Tuple, ast.List)):
        return all(_simple(e) for e in node.elts)
    if isinstance(node, ast.Attribute):
        return _simple(node.value)
    if isinstance(node, ast.Subscript):
        return _simple(node.value) and _simple(node.slice)
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr"
            and not node.keywords and 2 <= len(node.args) <= 3 and all(_simple(a) for a in node.args)
            and isinstance(node.args[1], ast.Constant))


def _value_faithful_missing(fn: ast.FunctionDef) -> bool:
    """`_missing_` that maps a value to a member only by that member's value, besides a fixed answer for `None`
    (0.5.23's MoeA2ABackend: `None` is NONE):

        @classmethod
        def _missing_(cls, value):
            if value is None:
                return cls.NONE
            for member in cls:
                if value == member.value:
                    return member
            raise ValueError(...)

    Without a member, a lookup of its value raises as the default lookup would: removing one changes nothing
    else."""
    args = fn.args.args
    if len(args) != 2 or [ast.unparse(d) for d in fn.decorator_list] != ["classmethod"]:
        return False
    cls, value = args[0].arg, args[1].arg
    body = [s for s in fn.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    for stmt in body[:-1]:
        if (isinstance(stmt, ast.If) and not stmt.orelse and len(stmt.body) == 1
                and isinstance(stmt.test, ast.Compare) and ast.unparse(stmt.test.left) == value
                and all(isinstance(c, ast.Constant) and c.value is None for c in stmt.test.comparators)
                and isinstance(stmt.body[0], ast.Return)
                and ast.unparse(stmt.body[0].value).startswith(f"{cls}.")):
            continue  # `if value is None: return cls.NONE`
        if _finds_by_value(stmt, cls, value):
            continue  # `for member in cls: if value == member.value: return member`
        return False
    last = body[-1] if body else None
    return isinstance(last, ast.Raise) or (isinstance(last, ast.Return) and last.value is None)


def _finds_by_value(stmt: ast.stmt, cls: str, value: str) -> bool:
    """`for member in cls: if value == member.value: return member`."""
    if not (isinstance(stmt, ast.For) and isinstance(stmt.target, ast.Name) and ast.unparse(stmt.iter) == cls
            and not stmt.orelse and len(stmt.body) == 1 and isinstance(stmt.body[0], ast.If)):
        return False
    member, test = stmt.target.id, stmt.body[0]
    return (not test.orelse and ast.unparse(test.test) in (f"{value} == {member}.value", f"{member}.value == {value}")
            and len(test.body) == 1 and isinstance(test.body[0], ast.Return)
            and test.body[0].value is not None and ast.unparse(test.body[0].value) == member)


def _lists_itself(node: ast.ClassDef) -> bool:
    """A method of the enum may list its members through `cls`, `type(self)` or `self.__class__` (`for m in
    cls`, `cls.__members__`): any use of those but `cls.MEMBER` or `cls(value)` counts, outside a value-faithful
    `_missing_`."""
    parents = {id(c): p for p in ast.walk(node) for c in ast.iter_child_nodes(p)}
    faithful = {id(n) for s in node.body if isinstance(s, ast.FunctionDef) and s.name == "_missing_"
                and _value_faithful_missing(s) for n in ast.walk(s)}
    for sub in ast.walk(node):
        if id(sub) in faithful:
            continue
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
