"""The string literals a function can return, and an attribute can hold: `resolve_chat_encoding_spec()` returns
one of "dsv41", "dsv4", "dsv32" or None once the architecture fold took its Kimi branch, so
`self.chat_encoding_spec = self._resolve_chat_encoding_spec()` holds one of them, and
`self.chat_encoding_spec == "kimi_k3"` is False (folded by the codemods' Folder).

Rule-free and exact, read with `ast` from the tree's text:
- a function (module level, bound once in its file) or a method (`Class.method`, its name defined once in the
  whole tree: no subclass overrides it), not async, no `yield`, decorators none or caches; each of its own
  `return`s gives a string literal, None, or the call of another such function (`f(...)`, `mod.f(...)` through
  `from pkg import mod`, `self.m(...)`); a body that does not end in `return`/`raise` may also give None;
- an attribute `self.X` whose only store in the tree is one plain `self.X = <such a call or literal>` (a string,
  None, or a bool: `self.use_npu_arch35_mxfp8_wo_a = False` once the fold decided it) at the top
  level of its class's `__init__` (no `return` there, no read of `self.X` before it); other stores of `.X` must
  be `self.X = ...` in methods of classes that share no subclass with it (by class names across the tree:
  OpenAIServingDecisions beside OpenAIServingChat); no file naming X sets attributes by name (`setattr(`,
  `__dict__[`, `vars(`), and no class related to it defines the name in its body (a property, a method, a class
  attribute). The attribute's set holds in its module when every `self.X` there is read in a method
  of that class or a subclass.
"""

from __future__ import annotations

import ast
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Iterable, Optional, Union

from shrinker.graph.bindings import dotted, names_bound_by, own_nodes, target_names
from shrinker.graph.constant_functions import CACHES
from shrinker.graph.discover import module_of
from shrinker.graph.sources import collector_paused, identifiers, method_definitions, python_sources

Literal = Optional[Union[str, bool]]  # a bool only as an attribute's stored value
# `self.X = False` in a method: a module that may store a literal bool in an attribute
_BOOL_STORE = re.compile(r"^[ \t]+self\.\w+[ \t]*=[ \t]*(?:True|False)[ \t]*$", re.MULTILINE)
_LITERAL_RETURN = re.compile(r"^\s+return\s+[rbuRBU]?[\"']", re.MULTILINE)
# Attributes set by a computed name (a `setattr` whose name is no literal, `__dict__[...]`, `vars(...)`; not
# `**vars(config)`, a copy unpacked into a call).
_BY_NAME = re.compile(r"\bsetattr\(\s*[^,()]+,(?!\s*[rbuRBU]?[\"'])|__dict__\[|(?<!\*\*)\bvars\(")


@dataclass
class LiteralTables:
    functions: dict[str, dict[str, frozenset[Literal]]] = field(default_factory=dict)  # module -> qualname -> set
    attributes: dict[str, dict[str, frozenset[Literal]]] = field(default_factory=dict)  # module -> X -> set

    def words(self) -> tuple[str, ...]:
        """The attribute names of the tables (what the second round of a folding batch looks for)."""
        return tuple(sorted({name for table in self.attributes.values() for name in table}))


Ref = tuple[str, str]  # (module, qualname) a return calls


@dataclass
class _Function:
    values: set = field(default_factory=set)
    refs: list[Ref] = field(default_factory=list)


def returned_literals(tree: Path) -> LiteralTables:
    with collector_paused():
        return _returned_literals(tree)


