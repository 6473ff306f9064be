"""One .py file -> `ModuleSymbols`: its symbols and what each one references, read with `ast`.

A *symbol* is what the `remove_dead_symbols` codemod can delete as a whole, named by its qualname:
  - a module-level `def` / `async def` / `class` (statements of the module body itself);
  - a method or nested class of such a class (`C.m`, statements of the class body itself);
  - a module-level `NAME = value` / `NAME: T = value` whose value has no side effect (`pure`);
  - a name bound by a module-level `from X import name [as alias]` (at any depth of module-level
    `if` / `try` / `with`, never inside a def or class): the symbol is the alias, its edge is (X, name).
Several statements may bind one qualname (a property and its setter, a def and an import): one
symbol, removed whole or not at all. Everything else at module level is *root code*: it runs on
import, so whatever it references is live. A class's own root code (decorators, bases, keywords,
body statements other than members) runs when the class statement runs.

What a piece of code references (`Refs`):
  names       bare names read (`f(x)`, `isinstance(x, C)`, annotations, decorators, defaults);
  attrs       attribute names read (`x.foo` -> foo): resolved by name, conservatively;
  strings     identifier strings, and the identifier parts of dotted / "mod:attr" strings;
  patterns    string-built names: f"forward_{mode}", "forward_%s" % m, "forward_{}".format(m),
              "forward_" + m -> the glob `forward_*` (only the parts made of identifier chars);
              they count where the module looks computed names up (`ModuleSymbols.lookup`);
  imports     `from X import n` inside functions (runs when the function runs): (X, n);
  module_attrs  f("pkg.mod", "name", ...): (f, module, name); the graph reads `name` as pkg.mod's
              attribute where a rule says f imports it (`attribute_calls`: LazyImport), else as a string;
  subclasses  `X.__subclasses__()`: every subclass of X is enumerated.
Each maps the name to the first line it appears on (for `shrink why`).

`ModuleSymbols.dynamic` says why the module's namespace is read as a whole (`globals()`,
`vars()`, `sys.modules[__name__]`, `inspect.getmodule(f).__dict__`), by any of its code; `Refs.dynamic`
says it of one piece of code: module-level code keeps every module-level symbol, a function or method
only once it is kept itself (0.5.23's test_utils reads its `DEFAULT_*MODEL*` names through `__dict__` in
`_get_default_models`, which nothing calls). A loop that reads
`globals()[n]` only for the names of a literal list, and only while bound (`if n in globals()`), is
no such read, and that list's strings reference nothing (guarded_lookups.py: sgl_kernel's debug wrap).
Facts never hold rule decisions: a rules change never re-parses.
"""

from __future__ import annotations

import ast
import re
from fnmatch import fnmatchcase
from dataclasses import dataclass, field

from shrinker.graph.bindings import LOOKUP_ANY, LOOKUP_CALLS, NAMESPACE_CALLS, dotted
from shrinker.graph.parse import resolve_relative
from shrinker.symbols.guarded_lookups import quiet_nodes

# Bump when the meaning of ModuleSymbols changes: old cache entries are then ignored.
SYMBOLS_VERSION = "13"

FUNCTION, CLASS, METHOD, NESTED_CLASS, ASSIGN, IMPORT, CLASS_ATTR = (
    "function", "class", "method", "nested_class", "assign", "import", "class_attr")

_IDENT = re.compile(r"[A-Za-z_]\w*\Z")
_DOTTED = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)+\Z")  # "pkg.mod": a module path (one dot at least)
_PATHLIKE = re.compile(r"[A-Za-z_][\w.:]*\Z")
_ANNOTATION = re.compile(r"[\w\s.,\[\]|'\"()]+\Z")
_PATTERN_OK = re.compile(r"[\w.:*]+\Z")
_PERCENT = re.compile(r"%(?:\([^)]*\))?[-#0 +]*\d*(?:\.\d+)?[sdrifxXeEgGc]")
_BRACES = re.compile(r"\{[^{}]*\}")
_NOQA = re.compile(r"#\s*noqa\b", re.IGNORECASE)
# Calls that resolve names in the CALLER's namespace (pydantic's model_rebuild() reads the
# annotations' names from the calling module's globals): the caller's module is dynamic.
_FRAME_NAMESPACE_CALLS = {"model_rebuild", "update_forward_refs"}


