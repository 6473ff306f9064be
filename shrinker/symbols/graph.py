"""The symbol graph of a tree and its live set: what nothing can reach goes.

Liveness is reachability from roots, so one computation is already the fixpoint of "remove what
is unreferenced" (dead cycles included). Roots, each with its reason:
  - module code: every module-level statement that is not a symbol runs on import;
  - dynamic modules: module-level code that reads the module's namespace whole (`globals()`,
    `sys.modules[__name__]`) keeps every module-level symbol; a function or method that does so keeps
    them once it is kept itself;
  - rules: `protect` (symbol / name / member globs), entry points named in `entry_point_files`;
  - the source's own word: an import marked `# noqa` (a re-export, or a name read through a frame
    namespace such as pydantic's model_rebuild()); a module calling model_rebuild() /
    update_forward_refs() is dynamic (its names resolve annotations);
  - registrations: a function or class whose decorator is not a known wrapper (`@app.post(...)`,
    `@register_attention_backend(...)`, `@model_validator(...)`) is used where the decorator put it;
    one registered as an op under its own name (`@register_custom_op`: torch.ops.sglang.<name>,
    rule op_decorators) is used where that name is read, by name, attribute or string;
  - `__all__` lists what `from m import *` binds: a use only when a module of the tree star-imports m;
  - subclasses of external classes: the base's code is not analysed, so the members it calls
    (`known_bases` hooks; every member when the base is not known) stay with a kept class.

A live symbol's references make more symbols live:
  - a bare name resolves in its module: the module's own symbol of that name, else through
    `from X import *`; in class code, members of that class first. Builtins and locals resolve
    to nothing (nothing in the tree can be named by them);
  - an import alias `from X import n` keeps X's symbol `n` (re-export chains are followed);
  - an attribute `x.foo` or a string "foo" cannot be resolved to one object: it keeps EVERY
    member named `foo` of every kept class (also of classes kept later); a string keeps every
    module-level `foo` too (getattr(mod, "foo"), "pkg.mod:foo"), an attribute those of modules
    some file may hold as an object (`import pkg.mod`, `from pkg import mod`,
    import_module("pkg.mod"), "pkg.mod" strings): `mod.foo` needs the module object `mod`.
    Modules reached only through import_module(<computed name>) are read with getattr(module,
    "<string>") in SGLang (the string keeps the name); a module scan that enumerates members
    (inspect.getmembers) needs a protect rule;
  - a string-built name (f"forward_{mode}") keeps what its glob matches as an attribute would
    (members of kept classes; module-level symbols of modules some file holds as objects: a
    computed getattr needs the module object), when its module looks computed names up
    (`getattr(self, name)`, `hasattr`, `__dict__[...]`, `globals()[...]`, attrgetter,
    import_module; not setattr, which binds) — elsewhere such a string is a label or a message;
  - `LazyImport("pkg.mod", "name")` (rule `attribute_calls`) keeps pkg.mod's `name` only;
  - `X.__subclasses__()` keeps every subclass of X in the tree; a class whose base defines
    `__init_subclass__` is kept (defining it may register it);
  - a kept member keeps its class, and its overrides in kept subclasses (what calls the base
    calls them; an abstract method left without its override would make the subclass abstract).

So a symbol is removable only when no reference by name, attribute or string in kept code can
reach it. Each live symbol records the first reason found (breadth first: a short chain).
"""

from __future__ import annotations

import builtins
import hashlib
import os
import re
import time
import tomllib
from collections import deque
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from fnmatch import translate
from pathlib import Path
from typing import Iterable, Optional

from shrinker import paths
from shrinker.graph.cache import FactsCache, content_key
from shrinker.graph.discover import SourceFile, discover
from shrinker.symbols.facts import (
    CLASS, CLASS_ATTR, IMPORT, METHOD, NESTED_CLASS, SYMBOLS_VERSION, ModuleSymbols, Refs, Symbol,
    module_symbols)
from shrinker.symbols.rules import SymbolRules

MODULE_CODE = "<module>"
_BUILTINS = frozenset(dir(builtins))


@dataclass(frozen=True)
class Reason:
    code: str  # name | import | attr | string | pattern | subclasses | member | override | protect |
    #            decorator | base | dynamic | entry_point | unparsed | noqa | table
    text: str
    via: str = ""  # the symbol (module:qualname, or module:<module>) whose code holds the reference
    line: int = 0  # line of the reference in via's file


