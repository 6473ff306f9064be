"""Parameters every call in the tree passes the same bool: `get_moe_weight_sizes(..., is_aiter_moe=False)` at
each call once the platform fold decided `_use_aiter`, `eagle_utils`' `is_cpu=False, is_hip=False`. Inside the
function such a parameter is that bool (the codemods' Folder folds its reads like a predicate); once nothing
reads it, it leaves the signature and every call (codemods/constant_parameters).

Rule-free and exact, read with `ast` from the tree's text. Only parameters `wanted` names are looked at (apply
passes the profile's vocabulary: a parameter named for another platform or model family), since code outside
the tree may call a public function with any value. A function qualifies when:
- it is a module-level function or a method of a module-level class, not a dunder, its decorators none,
  `staticmethod`, `classmethod` or caches (the call reaches the function as written);
- its name is defined once in the whole tree (no override, no second function of that name) and every other
  occurrence of the name is a call (`f(...)`, `x.f(...)`) or a plain `from m import f`: no alias, no value
  (`partial(f)`, `register(f)`), no string (`getattr(x, "f")`), no unbound `Class.f(obj, ...)`;
- or every definition of its name is a module-level function, one per module (homonyms: 0.5.23's
  `get_moe_padding_size(is_aiter_moe)` in layers/moe/utils and `get_moe_padding_size(weight_block_size)` in
  configs/update_config), and each occurrence resolves by the file's own bindings: a plain-name call or read
  means the file's own module-level function of that name, else the module a plain absolute `from m import f`
  names. A call that resolves to another homonym is that one's; one that resolves to none (`x.f(...)`, a
  relative or aliased import, a re-export) disqualifies them all;
- it has at least one call, and the parameter is assigned nowhere in it.
A parameter is constant when every call binds it (by keyword, by position, or by omitting it where its default
is one) to the same literal `True` or `False`, and no call spreads `*args` / `**kwargs` over it.
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

from shrinker.graph.constant_functions import CACHES
from shrinker.graph.bindings import dotted
from shrinker.graph.discover import module_of
from shrinker.graph.sources import collector_paused, identifiers, python_sources

_DECORATORS = CACHES | {"staticmethod", "classmethod"}
_DEFINITION = re.compile(r"^[ \t]*(?:async[ \t]+)?(?:def|class)[ \t]+(\w+)", re.MULTILINE)


@dataclass(frozen=True)
class ConstantParameter:
    name: str
    value: bool
    index: int | None  # its position as callers count it (None: keyword-only)
    read: bool  # the function still reads it (fold it inside); unread, it leaves the signature and the calls


@dataclass
class ConstantParameters:
    # "module:qualname" -> its constant parameters
    by_function: dict[str, tuple[ConstantParameter, ...]] = field(default_factory=dict)
    # names of such functions that other module-level functions share (calls resolve by the caller's bindings)
    homonyms: frozenset[str] = frozenset()

    def folds(self, module: str) -> dict[str, dict[str, bool]]:
        """qualname -> {parameter: value} of `module`'s functions whose constant parameters are still read."""
        prefix = module + ":"
        return {key[len(prefix):]: {p.name: p.value for p in params if p.read}
                for key, params in self.by_function.items() if key.startswith(prefix) and any(p.read for p in params)}

    def unread(self) -> dict[str, dict[str, tuple[ConstantParameter, ...]]]:
        """function name -> {its module: its constant parameters nothing reads}; one module unless the name is
        one of `homonyms`."""
        out: dict[str, dict[str, tuple[ConstantParameter, ...]]] = {}
        for key, params in self.by_function.items():
            if any(not p.read for p in params):
                module, _, qualname = key.partition(":")
                out.setdefault(qualname.rpartition(".")[2], {})[module] = tuple(p for p in params if not p.read)
        return out

    def folding_modules(self) -> set[str]:
        """The modules defining a function whose constant parameters are still read."""
        return {key.partition(":")[0] for key, params in self.by_function.items() if any(p.read for p in params)}

    def folded_names(self, module: str) -> frozenset[str]:
        """The parameters `module`'s functions fold (their statements are the fold's to visit)."""
        return frozenset(name for values in self.folds(module).values() for name in values)

    def words(self) -> tuple[str, ...]:
        """The names a file that holds such a function or a call of one contains."""
        return tuple(sorted({p.name for params in self.by_function.values() for p in params}
                            | {key.partition(":")[2].rpartition(".")[2] for key in self.by_function}))