@dataclass
class Refs:
    names: dict[str, int] = field(default_factory=dict)
    attrs: dict[str, int] = field(default_factory=dict)
    strings: dict[str, int] = field(default_factory=dict)
    patterns: dict[str, int] = field(default_factory=dict)
    imports: dict[tuple[str, str], int] = field(default_factory=dict)
    subclasses: dict[str, int] = field(default_factory=dict)
    # call("pkg.mod", "name", ...): (dotted callee, module string, name string). The graph reads the name
    # as pkg.mod's attribute when a rule says the callee imports it (LazyImport), else as a plain string.
    module_attrs: dict[tuple[str, str, str], int] = field(default_factory=dict)
    dynamic: str = ""  # why this code reads its module's namespace whole ("" if it does not)

    def merge(self, other: "Refs") -> None:
        for key in ("names", "attrs", "strings", "patterns", "imports", "subclasses", "module_attrs"):
            mine = getattr(self, key)
            for name, line in getattr(other, key).items():
                mine.setdefault(name, line)
        self.dynamic = self.dynamic or other.dynamic


@dataclass
class Symbol:
    qualname: str  # "f", "C", "C.m", "X"
    kinds: tuple[str, ...]  # one per binding statement: function | class | method | nested_class | assign | import
    line: int  # first binding statement (its first decorator)
    lines: int  # non-blank lines of every binding statement (0 for an import alias)
    refs: Refs = field(default_factory=Refs)
    decorators: tuple[str, ...] = ()  # dotted callee of each decorator ("app.post", "register_custom_op"; "" if not dotted)
    bases: tuple[str, ...] = ()  # classes: dotted base expressions as written ("nn.Module"; "?" if not dotted)
    imports: tuple[tuple[str, str, int], ...] = ()  # import aliases: (absolute module, name, line)
    members: tuple[str, ...] = ()  # classes: qualnames of methods and nested classes
    pinned: str = ""  # why the source itself says it is used (an import marked `# noqa`)

    @property
    def name(self) -> str:
        return self.qualname.rsplit(".", 1)[-1]


@dataclass
class ModuleSymbols:
    module: str
    path: str
    is_package: bool
    lines: int  # non-blank lines of the file
    symbols: dict[str, Symbol] = field(default_factory=dict)
    root: Refs = field(default_factory=Refs)  # module-level code that runs on import
    star: tuple[str, ...] = ()  # absolute modules of `from X import *` at module level
    # Names a module-level `__all__ = [...]` / `__all__ += [...]` of string literals lists: what
    # `from module import *` binds, a use only when a module of the tree star-imports this one.
    exports: dict[str, int] = field(default_factory=dict)
    aliases: dict[str, str] = field(default_factory=dict)  # name bound by any import -> dotted target
    dynamic: str = ""  # why the module's namespace is read as a whole ("" if it is not)
    lookup: str = ""  # where the module looks a computed name up (getattr(x, name) ...), "" if nowhere
    # Dotted names this file may hold as module objects, by kind: "i:a.b" `import a.b`,
    # "f:a.b" `from a import b`, "s:a.b.c" a dotted string or import_module("a.b.c"), "p:a.b"
    # import_module(f"a.b.{x}") / ("a.b." + x). Only modules some file holds as an object can have a module-level
    # name read as an attribute (`b.func`).
    module_refs: dict[str, int] = field(default_factory=dict)
    parse_error: str = ""


def decorator_name(node: ast.expr) -> str:
    return dotted(node.func if isinstance(node, ast.Call) else node)


def base_name(node: ast.expr) -> str:
    if isinstance(node, ast.Subscript):  # Generic[T], BaseModel[...]
        node = node.value
    return dotted(node) or "?"