@dataclass(frozen=True)
class DeadSymbols:
    """What `remove_dead_symbols` removes from one module (see shrinker/codemods/dead_symbols.py)."""

    names: frozenset[str] = frozenset()  # module-level defs / classes / side-effect-free assignments
    members: frozenset[str] = frozenset()  # "Class.member" of kept classes
    imports: frozenset[tuple[str, str, str]] = frozenset()  # (absolute module, name, alias) to drop
    pure_calls: frozenset[str] = frozenset()  # the rules' pure_calls (which assignments are symbols)
    lines: int = 0  # non-blank lines of what goes (for reports)

    def __bool__(self) -> bool:
        return bool(self.names or self.members or self.imports)


@dataclass
class SymbolStats:
    files: int = 0
    parsed: int = 0
    cached: int = 0
    errors: int = 0
    parse_seconds: float = 0.0
    live_seconds: float = 0.0


def sid(module: str, qualname: str) -> str:
    return f"{module}:{qualname}"


def split_sid(symbol_id: str) -> tuple[str, str]:
    module, _, qualname = symbol_id.partition(":")
    return module, qualname


# ---------------------------------------------------------------------------------------------
# Facts for a whole tree, in worker processes, cached by content hash.

def _cache() -> FactsCache:
    folder = Path(os.environ["SHRINK_PARSE_CACHE"]) if os.environ.get("SHRINK_PARSE_CACHE") \
        else paths.cache_dir() / "parse"
    return FactsCache(folder / f"symbols-v{SYMBOLS_VERSION}.pickle")


def _facts_job(job: tuple[str, str, str, bool, frozenset[str]]) -> ModuleSymbols:
    return module_symbols(*job)


def _python_files(files: list[SourceFile]) -> list[tuple[SourceFile, str]]:
    """(file, module) for every .py; scripts outside the import roots get a module of their own."""
    out = []
    for f in files:
        if f.is_python:
            out.append((f, f.module))
        elif f.path.endswith(".py"):
            out.append((f, f"<script>{f.path}"))
    return out


def tree_symbols(tree: Path, rules: SymbolRules, *, jobs: int = 2, cache: Optional[FactsCache] = None,
                 stats: Optional[SymbolStats] = None) -> tuple[dict[str, ModuleSymbols], list[SourceFile]]:
    stats = stats if stats is not None else SymbolStats()
    start = time.perf_counter()
    files = discover(tree)
    pure_calls = rules.pure_call_set
    salt = hashlib.blake2b("\0".join(sorted(pure_calls)).encode(), digest_size=8).hexdigest()
    cache = cache if cache is not None else _cache()
    out: dict[str, ModuleSymbols] = {}
    todo: list[tuple[str, tuple]] = []
    for f, module in _python_files(files):
        stats.files += 1
        raw = (tree / f.path).read_bytes()
        key = f"{content_key(raw, module, f.is_package)}-{salt}"
        hit = cache.get(key)
        if hit is not None:
            if hit.path != f.path:
                hit = ModuleSymbols(**{**hit.__dict__, "path": f.path})
            out[module] = hit
            stats.cached += 1
        else:
            todo.append((key, (raw.decode("utf-8", errors="replace"), f.path, module, f.is_package, pure_calls)))
    if todo:
        todo.sort(key=lambda item: -len(item[1][0]))
        if jobs > 1 and len(todo) > 8:
            with ProcessPoolExecutor(max_workers=jobs) as pool:
                results = list(pool.map(_facts_job, [job for _, job in todo], chunksize=4))
        else:
            results = [_facts_job(job) for _, job in todo]
        for (key, _), result in zip(todo, results):
            cache.put(key, result)
            out[result.module] = result
        stats.parsed = len(todo)
        cache.save()
    stats.errors = sum(1 for m in out.values() if m.parse_error)
    stats.parse_seconds = time.perf_counter() - start
    return out, files


# ---------------------------------------------------------------------------------------------

@dataclass
class _Sym:
    """A symbol as the graph sees it: the facts' Symbol, with its in-tree import edges."""

    id: str
    module: str
    sym: Symbol
    edges: tuple[tuple[str, str, int], ...]  # in-tree (module, name, line) its import aliases bind
    cls: str = ""  # members: the class id

    @property
    def name(self) -> str:
        return self.sym.name