@dataclass
class _Candidate:
    key: str
    cls: str  # its class ("" for a module-level function)
    slots: dict[str, tuple[int | None, ast.expr | None]]  # parameter -> (caller's index, default)
    read: frozenset[str]
    values: dict[str, set] = field(default_factory=dict)  # parameter -> the values its calls pass
    calls: int = 0
    ok: bool = True


def constant_parameters(tree: Path, wanted: Callable[[str], bool],
                        sources: Iterable[tuple[str, str]] | None = None) -> ConstantParameters:
    """The constant parameters `wanted` names, of the functions of `tree` (or of `sources`, its files)."""
    with collector_paused():
        return _constant_parameters(dict(python_sources(tree) if sources is None else sources), wanted)


def _constant_parameters(texts: dict[str, str], wanted: Callable[[str], bool]) -> ConstantParameters:
    defined: Counter[str] = Counter()
    for text in texts.values():
        defined.update(_DEFINITION.findall(text))
    candidates: dict[str, list[_Candidate]] = {}  # name -> its candidates (several only for homonyms)
    for rel in sorted(texts):  # only files naming a wanted word can define a candidate
        words = sorted(word for word in identifiers(texts[rel]) if wanted(word))
        if not words or not re.search(r"[(,]\s*(?:%s)\s*[:=,)]" % "|".join(words), texts[rel]):
            continue  # no word of them stands where a parameter does
        if (module := _parse(texts[rel])) is not None:
            for node, cls in _functions(module):
                if (defined[node.name] == 1 or not cls) and (found := _candidate(node, cls, wanted)) is not None:
                    found.key = f"{module_of(rel)}:{cls + '.' if cls else ''}{node.name}"
                    candidates.setdefault(node.name, []).append(found)
    if not candidates:
        return ConstantParameters()
    homonyms = {name for name in candidates if defined[name] > 1}
    top_level: dict[str, list[str]] = {name: [] for name in homonyms}  # name -> modules defining it at top level
    targets: dict[str, set[str]] = {}  # homonym -> the modules its uses resolve to
    word = re.compile(r"\b(?:%s)\b" % "|".join(map(re.escape, sorted(candidates))))
    for rel in sorted(texts):
        if word.search(texts[rel]) and (module := _parse(texts[rel])) is not None:
            for name in _top_level_functions(module) & homonyms:
                top_level[name].append(module_of(rel))
            _read_uses(module, module_of(rel), candidates, homonyms, targets)
    for name in homonyms:  # each definition a module-level function, one per module: calls can tell them apart
        if len(top_level[name]) != defined[name] or len(set(top_level[name])) != defined[name] \
                or not targets.get(name, set()) <= set(top_level[name]):  # a re-export: a module defining none
            for found in candidates[name]:
                found.ok = False
    out = ConstantParameters(homonyms=frozenset(homonyms))
    for name, group in sorted(candidates.items()):
        for found in group:
            if not found.ok or not found.calls:
                continue
            params = tuple(ConstantParameter(param, next(iter(values)), found.slots[param][0], param in found.read)
                           for param, values in sorted(found.values.items())
                           if param in found.slots and len(values) == 1 and None not in values)
            if params:
                out.by_function[found.key] = params
    return out


def _top_level_functions(module: ast.Module) -> set[str]:
    return {stmt.name for stmt in module.body if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef))}


def resolved_module(name: str, own: set[str], imported: dict[str, set[str]], module: str) -> str | None:
    """The module a plain `name` means in a file: its own module-level function, else the m of its plain
    absolute `from m import name` imports; None when neither, or both, or two such m (the codemod resolves calls
    the same way)."""
    sources = imported.get(name, set())
    if name in own:
        return None if sources else module
    return next(iter(sources)) if len(sources) == 1 else None


def plain_imports(imports: Iterable[tuple[str | None, bool, Iterable[tuple[str, str | None]]]]
                  ) -> dict[str, set[str]]:
    """name -> the modules m of the plain absolute `from m import name`, from (m, relative, [(name, as-name)])
    of a file's `from` imports."""
    out: dict[str, set[str]] = {}
    for source, relative, names in imports:
        if source and not relative:
            for name, asname in names:
                if asname is None:
                    out.setdefault(name, set()).add(source)
    return out


def _parse(text: str) -> ast.Module | None:
    try:
        return ast.parse(text)
    except SyntaxError:
        return None  # the gate reports a file that does not parse


def _functions(module: ast.Module):
    """(function, its class or "") for the module's functions and its classes' methods."""
    for stmt in module.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield stmt, ""
        elif isinstance(stmt, ast.ClassDef):
            for item in stmt.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    yield item, stmt.name