class _Collector(ast.NodeVisitor):
    """The references of the code it visits (see the module docstring)."""

    def __init__(self, module: str, is_package: bool, quiet: frozenset[int] = frozenset()):
        self.module, self.is_package = module, is_package
        self.quiet = quiet  # node ids that read no namespace / reference nothing (guarded_lookups)
        self.refs = Refs()
        self.dynamic = ""
        self.lookup = ""
        self.module_refs: dict[str, int] = {}

    # -- names and attributes ---------------------------------------------------------------------
    def visit_Name(self, node: ast.Name) -> None:
        if not isinstance(node.ctx, ast.Store):
            self.refs.names.setdefault(node.id, node.lineno)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if not isinstance(node.ctx, ast.Store):
            self.refs.attrs.setdefault(node.attr, node.lineno)
            if node.attr == "__subclasses__":
                head = node.value.id if isinstance(node.value, ast.Name) else \
                    node.value.attr if isinstance(node.value, ast.Attribute) else ""
                if head:
                    self.refs.subclasses.setdefault(head, node.lineno)
        self.visit(node.value)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        # `X += 1` / `self.x += 1` read their target too.
        if isinstance(node.target, ast.Name):
            self.refs.names.setdefault(node.target.id, node.lineno)
        elif isinstance(node.target, ast.Attribute):
            self.refs.attrs.setdefault(node.target.attr, node.lineno)
        self.generic_visit(node)

    def visit_Global(self, node: ast.Global) -> None:
        for name in node.names:
            self.refs.names.setdefault(name, node.lineno)

    visit_Nonlocal = visit_Global  # type: ignore[assignment]

    # -- strings ----------------------------------------------------------------------------------
    def _string(self, text: str, line: int) -> None:
        if len(text) > 300:
            return
        if _IDENT.match(text):
            self.refs.strings.setdefault(text, line)
        elif _PATHLIKE.match(text):
            if "." in text:
                self.module_refs.setdefault("s:" + text.split(":")[0], line)
            for part in re.split(r"[.:]", text):
                if _IDENT.match(part):
                    self.refs.strings.setdefault(part, line)
        elif _ANNOTATION.match(text):
            # A string annotation ("Runner | None", "Optional[Req]"): its names are read by type
            # checkers and by pyflakes, and get_type_hints() evaluates them in the module.
            try:
                expr = ast.parse(text.strip(), mode="eval")
            except (SyntaxError, ValueError):
                return
            for node in ast.walk(expr):
                if isinstance(node, ast.Name):
                    self.refs.names.setdefault(node.id, line)
                    self.refs.strings.setdefault(node.id, line)
                elif isinstance(node, ast.Attribute):
                    self.refs.attrs.setdefault(node.attr, line)

    def _pattern(self, text: str, line: int) -> None:
        """`text` has `*` where the program inserts a value; record its identifier-shaped parts."""
        if "*" not in text or not _PATTERN_OK.match(text):
            return
        for part in re.split(r"[.:]", text):
            if "*" in part:
                if part.replace("*", ""):
                    self.refs.patterns.setdefault(re.sub(r"\*+", "*", part), line)
            elif _IDENT.match(part):
                self.refs.strings.setdefault(part, line)

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str) and id(node) not in self.quiet:
            self._string(node.value, node.lineno)

    def visit_JoinedStr(self, node: ast.JoinedStr) -> None:
        text = []
        for part in node.values:
            if isinstance(part, ast.Constant) and isinstance(part.value, str):
                text.append(part.value.replace("*", " "))
            else:
                text.append("*")
                self.visit(part)
        self._pattern("".join(text), node.lineno)

    def visit_BinOp(self, node: ast.BinOp) -> None:
        left, right = node.left, node.right
        if isinstance(node.op, ast.Add):
            if _is_str(left) and not _is_str(right):
                self._pattern(left.value.replace("*", " ") + "*", node.lineno)  # type: ignore[attr-defined]
            elif _is_str(right) and not _is_str(left):
                self._pattern("*" + right.value.replace("*", " "), node.lineno)  # type: ignore[attr-defined]
        elif isinstance(node.op, ast.Mod) and _is_str(left):
            text = _PERCENT.sub("*", left.value.replace("*", " ").replace("%%", "%"))  # type: ignore[attr-defined]
            self._pattern(text, node.lineno)
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr == "format" and _is_str(func.value):
            self._pattern(_BRACES.sub("*", func.value.value.replace("*", " ")), node.lineno)  # type: ignore[attr-defined]
        elif isinstance(func, ast.Name) and func.id in NAMESPACE_CALLS and not node.args and not node.keywords \
                and id(node) not in self.quiet:
            self.dynamic = self.dynamic or f"{func.id}() at line {node.lineno}"
        name = dotted(func)
        if isinstance(func, ast.Attribute) and func.attr in _FRAME_NAMESPACE_CALLS and not self.dynamic:
            self.dynamic = f"{func.attr}() at line {node.lineno} resolves names in this module's namespace"
        if name in ("inspect.getmodule", "getmodule") and not self.dynamic:
            self.dynamic = f"{name}() at line {node.lineno}"  # introspects a module's namespace
        if name.rsplit(".", 1)[-1] in ("import_module", "__import__") and node.args:
            self._imported_by_name(node.args[0], node.lineno)
        if not self.lookup:
            if name in LOOKUP_CALLS and len(node.args) >= 2 and not _is_str(node.args[1]):
                self.lookup = f"{name}(..., <computed name>) at line {node.lineno}"
            elif name in LOOKUP_ANY or name.rsplit(".", 1)[-1] in LOOKUP_ANY or (name in NAMESPACE_CALLS and node.args):
                self.lookup = f"{name}() at line {node.lineno}"
        if self._module_attr(name, node):
            return
        self.generic_visit(node)

    def _module_attr(self, name: str, node: ast.Call) -> bool:
        """call("pkg.mod", "name", ...): record the pair (see Refs.module_attrs) and visit the rest."""
        if not name or name.rsplit(".", 1)[-1] in ("import_module", "__import__") or len(node.args) < 2:
            return False
        module, attr = node.args[0], node.args[1]
        if not (_is_str(module) and _is_str(attr) and _DOTTED.match(module.value)  # type: ignore[attr-defined]
                and _IDENT.match(attr.value)):  # type: ignore[attr-defined]
            return False
        self.refs.module_attrs.setdefault((name, module.value, attr.value), node.lineno)  # type: ignore[attr-defined]
        for child in [node.func, module, *node.args[2:], *node.keywords]:
            self.visit(child)
        return True

    def visit_Subscript(self, node: ast.Subscript) -> None:
        if not self.lookup and not _is_str(node.slice) and (
                (isinstance(node.value, ast.Attribute) and node.value.attr == "__dict__")
                or (isinstance(node.value, ast.Call) and dotted(node.value.func) in NAMESPACE_CALLS
                    and id(node.value) not in self.quiet)):
            self.lookup = f"namespace subscript at line {node.lineno}"
        if dotted(node.value) == "sys.modules" and isinstance(node.slice, ast.Name) and node.slice.id == "__name__":
            self.dynamic = self.dynamic or f"sys.modules[__name__] at line {node.lineno}"
        self.generic_visit(node)

    def _imported_by_name(self, arg: ast.expr, line: int) -> None:
        """import_module("a.b") / f"a.b.{x}" / f"{__name__}.{x}" / "a.b." + x: the module(s) named."""
        if _is_str(arg):
            self.module_refs.setdefault("s:" + arg.value, line)  # type: ignore[attr-defined]
            return
        text = ""
        if isinstance(arg, ast.JoinedStr):
            for part in arg.values:
                if isinstance(part, ast.Constant) and isinstance(part.value, str):
                    text += part.value
                elif isinstance(part, ast.FormattedValue) and dotted(part.value) == "__name__":
                    text += self.module
                else:
                    break
        elif isinstance(arg, ast.BinOp) and isinstance(arg.op, ast.Add) and _is_str(arg.left):
            text = arg.left.value  # type: ignore[attr-defined]
        prefix = text.rsplit(".", 1)[0] if "." in text else ""
        if prefix and _PATHLIKE.match(prefix):
            self.module_refs.setdefault("p:" + prefix, line)

    # -- imports inside functions -----------------------------------------------------------------
    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        target = resolve_relative(self.module, self.is_package, node.level, node.module or "")
        for alias in node.names:
            if alias.name != "*":
                self.refs.imports.setdefault((target, alias.name), node.lineno)
                self.module_refs.setdefault(f"f:{target}.{alias.name}", node.lineno)

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self.module_refs.setdefault("i:" + alias.name, node.lineno)