def _returned_literals(tree: Path) -> LiteralTables:
    texts = dict(python_sources(tree))
    modules = {module_of(rel): rel for rel in texts if module_of(rel)}
    methods = method_definitions(tree, texts.values())
    parsed: dict[str, ast.Module] = {}

    def parse(module: str) -> Optional[ast.Module]:
        if module not in parsed:
            try:
                parsed[module] = ast.parse(texts[modules[module]])
            except SyntaxError:
                parsed[module] = None  # type: ignore[assignment]
        return parsed[module]

    # Functions returning literals, then (by name, read from the text) the functions returning their calls.
    functions: dict[Ref, _Function] = {}
    pending = {m for m, rel in modules.items() if _LITERAL_RETURN.search(texts[rel])}
    seen: set[str] = set()
    while pending:
        names: set[str] = set()
        for module in sorted(pending):
            seen.add(module)
            if (tree_ := parse(module)) is not None:
                found = _module_functions(tree_, module, modules, methods)
                functions.update(found)
                names.update(q.rpartition(".")[2] for _, q in found)
        pending = set()
        if names:
            calls = re.compile(r"\breturn\s+[\w.]*\b(?:%s)\s*\(" % "|".join(map(re.escape, sorted(names))))
            pending = {m for m, rel in modules.items() if m not in seen and calls.search(texts[rel])}
    resolved = _resolve(functions)
    _ATTRIBUTE_INDEX.clear()  # keyed by id(): only this run's modules
    _CLASSES.clear()
    tables = LiteralTables()
    for (module, qualname), values in sorted(resolved.items()):
        tables.functions.setdefault(module, {})[qualname] = values
    _attributes(tables, resolved, texts, modules, parse, methods)
    _ATTRIBUTE_INDEX.clear()
    _CLASSES.clear()
    return tables


def _module_functions(module_ast: ast.Module, module: str, modules: dict, methods: Counter) -> dict[Ref, _Function]:
    bound: Counter[str] = Counter()
    for node in ast.walk(module_ast):
        bound.update(names_bound_by(node))
    imports = _imports(module_ast, module, modules)
    out: dict[Ref, _Function] = {}
    for stmt in module_ast.body:
        if isinstance(stmt, ast.FunctionDef) and bound[stmt.name] == 1:
            if (found := _function(stmt, module, None, imports, bound, methods)) is not None:
                out[(module, stmt.name)] = found
        elif isinstance(stmt, ast.ClassDef):
            for item in stmt.body:
                if isinstance(item, ast.FunctionDef) and methods[item.name] == 1:
                    if (found := _function(item, module, stmt.name, imports, bound, methods)) is not None:
                        out[(module, f"{stmt.name}.{item.name}")] = found
    return out


def _imports(module_ast: ast.Module, module: str, modules: dict) -> dict[str, tuple[str, Optional[str]]]:
    """Top-level name -> (module, function name or None for the module itself) its import binds."""
    package = module if modules.get(module, "").endswith("__init__.py") else module.rpartition(".")[0]
    out: dict[str, tuple[str, Optional[str]]] = {}
    for stmt in module_ast.body:
        if isinstance(stmt, ast.ImportFrom):
            base = stmt.module or ""
            if stmt.level:
                parts = package.split(".")
                if stmt.level - 1 >= len(parts):
                    continue
                head = ".".join(parts[:len(parts) - (stmt.level - 1)])
                base = f"{head}.{base}" if base else head
            for alias in stmt.names:
                if alias.name == "*":
                    continue
                name = alias.asname or alias.name
                sub = f"{base}.{alias.name}"
                out[name] = (sub, None) if sub in modules else (base, alias.name)
        elif isinstance(stmt, ast.Import):
            for alias in stmt.names:
                if alias.asname and alias.name in modules:
                    out[alias.asname] = (alias.name, None)
    return out


def _function(fn: ast.FunctionDef, module: str, cls: Optional[str], imports: dict, bound: Counter,
              methods: Counter) -> Optional[_Function]:
    if not all(dotted(d.func if isinstance(d, ast.Call) else d) in CACHES for d in fn.decorator_list):
        return None
    found = _Function()
    returns = [n for stmt in fn.body for n in own_nodes(stmt) if isinstance(n, (ast.Return, ast.Yield, ast.YieldFrom,
                                                                                   ast.Await))]
    if not returns or any(not isinstance(n, ast.Return) for n in returns):
        return None
    for ret in returns:
        value = ret.value
        if value is None or isinstance(value, ast.Constant) and value.value is None:
            found.values.add(None)
        elif isinstance(value, ast.Constant) and isinstance(value.value, str):
            found.values.add(value.value)
        elif isinstance(value, ast.Call) and (ref := _callee(value.func, module, cls, imports, bound, methods)):
            found.refs.append(ref)
        else:
            return None
    if not isinstance(fn.body[-1], (ast.Return, ast.Raise)):
        found.values.add(None)  # it may fall off its end
    return found