def _candidate(node: ast.FunctionDef | ast.AsyncFunctionDef, cls: str, wanted: Callable[[str], bool]
               ) -> _Candidate | None:
    if node.name.startswith("__") and node.name.endswith("__"):
        return None
    decorators = [dotted(d.func if isinstance(d, ast.Call) else d) for d in node.decorator_list]
    if not all(d in _DECORATORS for d in decorators):
        return None
    args = node.args
    positional = [*args.posonlyargs, *args.args]
    defaults = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
    shift = 1 if cls and "staticmethod" not in decorators else 0  # self / cls: callers do not pass it
    slots: dict[str, tuple[int | None, ast.expr | None]] = {}
    for index, (arg, default) in enumerate(zip(positional, defaults)):
        if index >= shift and wanted(arg.arg):
            slots[arg.arg] = (index - shift, default)
    for arg, default in zip(args.kwonlyargs, args.kw_defaults):
        if wanted(arg.arg):
            slots[arg.arg] = (None, default)
    if not slots:
        return None
    names = [n for n in ast.walk(node) if isinstance(n, (ast.Name, ast.Global, ast.Nonlocal))]
    stored = {n.id for n in names if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}
    stored |= {name for n in names if isinstance(n, (ast.Global, ast.Nonlocal)) for name in n.names}
    slots = {name: slot for name, slot in slots.items() if name not in stored}
    read = frozenset(n.id for n in names if isinstance(n, ast.Name) and n.id in slots)
    return _Candidate("", cls, slots, read) if slots else None


def _read_uses(module: ast.Module, name_of_module: str, candidates: dict[str, list[_Candidate]],
               homonyms: set[str], targets: dict[str, set[str]]) -> None:
    """Record the calls of the candidates in `module`; any other use of one of their names disqualifies it (a
    homonym's: the one it resolves to, or all of them when it resolves to none)."""
    own = _top_level_functions(module)
    imported = plain_imports((node.module, bool(node.level), [(a.name, a.asname) for a in node.names])
                             for node in ast.walk(module) if isinstance(node, ast.ImportFrom))

    def meant(name: str, plain: bool) -> tuple[list[_Candidate] | None, bool]:
        """The candidates a use of `name` may mean (None: another homonym's), and whether it is known which."""
        group = candidates[name]
        if name not in homonyms:
            return group, True
        target = resolved_module(name, own, imported, name_of_module) if plain else None
        if target is None:
            return group, False  # unresolved: it may be any of them
        targets.setdefault(name, set()).add(target)
        return [c for c in group if c.key.partition(":")[0] == target] or None, True

    def disqualify(name: str, plain: bool) -> None:
        for found in meant(name, plain)[0] or ():
            found.ok = False

    callees: set[int] = set()
    for node in ast.walk(module):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
        if not name or name not in candidates:
            continue
        callees.add(id(func))
        group, known = meant(name, isinstance(func, ast.Name))
        if group is None:
            continue  # another function of that name
        if not known:
            disqualify(name, False)  # a homonym's call that resolves to none of them
            continue
        found = group[0]
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and found.cls \
                and func.value.id == found.cls:
            found.ok = False  # `Class.method(obj, ...)`: its positions count `obj`
            continue
        found.calls += 1
        for param, (index, default) in found.slots.items():
            found.values.setdefault(param, set()).add(_passed(node, param, index, default))
    for node in ast.walk(module):
        if isinstance(node, ast.Name) and node.id in candidates and id(node) not in callees:
            disqualify(node.id, True)
        elif isinstance(node, ast.Attribute) and node.attr in candidates and id(node) not in callees:
            disqualify(node.attr, False)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in candidates:
            disqualify(node.value, False)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                if alias.asname and (alias.name in candidates or alias.asname in candidates):
                    disqualify(alias.name if alias.name in candidates else alias.asname, False)
                elif isinstance(node, ast.ImportFrom) and node.level and alias.name in homonyms:
                    disqualify(alias.name, False)  # a relative import: resolved by neither side


def _passed(call: ast.Call, param: str, index: int | None, default: ast.expr | None) -> bool | None:
    """The bool literal `call` binds `param` to, else None (not a bool literal, or not known)."""
    keyword = next((k for k in call.keywords if k.arg == param), None)
    if keyword is not None:
        return _literal(keyword.value)
    if any(k.arg is None for k in call.keywords):
        return None  # `**kwargs` may hold it
    if index is not None:
        positional = call.args
        if any(isinstance(a, ast.Starred) for a in positional[:index + 1]):
            return None
        if index < len(positional):
            return _literal(positional[index])
    return _literal(default) if default is not None else None


def _literal(node: ast.expr) -> bool | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, bool) else None