def _matches(name: str, globs: frozenset[str]) -> bool:
    return bool(name) and (name in globs or any(fnmatchcase(name, g) for g in globs if "*" in g or "?" in g))


def _is_str(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


def pure(node: ast.expr | None, pure_calls: frozenset[str] | None = None) -> bool:
    """True when evaluating `node` has no effect beyond its value: names, attributes, literals,
    containers, operators, lambdas, and calls only to `pure_calls` (dotted callees or globs, from
    the rules: `frozenset`, `TypeVar`, `logging.getLogger` ...) with such arguments."""
    if node is None:
        return True
    if isinstance(node, (ast.Constant, ast.Name, ast.Lambda)):
        return True
    if isinstance(node, ast.Attribute):
        return pure(node.value, pure_calls)
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return all(pure(e, pure_calls) for e in node.elts)
    if isinstance(node, ast.Starred):
        return pure(node.value, pure_calls)
    if isinstance(node, ast.Dict):
        return all(k is None or pure(k, pure_calls) for k in node.keys) and all(pure(v, pure_calls) for v in node.values)
    if isinstance(node, ast.BinOp):
        return pure(node.left, pure_calls) and pure(node.right, pure_calls)
    if isinstance(node, ast.UnaryOp):
        return pure(node.operand, pure_calls)
    if isinstance(node, ast.BoolOp):
        return all(pure(v, pure_calls) for v in node.values)
    if isinstance(node, ast.Compare):
        return pure(node.left, pure_calls) and all(pure(c, pure_calls) for c in node.comparators)
    if isinstance(node, ast.IfExp):
        return all(pure(n, pure_calls) for n in (node.test, node.body, node.orelse))
    if isinstance(node, ast.Subscript):
        return pure(node.value, pure_calls) and pure(node.slice, pure_calls)
    if isinstance(node, ast.Slice):
        return all(pure(n, pure_calls) for n in (node.lower, node.upper, node.step))
    if isinstance(node, ast.JoinedStr):
        return all(pure(v, pure_calls) for v in node.values)
    if isinstance(node, ast.FormattedValue):
        return pure(node.value, pure_calls)
    if isinstance(node, ast.Call) and pure_calls:
        return (_matches(dotted(node.func), pure_calls) and all(pure(a, pure_calls) for a in node.args)
                and all(pure(k.value, pure_calls) for k in node.keywords))
    return False


class _Lines:
    """Non-blank line counts over line ranges."""

    def __init__(self, source: str):
        self.prefix = [0]
        for line in source.splitlines():
            self.prefix.append(self.prefix[-1] + (1 if line.strip() else 0))

    def count(self, first: int, last: int) -> int:
        last = min(last, len(self.prefix) - 1)
        return self.prefix[last] - self.prefix[first - 1] if first <= last else 0


def _first_line(node: ast.stmt) -> int:
    decorators = getattr(node, "decorator_list", None)
    return decorators[0].lineno if decorators else node.lineno


class _Builder:
    def __init__(self, source: str, path: str, module: str, is_package: bool, pure_calls: frozenset[str]):
        self.out = ModuleSymbols(module=module, path=path, is_package=is_package, lines=0)
        self.lines = _Lines(source)
        self.source_lines = source.splitlines()
        self.out.lines = self.lines.prefix[-1]
        self.pure_calls = pure_calls
        self.dynamic = ""
        self.lookup = ""
        self.quiet: frozenset[int] = frozenset()

    def collect(self, nodes: list[ast.AST]) -> Refs:
        c = _Collector(self.out.module, self.out.is_package, self.quiet)
        for node in nodes:
            c.visit(node)
        self.dynamic = self.dynamic or c.dynamic
        self.lookup = self.lookup or c.lookup
        for name, line in c.module_refs.items():
            self.out.module_refs.setdefault(name, line)
        c.refs.dynamic = c.dynamic
        return c.refs

    def _add(self, qualname: str, kind: str, node: ast.stmt, refs: Refs, **extra) -> Symbol:
        first = _first_line(node) if kind != IMPORT else node.lineno
        lines = self.lines.count(first, node.end_lineno or node.lineno) if kind != IMPORT else 0
        sym = self.out.symbols.get(qualname)
        if sym is None:
            sym = self.out.symbols[qualname] = Symbol(qualname=qualname, kinds=(), line=first, lines=0)
        sym.kinds += (kind,)
        sym.lines += lines
        sym.line = min(sym.line, first)
        sym.refs.merge(refs)
        for key, value in extra.items():
            setattr(sym, key, getattr(sym, key) + tuple(value))
        return sym

    def _def(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef, qualname: str, member: bool) -> None:
        decorators = [decorator_name(d) for d in node.decorator_list]
        if not isinstance(node, ast.ClassDef):
            kind = METHOD if member else FUNCTION
            self._add(qualname, kind, node, self.collect([node]), decorators=decorators)
            return
        kind = NESTED_CLASS if member else CLASS
        if member:  # a nested class goes whole: its methods are not symbols of their own
            self._add(qualname, kind, node, self.collect([node]), decorators=decorators,
                      bases=[base_name(b) for b in node.bases])
            return
        own = [*node.decorator_list, *node.bases, *node.keywords]
        members: list[str] = []
        body: list[ast.AST] = []
        for stmt in node.body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{qualname}.{stmt.name}"
                self._def(stmt, name, member=True)
                if name not in members:
                    members.append(name)
            else:
                body.append(stmt)
                # `NAME = value` in the class body: a member too (the graph removes one only in the
                # classes rules.attribute_tables name, such as the environment-variable table)
                target = _class_attribute(stmt)
                if target is not None:
                    name = f"{qualname}.{target}"
                    self._add(name, CLASS_ATTR, stmt, self.collect([stmt.value]))
                    if name not in members:
                        members.append(name)
        bases = [base_name(b) for b in node.bases]
        bases += [f"metaclass={dotted(k.value) or '?'}" for k in node.keywords if k.arg == "metaclass"]
        self._add(qualname, kind, node, self.collect([*own, *body]), decorators=decorators,
                  bases=bases, members=members)

    def _import_from(self, node: ast.ImportFrom) -> None:
        target = resolve_relative(self.out.module, self.out.is_package, node.level, node.module or "")
        if target == "__future__":
            return
        for alias in node.names:
            if alias.name == "*":
                self.out.star += (target,)
                continue
            bound = alias.asname or alias.name
            self.out.aliases[bound] = f"{target}.{alias.name}"
            self.out.module_refs.setdefault(f"f:{target}.{alias.name}", node.lineno)
            sym = self._add(bound, IMPORT, node, Refs(), imports=[(target, alias.name, node.lineno)])
            noqa = next((n for n in {node.lineno, getattr(alias, "lineno", node.lineno)}
                         if _NOQA.search(self._line(n))), 0)
            if noqa and not sym.pinned:
                sym.pinned = f"`# noqa` on its import (line {noqa}): used where linters cannot see"

    def _line(self, number: int) -> str:
        return self.source_lines[number - 1] if 0 < number <= len(self.source_lines) else ""

    def _import(self, node: ast.Import) -> None:
        for alias in node.names:
            self.out.module_refs.setdefault("i:" + alias.name, node.lineno)
            if alias.asname:
                self.out.aliases[alias.asname] = alias.name
            else:
                head = alias.name.split(".")[0]
                self.out.aliases[head] = head

    def module_level(self, stmts: list[ast.stmt], root: list[ast.AST], top: bool) -> None:
        """Statements run on import: symbols where they are one, root code otherwise."""
        for stmt in stmts:
            if top and isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                self._def(stmt, stmt.name, member=False)
            elif isinstance(stmt, ast.ImportFrom):
                self._import_from(stmt)
            elif isinstance(stmt, ast.Import):
                self._import(stmt)
            elif top and (listed := _export_list(stmt)) is not None:
                for name in listed:
                    self.out.exports.setdefault(name, stmt.lineno)
            elif top and isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 \
                    and isinstance(stmt.targets[0], ast.Name) and pure(stmt.value, self.pure_calls) \
                    and not _dunder(stmt.targets[0].id):
                self._add(stmt.targets[0].id, ASSIGN, stmt, self.collect([stmt.value]))
            elif top and isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) \
                    and pure(stmt.value, self.pure_calls) and not _dunder(stmt.target.id):
                self._add(stmt.target.id, ASSIGN, stmt,
                          self.collect([stmt.annotation, *([stmt.value] if stmt.value else [])]))
            elif isinstance(stmt, ast.If):
                root.append(stmt.test)
                self.module_level(stmt.body, root, top=False)
                self.module_level(stmt.orelse, root, top=False)
            elif isinstance(stmt, (ast.Try, getattr(ast, "TryStar", ast.Try))):
                self.module_level(stmt.body, root, top=False)
                for handler in stmt.handlers:
                    if handler.type is not None:
                        root.append(handler.type)
                    self.module_level(handler.body, root, top=False)
                self.module_level(stmt.orelse, root, top=False)
                self.module_level(stmt.finalbody, root, top=False)
            elif isinstance(stmt, (ast.With, ast.AsyncWith)):
                root.extend(stmt.items)
                self.module_level(stmt.body, root, top=False)
            else:
                root.append(stmt)