def _callee(func: ast.expr, module: str, cls: Optional[str], imports: dict, bound: Counter,
            methods: Counter) -> Optional[Ref]:
    if isinstance(func, ast.Name) and bound[func.id] == 1:
        origin = imports.get(func.id)
        if origin is None:
            return (module, func.id)
        return (origin[0], origin[1]) if origin[1] is not None else None
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
        owner = func.value.id
        if owner == "self" and cls is not None and methods[func.attr] == 1:
            return (module, f"{cls}.{func.attr}")
        origin = imports.get(owner)
        if origin is not None and origin[1] is None and bound[owner] == 1:
            return (origin[0], func.attr)
    return None


def _resolve(functions: dict[Ref, _Function]) -> dict[Ref, frozenset[Literal]]:
    """Each function's values, through the calls it returns (a call of anything unknown leaves it out)."""
    known: dict[Ref, frozenset[Literal]] = {ref: frozenset(f.values) for ref, f in functions.items() if not f.refs}
    changed = True
    while changed:
        changed = False
        for ref, f in functions.items():
            if ref in known or not all(r in known for r in f.refs):
                continue
            known[ref] = frozenset(f.values).union(*(known[r] for r in f.refs))
            changed = True
    return known


def _attributes(tables: LiteralTables, resolved: dict[Ref, frozenset[Literal]], texts: dict[str, str],
                modules: dict[str, str], parse, methods: Counter) -> None:
    hierarchy = _class_children(texts.values())
    words = {module: frozenset(identifiers(texts[rel])) for module, rel in modules.items()}
    stores = {m for m, rel in modules.items() if _BOOL_STORE.search(texts[rel])}
    for module in sorted({m for m, _ in resolved} | stores):
        module_ast = parse(module)
        if module_ast is None:
            continue
        bound: Counter[str] = Counter()
        for node in ast.walk(module_ast):
            bound.update(names_bound_by(node))
        imports = _imports(module_ast, module, modules)
        for cls in (s for s in module_ast.body if isinstance(s, ast.ClassDef)):
            inits = [s for s in cls.body if isinstance(s, ast.FunctionDef) and s.name == "__init__"]
            if len(inits) != 1 or any(isinstance(n, ast.Return) for s in inits[0].body for n in own_nodes(s)):
                continue
            for position, stmt in enumerate(inits[0].body):
                if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and _self_attribute(stmt.targets[0])):
                    continue
                name = stmt.targets[0].attr
                value = _value(stmt.value, module, cls.name, imports, bound, methods, resolved)
                if value is None or any(_reads_self(s, name) for s in inits[0].body[:position]) or _reads_self(
                        stmt.value, name):
                    continue
                if _only_store(name, cls.name, stmt.targets[0], texts, modules, words, parse, hierarchy) and _read_in_family(
                        module_ast, name, _descendants(cls.name, hierarchy)):
                    tables.attributes.setdefault(module, {})[name] = value


def _value(node: ast.expr, module: str, cls: str, imports: dict, bound: Counter, methods: Counter,
           resolved: dict[Ref, frozenset[Literal]]) -> Optional[frozenset[Literal]]:
    if isinstance(node, ast.Constant) and (node.value is None or isinstance(node.value, (str, bool))):
        return frozenset({node.value})
    if isinstance(node, ast.Call):
        ref = _callee(node.func, module, cls, imports, bound, methods)
        return resolved.get(ref) if ref is not None else None
    return None


def _self_attribute(node: ast.expr) -> bool:
    return isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self"


def _reads_self(node: ast.AST, name: str) -> bool:
    return any(_self_attribute(n) and n.attr == name for n in ast.walk(node))


def _only_store(name: str, cls: str, store: ast.Attribute, texts: dict[str, str], modules: dict[str, str],
                words: dict[str, frozenset[str]], parse, hierarchy: dict[str, set[str]]) -> bool:
    """`store` is the one store of `.name` that can reach an instance of `cls` (module doc)."""
    family = _descendants(cls, hierarchy)
    literal = re.compile(rf"\bsetattr\(\s*[^,()]+,\s*[rbuRBU]?[\"']{re.escape(name)}[\"']")
    for module, rel in modules.items():
        if name not in words[module]:
            continue
        text = texts[rel]
        if _by_name(text) or literal.search(text):
            return False
        module_ast = parse(module)
        if module_ast is None:
            return False
        for owner, node, in_method in _attribute_nodes(module_ast, name):
            if node is store or isinstance(node.ctx, ast.Load):
                continue
            if not (in_method and _self_attribute(node) and owner is not None
                    and not (_descendants(owner, hierarchy) & family)):
                return False
        if any(_descendants(c.name, hierarchy) & family and _class_binds(c, name) for c in _classes(module_ast)):
            return False  # a property, method or class attribute of that name in a related class
    return True