@dataclass
class SymbolGraph:
    rules: SymbolRules
    modules: dict[str, ModuleSymbols]
    symbols: dict[str, _Sym] = field(default_factory=dict)
    by_name: dict[str, list[str]] = field(default_factory=dict)
    subclasses: dict[str, list[str]] = field(default_factory=dict)  # class id -> direct subclass ids
    external_bases: dict[str, list[str]] = field(default_factory=dict)  # class id -> dotted external bases
    live: dict[str, Reason] = field(default_factory=dict)
    used: dict[str, Reason] = field(default_factory=dict)  # attribute / string names seen in live code
    used_strings: dict[str, Reason] = field(default_factory=dict)  # string names seen in live code
    object_modules: set[str] = field(default_factory=set)  # modules some file may hold as an object
    patterns: dict[str, Reason] = field(default_factory=dict)
    stats: SymbolStats = field(default_factory=SymbolStats)
    # the upstream tree, for attribute tables whose entries go only if upstream read them
    # (rules.attribute_tables only_removed_readers); None: the pinned upstream, loaded when needed
    upstream: Optional[Path] = None
    _upstream_reads: dict[str, set[str]] = field(default_factory=dict, repr=False)  # table class -> names read

    # -- building -----------------------------------------------------------------------------------
    def _index(self) -> None:
        known = set(self.modules)
        for module in list(known):
            parts = module.split(".")
            for i in range(1, len(parts)):
                known.add(".".join(parts[:i]))
        self._known = known
        for module, ms in self.modules.items():
            for qualname, sym in ms.symbols.items():
                # `from pkg import n` binds pkg's own `n` when pkg's __init__ binds one (Python reads
                # the attribute first), else the submodule pkg.n (a module, not a symbol)
                edges = tuple((m, n, line) for m, n, line in sym.imports
                              if self._in_tree(m) and (f"{m}.{n}" not in known or self._binds(m, n)))
                if IMPORT in sym.kinds and not edges and all(k == IMPORT for k in sym.kinds):
                    continue  # only third-party imports or submodules bind it: not a symbol
                item = _Sym(sid(module, qualname), module, sym, edges)
                if sym.kinds and sym.kinds[0] in (METHOD, NESTED_CLASS, CLASS_ATTR):
                    item.cls = sid(module, qualname.rsplit(".", 1)[0])
                self.symbols[item.id] = item
                self.by_name.setdefault(item.name, []).append(item.id)
        self._blob = "\n".join(sorted(self.by_name))

    def _object_modules(self) -> None:
        """Modules a file may hold as an object (see ModuleSymbols.module_refs): each `import a.b.c`
        makes a, a.b and a.b.c objects; "a.b.*" (f"a.b.{x}") every module under a.b; a string or
        `from a import b` names a module when it is one. A module star-imported by an object
        module is one too (its names are attributes of the importer)."""
        modules = set(self.modules)
        found: set[str] = set()
        prefixes: list[str] = []
        for ms in self.modules.values():
            if ms.dynamic or ms.parse_error:
                found.add(ms.module)
            for ref in ms.module_refs:
                kind, _, name = ref.partition(":")
                if kind == "p":  # f"a.b.{x}": any module under a.b
                    prefixes.append(name + ".")
                elif kind == "i":  # import a.b.c binds a; a.b and a.b.c are reached as attributes
                    parts = name.split(".")
                    found.update(p for p in (".".join(parts[:i]) for i in range(1, len(parts) + 1)) if p in modules)
                elif kind == "f":  # from a import b: an object only when a.b is a module
                    if name in modules:
                        found.add(name)
                else:  # a string: the module it names ("a.b.c.func" -> a.b.c)
                    parts = name.split(".")
                    for i in range(len(parts), 0, -1):
                        if ".".join(parts[:i]) in modules:
                            found.add(".".join(parts[:i]))
                            break
        if prefixes:
            for module in modules:
                if any(module.startswith(p) for p in prefixes):
                    found.add(module)
        changed = True
        while changed:
            changed = False
            for module in list(found):
                for star in self.modules[module].star if module in self.modules else ():
                    if star in modules and star not in found:
                        found.add(star)
                        changed = True
        self.object_modules = found

    def _binds(self, module: str, name: str) -> bool:
        ms = self.modules.get(module)
        return ms is not None and name in ms.symbols

    def _in_tree(self, module: str) -> bool:
        top = module.split(".")[0]
        return top in self._tops

    def _resolve_dotted(self, module: str, dotted: str, depth: int = 0) -> tuple[str, str]:
        """A dotted expression in `module` -> ("class", id) in the tree, ("external", dotted), or ("", "")."""
        if not dotted or dotted == "?" or depth > 12:
            return "", ""
        head, _, rest = dotted.partition(".")
        ms = self.modules.get(module)
        if ms is not None:
            item = self.symbols.get(sid(module, head))
            if item is not None and CLASS in item.sym.kinds and not rest:
                return "class", item.id
            if item is not None and item.edges and IMPORT in item.sym.kinds:
                target_module, name, _ = item.edges[0]
                return self._resolve_in(target_module, ".".join(filter(None, [name, rest])), depth + 1)
            if head in ms.aliases:
                full = ".".join(filter(None, [ms.aliases[head], rest]))
                if self._in_tree(full):
                    return self._resolve_absolute(full, depth + 1)
                return "external", full
            for star in ms.star:
                if self._in_tree(star):
                    kind, found = self._resolve_in(star, dotted, depth + 1)
                    if kind:
                        return kind, found
            if head in _BUILTINS:
                return "external", f"builtins.{dotted}"
        return "", ""

    def _resolve_absolute(self, full: str, depth: int) -> tuple[str, str]:
        parts = full.split(".")
        for i in range(len(parts) - 1, 0, -1):
            mod = ".".join(parts[:i])
            if mod in self.modules:
                return self._resolve_in(mod, ".".join(parts[i:]), depth)
        return "", ""

    def _resolve_in(self, module: str, dotted: str, depth: int) -> tuple[str, str]:
        if f"{module}.{dotted.split('.')[0]}" in self._known:
            return self._resolve_absolute(f"{module}.{dotted}", depth)
        return self._resolve_dotted(module, dotted, depth)

    def _hierarchy(self) -> None:
        self._parents: dict[str, list[str]] = {}
        for item in self.symbols.values():
            if CLASS not in item.sym.kinds:
                continue
            for base in item.sym.bases:
                if base.startswith("metaclass="):
                    kind, found = self._resolve_dotted(item.module, base.split("=", 1)[1])
                    if kind == "external" and found not in ("abc.ABCMeta", "builtins.type"):
                        self.external_bases.setdefault(item.id, []).append(f"metaclass {found}")
                    continue
                kind, found = self._resolve_dotted(item.module, base)
                if kind == "class":
                    self.subclasses.setdefault(found, []).append(item.id)
                    self._parents.setdefault(item.id, []).append(found)
                elif kind == "external":
                    self.external_bases.setdefault(item.id, []).append(found)

    def bases_outside(self, class_id: str) -> list[str]:
        """External bases of a class and of its in-tree bases (transitively)."""
        seen, out = set(), []
        parents = self._parents
        todo = [class_id]
        while todo:
            current = todo.pop()
            if current in seen:
                continue
            seen.add(current)
            out.extend(b for b in self.external_bases.get(current, ()) if b not in out)
            todo.extend(parents.get(current, ()))
        return out

    # -- liveness -----------------------------------------------------------------------------------
    def _mark(self, symbol_id: str, reason: Reason) -> None:
        if symbol_id not in self.live:
            self.live[symbol_id] = reason
            self._queue.append(symbol_id)

    def _mark_named(self, name: str, reason: Reason, *, members: bool = True, tops: str = "all") -> None:
        """Symbols called `name`: members of kept classes (and of classes kept later, through
        `used`), and module-level ones — in every module (`tops="all"`), only in modules some
        file holds as an object (`"objects"`: what `x.name` can reach), or none."""
        for symbol_id in self.by_name.get(name, ()):
            item = self.symbols[symbol_id]
            if item.cls:
                if members and item.cls in self.live:
                    self._mark(symbol_id, reason)
            elif tops == "all" or (tops == "objects" and (item.module in self.object_modules
                                                          or symbol_id in self._ops)):
                self._mark(symbol_id, reason)

    def _use(self, name: str, reason: Reason) -> None:
        """An attribute `.name` (code "attr") or a string "name" read by kept code."""
        first = name not in self.used
        if first:
            self.used[name] = reason
        if reason.code == "attr":
            if first:
                self._mark_named(name, reason, tops="objects")
            return
        if name in self.used_strings:
            return
        self.used_strings[name] = reason
        self._mark_named(name, reason, members=first)

    def _use_pattern(self, pattern: str, reason: Reason) -> None:
        if pattern in self.patterns or not self.pattern_counts(pattern):
            return
        self.patterns[pattern] = reason
        rx = re.compile("^" + "".join("[^\n]*" if c == "*" else "[^\n]" if c == "?" else re.escape(c)
                                      for c in pattern) + "$", re.M)
        for match in rx.finditer(self._blob):
            self._mark_named(match.group(), reason, tops="objects")

    def pattern_counts(self, pattern: str) -> bool:
        """A string-built name counts when a literal run of it has `min_pattern_chars` letters or
        digits (`forward_*`, `*_buffer_*`); `_*_*` and the like would match almost anything."""
        return any(sum(c.isalnum() for c in run) >= self.rules.min_pattern_chars for run in pattern.split("*"))

    def _pattern_match(self, name: str) -> Optional[Reason]:
        for pattern, reason in self.patterns.items():
            if self._pattern_rx(pattern).match(name):
                return reason
        return None

    def _pattern_rx(self, pattern: str) -> re.Pattern:
        rx = self._rx_cache.get(pattern)
        if rx is None:
            rx = self._rx_cache[pattern] = re.compile(translate(pattern))
        return rx

    def resolve_name(self, module: str, name: str, cls: str = "") -> list[str]:
        """The symbols a bare `name` read in `module` (in class `cls`'s code) may denote."""
        found = []
        if cls:
            member = f"{cls}.{name}"
            if member in self.symbols:
                found.append(member)
        own = sid(module, name)
        if own in self.symbols:
            found.append(own)
            return found
        ms = self.modules.get(module)
        if ms is not None and ms.star:
            found.extend(self.resolve_export(module, name, via_star_only=True))
        return found

    def resolve_export(self, module: str, name: str, *, via_star_only: bool = False,
                       _seen: Optional[set[str]] = None) -> list[str]:
        """The symbols `from module import name` binds (following `import *`)."""
        seen = _seen if _seen is not None else set()
        if module in seen:
            return []
        seen.add(module)
        if not via_star_only and sid(module, name) in self.symbols:
            return [sid(module, name)]
        ms = self.modules.get(module)
        out: list[str] = []
        if ms is not None:
            for star in ms.star:
                out.extend(self.resolve_export(star, name, _seen=seen))
        return out

    def _process(self, refs: Refs, module: str, via: str, cls: str = "") -> None:
        for name, line in refs.names.items():
            if name in _BUILTINS and sid(module, name) not in self.symbols:
                continue
            for target in self.resolve_name(module, name, cls):
                self._mark(target, Reason("name", f"`{name}` is read by {via}", via, line))
        for name, line in refs.attrs.items():
            self._use(name, Reason("attr", f"attribute `.{name}` is read by {via}", via, line))
        for name, line in refs.strings.items():
            self._use(name, Reason("string", f"string \"{name}\" in {via}", via, line))
        for (callee, target, name), line in refs.module_attrs.items():
            if self.rules.imports_attribute(callee):
                # callee("pkg.mod", "name") imports pkg.mod and reads its `name`: that one symbol, if in the tree
                for found in self.resolve_export(target, name):
                    self._mark(found, Reason("lazy import", f"{callee}(\"{target}\", \"{name}\") in {via}", via, line))
            else:
                self._use(name, Reason("string", f"string \"{name}\" in {via}", via, line))
        lookup = self.modules[module].lookup if module in self.modules else ""
        for pattern, line in (refs.patterns.items() if lookup else ()):
            self._use_pattern(pattern, Reason("pattern", f"string-built name `{pattern}` in {via}", via, line))
        for (target, name), line in refs.imports.items():
            for found in self.resolve_export(target, name):
                self._mark(found, Reason("import", f"imported by {via}", via, line))
        for name, line in refs.subclasses.items():
            bases = self.resolve_name(module, name, cls) or \
                [s for s in self.by_name.get(name, ()) if CLASS in self.symbols[s].sym.kinds]
            for base in bases:
                self._enumerate_subclasses(base, Reason("subclasses", f"{name}.__subclasses__() in {via}", via, line))

    def _enumerate_subclasses(self, base: str, reason: Reason) -> None:
        todo = list(self.subclasses.get(base, ()))
        while todo:
            current = todo.pop()
            if current not in self.live:
                self._mark(current, reason)
                todo.extend(self.subclasses.get(current, ()))

    def _read_upstream(self, class_id: str) -> set[str]:
        """The entries of table class `class_id` that some upstream file reads (`.name` or "name")."""
        cache = self._upstream_reads
        if class_id not in cache:
            from shrinker.symbols.name_reads import name_readers

            upstream = self.upstream
            if upstream is None:
                from shrinker.upstream import load

                upstream = load().root
            upstream = Path(upstream)
            entries = [item.name for item in self.symbols.values()
                       if item.cls == class_id and self._table_entry(item)]
            cache[class_id] = {n for n, files in name_readers(upstream, entries).items() if files}
        return cache[class_id]

    def _table_entry(self, item: _Sym) -> bool:
        """A `NAME = value` line of a class that rules.attribute_tables names."""
        return item.sym.kinds[0] == CLASS_ATTR and self.rules.attribute_table(item.cls) is not None

    def _member_protection(self, item: _Sym, class_item: _Sym, external: list[str]) -> Optional[Reason]:
        name = item.name
        if CLASS_ATTR in item.sym.kinds and item.sym.kinds[0] == CLASS_ATTR:
            table = self.rules.attribute_table(class_item.id)
            if table is None:  # dataclass / pydantic fields, enum members, constants: read in ways not traced
                return Reason("member", f"a class attribute of {class_item.id}, which is kept")
            if name in self.used:
                return self.used[name]
            if table.only_removed_readers and name not in self._read_upstream(class_item.id):
                return Reason("table", f"upstream never reads `{name}` either: it served no removed code "
                                       f"(rule attribute_tables only_removed_readers, {table.cls})")
            return None
        rule = self.rules.protected("member", name)
        if rule is not None:
            return Reason("protect", f"member `{name}`: {rule.reason} (rule protect member={rule.member!r})")
        for decorator in item.sym.decorators:
            why = self.rules.decorator_registers(decorator)
            if why:
                return Reason("decorator", why)
        for base in external:
            known = self.rules.base_hooks(base)
            if known is None:
                return Reason("base", f"{class_item.id} subclasses {base}, which is outside the tree: "
                                      f"it may call any member")
            if any(self._pattern_rx(h).match(name) for h in known.hooks):
                return Reason("base", f"{base} calls `{name}` on subclasses: {known.reason}")
        for ancestor in self._ancestors(class_item.id):
            kept = self.live.get(f"{ancestor}.{name}")
            if kept is not None:
                return Reason("override", f"overrides {ancestor}.{name}, which is kept ({kept.code}): what "
                                          f"calls the base calls the override", f"{ancestor}.{name}")
        if name in self.used:
            return self.used[name]
        return self._pattern_match(name)

    def _ancestors(self, class_id: str) -> list[str]:
        out, todo = [], list(self._parents.get(class_id, ()))
        while todo:
            current = todo.pop()
            if current not in out:
                out.append(current)
                todo.extend(self._parents.get(current, ()))
        return out

    def _descendants(self, class_id: str) -> list[str]:
        out, todo = [], list(self.subclasses.get(class_id, ()))
        while todo:
            current = todo.pop()
            if current not in out:
                out.append(current)
                todo.extend(self.subclasses.get(current, ()))
        return out

    def _on_live(self, symbol_id: str) -> None:
        item = self.symbols[symbol_id]
        sym = item.sym
        via = symbol_id
        if item.cls:
            self._mark(item.cls, Reason("member", f"its member {item.name} is kept", symbol_id))
            # Overrides in kept subclasses stay with it (whatever calls it calls them; and an
            # abstract base method left without its override would make the subclass abstract).
            for sub in self._descendants(item.cls):
                override = f"{sub}.{item.name}"
                if sub in self.live and override in self.symbols:
                    self._mark(override, Reason("override", f"overrides {symbol_id}, which is kept", symbol_id))
        own_class = symbol_id if CLASS in sym.kinds else item.cls
        self._process(sym.refs, item.module, via, own_class)
        if sym.refs.dynamic:  # kept code that reads its module's namespace whole may read any name there
            self._mark_module_level(item.module, Reason("dynamic", f"{symbol_id} reads its module's namespace "
                                                                   f"whole ({sym.refs.dynamic})", symbol_id))
        for module, name, line in item.edges:
            for found in self.resolve_export(module, name):
                self._mark(found, Reason("import", f"{symbol_id} imports it (line {line})", symbol_id, line))
        if CLASS in sym.kinds:
            external = self.bases_outside(symbol_id)
            for member in sym.members:
                member_id = sid(item.module, member)
                if member_id in self.symbols and member_id not in self.live:
                    reason = self._member_protection(self.symbols[member_id], item, external)
                    if reason is not None:
                        self._mark(member_id, reason)

    def _mark_module_level(self, module: str, reason: Reason) -> None:
        for qualname in self.modules[module].symbols:
            if "." not in qualname and sid(module, qualname) in self.symbols:
                self._mark(sid(module, qualname), reason)

    def _roots(self, tree: Optional[Path]) -> None:
        for module, ms in sorted(self.modules.items()):
            via = sid(module, MODULE_CODE)
            if ms.parse_error:
                for name, line in ms.root.attrs.items():
                    self._use(name, Reason("unparsed", f"`{name}` appears in {ms.path}, which does not "
                                                       f"parse ({ms.parse_error})", via, line))
            self._process(ms.root, module, via)
            if ms.exports and module in self._star_imported:
                for name, line in ms.exports.items():
                    for target in self.resolve_name(module, name):
                        self._mark(target, Reason("string", f"listed in __all__, and {self._star_imported[module]} "
                                                            f"star-imports {module}", via, line))
            if ms.root.dynamic:
                self._mark_module_level(module, Reason("dynamic", f"{module} reads its namespace whole "
                                                                  f"({ms.root.dynamic})", via))
        for item in self.symbols.values():
            if item.cls:
                continue
            if item.sym.pinned:
                self._mark(item.id, Reason("noqa", item.sym.pinned))
                continue
            rule = self.rules.protected("symbol", item.id) or self.rules.protected("name", item.name)
            if rule is not None:
                self._mark(item.id, Reason("protect", f"{rule.reason} (rule protect "
                                                      f"{'symbol=' + repr(rule.symbol) if rule.symbol else 'name=' + repr(rule.name)})"))
                continue
            for decorator in item.sym.decorators:
                why = self.rules.decorator_registers(decorator)
                if why:
                    self._mark(item.id, Reason("decorator", why))
                    break
        for item in self.symbols.values():
            if CLASS not in item.sym.kinds:
                continue
            for ancestor in self._ancestors(item.id):
                if f"{ancestor}.__init_subclass__" in self.symbols:
                    self._mark(item.id, Reason("subclasses", f"defining it registers it: {ancestor} has "
                                                             f"__init_subclass__"))
                    break
        for item in self.symbols.values():
            if item.cls and self._table_entry(item):
                continue  # a field of an attribute table: kept only while its name is read (rules.attribute_tables)
            if item.cls and (rule := self.rules.protected("symbol", item.id)) is not None:
                self._mark(item.id, Reason("protect", f"{rule.reason} (rule protect symbol={rule.symbol!r})"))
        if tree is not None:
            for target, where in entry_points(tree, self.rules.entry_point_files):
                module, _, attr = target.partition(":")
                for found in self.resolve_export(module, attr.split(".")[0]):
                    self._mark(found, Reason("entry_point", f"entry point in {where}"))

    def compute(self, tree: Optional[Path] = None) -> None:
        start = time.perf_counter()
        self._tops = {m.split(".")[0] for m in self.modules if not m.startswith("<script>")}
        self._rx_cache: dict[str, re.Pattern] = {}
        self._index()
        self._object_modules()
        self._hierarchy()
        # `__all__` is read by `from m import *` only: it names uses when some module star-imports m
        self._star_imported = {star: module for module, ms in sorted(self.modules.items()) for star in ms.star}
        # Registered ops are also reached as `torch.ops.<namespace>.<name>`: an attribute keeps them.
        self._ops = {item.id for item in self.symbols.values()
                     if not item.cls and any(map(self.rules.decorator_names_op, item.sym.decorators))}
        self._queue: deque[str] = deque()
        self._roots(tree)
        while self._queue:
            self._on_live(self._queue.popleft())
        self.stats.live_seconds = time.perf_counter() - start

    # -- answers ------------------------------------------------------------------------------------
    def is_dead(self, symbol_id: str) -> bool:
        item = self.symbols.get(symbol_id)
        if item is None or symbol_id in self.live:
            return False
        return not item.cls or item.cls in self.live  # a member of a removed class goes with it

    def dead(self) -> dict[str, DeadSymbols]:
        """Per module, what goes (members of removed classes go with their class)."""
        names: dict[str, set[str]] = {}
        members: dict[str, set[str]] = {}
        imports: dict[str, set[tuple[str, str, str]]] = {}
        lines: dict[str, int] = {}
        for symbol_id, item in self.symbols.items():
            if not self.is_dead(symbol_id):
                continue
            module, qualname = item.module, item.sym.qualname
            lines[module] = lines.get(module, 0) + item.sym.lines
            if item.cls:
                members.setdefault(module, set()).add(qualname)
                continue
            if any(k != IMPORT for k in item.sym.kinds):
                names.setdefault(module, set()).add(qualname)
            for target, name, _ in item.edges:
                imports.setdefault(module, set()).add((target, name, qualname))
        pure_calls = self.rules.pure_call_set
        out = {}
        for module in sorted(set(names) | set(members) | set(imports)):
            out[module] = DeadSymbols(frozenset(names.get(module, ())), frozenset(members.get(module, ())),
                                      frozenset(imports.get(module, ())), pure_calls, lines.get(module, 0))
        return out

    def dead_lines(self) -> int:
        return sum(d.lines for d in self.dead().values())

    def referrers(self, symbol_id: str) -> list[tuple[str, str, int]]:
        """(symbol, how, line) for every piece of code, kept or not, that mentions the symbol."""
        name = self.symbols[symbol_id].name
        out = []
        for ms in self.modules.values():
            pieces: list[tuple[str, Refs, str]] = [(sid(ms.module, MODULE_CODE), ms.root, "")]
            for qualname, sym in ms.symbols.items():
                owner = sid(ms.module, qualname)
                cls = owner if CLASS in sym.kinds else (sid(ms.module, qualname.rsplit(".", 1)[0]) if "." in qualname else "")
                pieces.append((owner, sym.refs, cls))
                for target, imported, line in sym.imports:
                    if imported == name and symbol_id in self.resolve_export(target, imported):
                        out.append((owner, "import", line))
            for owner, refs, cls in pieces:
                if name in refs.names and symbol_id in self.resolve_name(ms.module, name, cls):
                    out.append((owner, "name", refs.names[name]))
                for kind in ("attrs", "strings"):
                    if name in getattr(refs, kind):
                        out.append((owner, kind[:-1], getattr(refs, kind)[name]))
                for (callee, target, attr), line in refs.module_attrs.items():
                    if attr == name and (not self.rules.imports_attribute(callee)
                                         or symbol_id in self.resolve_export(target, attr)):
                        out.append((owner, "string", line))
        return sorted(set(out))