def _class_attribute(stmt: ast.stmt) -> str | None:
    """NAME of a class-body `NAME = value` / `NAME: T = value` (one plain target, not a dunder)."""
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
        name = stmt.targets[0].id
    elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None and isinstance(stmt.target, ast.Name):
        name = stmt.target.id
    else:
        return None
    return None if _dunder(name) else name


def _export_list(stmt: ast.stmt) -> list[str] | None:
    """The strings of `__all__ = [...]` / `__all__ += (...)` when the value is a literal list or
    tuple of strings; None for any other statement."""
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
        target, value = stmt.targets[0], stmt.value
    elif isinstance(stmt, (ast.AugAssign, ast.AnnAssign)):
        target, value = stmt.target, stmt.value
        if isinstance(stmt, ast.AugAssign) and not isinstance(stmt.op, ast.Add):
            return None
    else:
        return None
    if not (isinstance(target, ast.Name) and target.id == "__all__" and isinstance(value, (ast.List, ast.Tuple))):
        return None
    names = [e.value for e in value.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    return names if len(names) == len(value.elts) else None


def _dunder(name: str) -> bool:
    return name.startswith("__") and name.endswith("__")


def _token_refs(source: str) -> Refs:
    refs = Refs()
    for match in re.finditer(r"[A-Za-z_]\w*", source):
        refs.attrs.setdefault(match.group(), source.count("\n", 0, match.start()) + 1)
    return refs


def module_symbols(source: str, path: str, module: str, is_package: bool,
                   pure_calls: frozenset[str] = frozenset()) -> ModuleSymbols:
    """The symbols of one file. `pure_calls`: dotted callees an assignment value may call and
    still count as side-effect free (they are part of the cache key)."""
    b = _Builder(source, path, module, is_package, pure_calls)
    try:
        tree = ast.parse(source, filename=path)
    except (SyntaxError, ValueError) as exc:
        # Code this Python cannot parse still references things: every word of it counts, as an
        # attribute (resolved by name wherever it is defined).
        b.out.parse_error = f"{type(exc).__name__}: {exc}"
        b.out.root = _token_refs(source)
        return b.out
    b.quiet = quiet_nodes(tree)
    root: list[ast.AST] = []
    b.module_level(tree.body, root, top=True)
    b.out.root = b.collect(root)
    b.out.dynamic = b.dynamic
    b.out.lookup = b.lookup
    return b.out