@lru_cache(maxsize=4096)
def _by_name(text: str) -> bool:
    """The text sets attributes by a computed name (asked once per file, whatever attribute is asked about)."""
    return _BY_NAME.search(text) is not None


def _class_binds(cls: ast.ClassDef, name: str) -> bool:
    """The class body defines `name` (a method, a property, a class attribute, a descriptor)."""
    return any(isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)) and s.name == name
               or isinstance(s, ast.Assign) and any(name in target_names(t) for t in s.targets)
               or isinstance(s, ast.AnnAssign) and name in target_names(s.target) for s in cls.body)


def _read_in_family(module_ast: ast.Module, name: str, family: set[str]) -> bool:
    """Every `self.name` of the module is in a method of a class of `family` (its own `self`)."""
    return all(in_method and owner in family for owner, node, in_method in _attribute_nodes(module_ast, name)
               if _self_attribute(node))


_ATTRIBUTE_INDEX: dict[int, tuple[ast.Module, dict[str, list]]] = {}  # id(module) -> (module, name -> nodes)


def _attribute_nodes(module_ast: ast.Module, name: str) -> list:
    """(innermost class, node, directly in one of its methods) for every `<x>.name` of the module (indexed once
    per module: each attribute of a module asks)."""
    held = _ATTRIBUTE_INDEX.get(id(module_ast))
    if held is None or held[0] is not module_ast:
        index: dict[str, list] = defaultdict(list)
        for owner, node, in_method in _all_attribute_nodes(module_ast):
            index[node.attr].append((owner, node, in_method))
        held = _ATTRIBUTE_INDEX[id(module_ast)] = (module_ast, index)
    return held[1].get(name, [])


_CLASSES: dict[int, tuple[ast.Module, list[ast.ClassDef]]] = {}  # id(module) -> (module, its classes)


def _classes(module_ast: ast.Module) -> list[ast.ClassDef]:
    held = _CLASSES.get(id(module_ast))
    if held is None or held[0] is not module_ast:
        held = _CLASSES[id(module_ast)] = (module_ast, [c for c in ast.walk(module_ast) if isinstance(c, ast.ClassDef)])
    return held[1]


def _all_attribute_nodes(module_ast: ast.Module):
    """(innermost class, node, directly in one of its methods) for every attribute of the module."""
    def walk(node: ast.AST, owner: Optional[str], in_method: bool, depth: int):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                yield from walk(child, child.name, False, 0)
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                yield from walk(child, owner, owner is not None and depth == 0 and not isinstance(child, ast.Lambda),
                                depth + 1)
            else:
                if isinstance(child, ast.Attribute):
                    yield owner, child, in_method
                yield from walk(child, owner, in_method, depth)
    yield from walk(module_ast, None, False, 0)


def _class_children(texts: Iterable[str]) -> dict[str, set[str]]:
    """Class name -> the names of the classes written with it as a base, across the tree (by name: two classes
    of one name count as one, which only relates more classes). Every capitalised name in a base list counts
    as a base (`class A(make_base(B), C)` makes A a child of both B and C)."""
    children: dict[str, set[str]] = defaultdict(set)
    for text in texts:
        for match in _CLASS_HEAD.finditer(text):
            bases = _balanced(text, match.end())
            for base in _CAPITALISED.findall(bases):
                children[base].add(match.group(1))
    return children


_CLASS_HEAD = re.compile(r"^[ \t]*class[ \t]+(\w+)[ \t]*\(", re.MULTILINE)
_CAPITALISED = re.compile(r"\b[A-Z]\w*")


def _balanced(text: str, start: int) -> str:
    """The text from `start` (just after an opening parenthesis) to its closing one."""
    depth = 1
    for end in range(start, min(len(text), start + 2000)):
        depth += {"(": 1, ")": -1}.get(text[end], 0)
        if depth == 0:
            return text[start:end]
    return text[start:start + 2000]


def _descendants(cls: str, children: dict[str, set[str]]) -> set[str]:
    out, stack = {cls}, [cls]
    while stack:
        for child in children.get(stack.pop(), ()):
            if child not in out:
                out.add(child)
                stack.append(child)
    return out