def entry_points(tree: Path, files: Iterable[str]) -> list[tuple[str, str]]:
    """`module:attr` strings of [project.scripts] / [project.entry-points.*] in the given TOML files."""
    out = []
    for rel in files:
        path = tree / rel
        if not path.exists():
            continue
        try:
            data = tomllib.loads(path.read_text())
        except tomllib.TOMLDecodeError:
            continue
        project = data.get("project", {})
        tables = [project.get("scripts", {}), project.get("gui-scripts", {}),
                  *project.get("entry-points", {}).values()]
        for table in tables:
            for value in table.values():
                if isinstance(value, str) and ":" in value:
                    out.append((value.split("[")[0].strip(), rel))
    return out


def build_symbol_graph(tree: Path, rules: SymbolRules, *, jobs: int = 2,
                       cache: Optional[FactsCache] = None, upstream: Optional[Path] = None) -> SymbolGraph:
    stats = SymbolStats()
    modules, _ = tree_symbols(tree, rules, jobs=jobs, cache=cache, stats=stats)
    graph = SymbolGraph(rules=rules, modules=modules, stats=stats, upstream=upstream)
    graph.compute(tree)
    return graph


def graph_from_sources(sources: dict[str, str], rules: SymbolRules, upstream: Optional[Path] = None) -> SymbolGraph:
    """A graph over in-memory modules ({dotted module: source}; a name ending in .__init__ is a
    package): for tests and small checks."""
    modules = {}
    for module, source in sources.items():
        is_package = module.endswith(".__init__")
        name = module.removesuffix(".__init__")
        path = name.replace(".", "/") + ("/__init__.py" if is_package else ".py")
        modules[name] = module_symbols(source, path, name, is_package, rules.pure_call_set)
    graph = SymbolGraph(rules=rules, modules=modules, upstream=upstream)
    graph.compute()
    return graph
