"""`self.X` read in a method of class C while no code of the tree ever sets X on the instance (an
AttributeError waiting to happen: a codemod removed `self.X = ...` but left a read of it).

Per file (cached with the other facts): every class with its bases as dotted names, what it sets
(`self.X = / += / : T =`, `for`/`with ... as self.X`, class-body names: attributes, methods, properties,
nested classes, annotations (dataclass / NamedTuple fields), `__slots__`), whether it is dynamic
(`setattr(`, `vars(`, `__dict__`, `__setattr__`, `__getattr__` anywhere in it), and the `self.X` reads
that neither the class itself nor any code of its file sets (`<anything>.X = ...`, `setattr(obj, "X",
...)`) nor guards (`hasattr(obj, "X")`, `getattr(obj, "X", default)`, a read inside `try: ... except
AttributeError`); and the class names the file reads other than as a base, an isinstance target, an
annotation or `Base.method(self, ...)` (`class_uses`: where an instance may be made).

Across the tree (`unset_attributes`): an instance of D runs C's methods when D is C or a subclass of it.
For each such D that the tree names (in code or a registry string: a mixin only code outside the tree
mixes in is never made here), that is not abstract, whose MRO is all classes of the tree (a base that
resolves to none, e.g. torch.nn.Module, Enum or anything computed, skips D) and none of them dynamic,
a read of X that no class of D's MRO sets, nor any code of D's file, is a finding. Only bases that hold
no instance state are known without the tree: object, builtin types and exceptions, ABC, Generic,
Protocol. A subclass the pruning removes cannot make a kept instance fail, and it takes only its own
findings with it. Findings are keyed (file, class, attribute), whichever instances lack it.
"""

from __future__ import annotations

import abc
import ast
import builtins
import typing
from dataclasses import dataclass, field

from shrinker.graph.bindings import statement_bindings

DYNAMIC_CALLS = {"setattr", "vars", "__setattr__"}
DYNAMIC_NAMES = {"__dict__", "__setattr__"}
DYNAMIC_METHODS = {"__getattr__", "__getattribute__"}
# bases outside the tree that hold no instance state: their attributes are dir() of the class
KNOWN_EXTERNAL = {"abc.ABC": abc.ABC, "typing.Generic": typing.Generic, "typing.Protocol": typing.Protocol,
                  "typing_extensions.Generic": typing.Generic, "typing_extensions.Protocol": typing.Protocol}
KNOWN_METACLASSES = {"abc.ABCMeta", "builtins.type"}


@dataclass
class ClassFacts:
    name: str  # qualified within the module: Outer.Inner; a class in a function: f.<locals>.C
    line: int
    bases: list[str] = field(default_factory=list)  # dotted (module.Name); "" for one no name gives
    dynamic: bool = False
    sets: list[str] = field(default_factory=list)
    abstract: list[str] = field(default_factory=list)  # @abstractmethod defs: no instance of it alone
    reads: list[tuple[int, str]] = field(default_factory=list)  # first line of each unset self.X read

    @classmethod
    def from_json(cls, data: dict) -> "ClassFacts":
        return cls(**{**data, "reads": [tuple(r) for r in data["reads"]]})


def _children(node: ast.AST) -> list[ast.AST]:
    out = []
    for name in node._fields:
        value = getattr(node, name, None)
        if isinstance(value, ast.AST):
            out.append(value)
        elif isinstance(value, list):
            out += [v for v in value if isinstance(v, ast.AST)]
    return out


def _walk(node: ast.AST):
    """ast.walk in pre-order (a node before everything under it), without ast.walk's overhead."""
    todo = [node]
    while todo:
        node = todo.pop()
        yield node
        todo += reversed(_children(node))


def _dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = _dotted(node.value)
        return f"{inner}.{node.attr}" if inner else None
    return None


def _absolute(module: str, package: str, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = package.split(".")
    if node.level > 1:
        base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def _blocks(stmt: ast.stmt) -> list[list[ast.stmt]]:
    """The statement lists nested in a compound statement that run in the same scope."""
    out = [getattr(stmt, a) for a in ("body", "orelse", "finalbody")
           if isinstance(getattr(stmt, a, None), list) and getattr(stmt, a)
           and isinstance(getattr(stmt, a)[0], ast.stmt)]
    out += [h.body for h in getattr(stmt, "handlers", []) or []]
    out += [c.body for c in getattr(stmt, "cases", []) or []]
    return out


def _scope_statements(body: list[ast.stmt]):
    """Every statement of a module or class body, into if/try/for/with/match, not into defs."""
    for stmt in body:
        yield stmt
        if not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            for block in _blocks(stmt):
                yield from _scope_statements(block)


def module_aliases(tree: ast.Module, module: str, package: str, nodes: list[ast.AST] | None = None
                   ) -> dict[str, list[str]]:
    """Module-level names bound by an import or `A = b.C`: name -> the dotted names it may stand for."""
    out: dict[str, list[str]] = {}

    def add(name: str, target: str) -> None:
        if target and target not in out.setdefault(name, []):
            out[name].append(target)

    assigns = []
    for stmt in _scope_statements(tree.body):
        if isinstance(stmt, ast.Import):
            for a in stmt.names:
                add(a.asname, a.name) if a.asname else add(a.name.split(".")[0], a.name.split(".")[0])
        elif isinstance(stmt, ast.ImportFrom):
            source = _absolute(module, package, stmt)
            for a in stmt.names:
                if a.name != "*":
                    add(a.asname or a.name, f"{source}.{a.name}")
        elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            value = _dotted(stmt.value)
            if value:
                assigns.append((stmt.targets[0].id, value))
    for name, value in assigns:
        for target in _resolve_local(value, module, out):
            add(name, target)
    bound_here = set(out)
    for node in _walk(tree) if nodes is None else nodes:  # imports in functions: what names there stand for
        if isinstance(node, ast.ImportFrom):
            source = _absolute(module, package, node)
            for a in node.names:
                if a.name != "*" and (a.asname or a.name) not in bound_here:
                    add(a.asname or a.name, f"{source}.{a.name}")
    return out


def internal_aliases(aliases: dict[str, list[str]], internal: frozenset[str]) -> dict[str, list[str]]:
    """The aliases the checks need (what the cache keeps): targets outside the tree become "" (resolves to
    nothing), names that only stand for such targets are left out (the module defines them: not a class
    of the tree either way)."""
    return {name: [t if t.split(".")[0] in internal else "" for t in targets]
            for name, targets in aliases.items() if any(t.split(".")[0] in internal for t in targets)}


def _resolve_local(dotted: str, module: str, aliases: dict[str, list[str]]) -> list[str]:
    """A dotted name as written in `module` -> absolute dotted names (a name the module does not
    import stays `module.name`: its own class, a star import's name or a builtin)."""
    first, _, rest = dotted.partition(".")
    targets = aliases.get(first) or [f"{module}.{first}"]
    return [f"{t}.{rest}" if rest else t for t in targets]


def _first_param(fn: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> str | None:
    args = [*fn.args.posonlyargs, *fn.args.args]
    return args[0].arg if args else None


def _params(fn: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> set[str]:
    a = fn.args
    return {x.arg for x in (*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg) if x is not None}


def _decorators(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    return {(_dotted(d.func if isinstance(d, ast.Call) else d) or "").rpartition(".")[2] for d in fn.decorator_list}


def _catches_attribute_error(handler: ast.ExceptHandler) -> bool:
    if handler.type is None:
        return True
    types = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return any((_dotted(t) or "").rpartition(".")[2] in ("AttributeError", "Exception", "BaseException")
               for t in types)


def _reads(fn: ast.FunctionDef | ast.AsyncFunctionDef, receiver: str) -> list[tuple[int, str]]:
    """`receiver.X` loads in a method body, its nested functions that do not rebind the receiver and
    its comprehensions; not in nested classes, not inside `try: ... except AttributeError`."""
    out: list[tuple[int, str]] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.ClassDef):
            return
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) and node is not fn:
            if receiver in _params(node):
                return
        if isinstance(node, ast.Try) or type(node).__name__ == "TryStar":
            if any(_catches_attribute_error(h) for h in node.handlers):
                for child in [*node.handlers, *node.orelse, *node.finalbody]:
                    visit(child)
                return
        if (isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load)
                and isinstance(node.value, ast.Name) and node.value.id == receiver):
            out.append((node.lineno, node.attr))
        for child in _children(node):
            visit(child)

    for stmt in fn.body:
        visit(stmt)
    return out


def _class_facts(node: ast.ClassDef, qualname: str, module: str, aliases: dict[str, list[str]],
                 file_sets: set[str]) -> ClassFacts:
    facts = ClassFacts(name=qualname, line=node.lineno)
    for base in node.bases:
        expr = base.value if isinstance(base, ast.Subscript) else base
        dotted = _dotted(expr)
        if dotted is None:
            facts.bases.append("")
            continue
        facts.bases.extend(_resolve_local(dotted, module, aliases))
    for kw in node.keywords:
        if kw.arg == "metaclass":
            dotted = _dotted(kw.value)
            targets = _resolve_local(dotted, module, aliases) if dotted else [""]
            if not all(t in KNOWN_METACLASSES or t == f"{module}.type" for t in targets):
                facts.bases.append("")  # a metaclass may give instances anything
    sets: set[str] = set()
    methods: list[tuple[ast.FunctionDef | ast.AsyncFunctionDef, str]] = []
    for stmt in _scope_statements(node.body):
        sets.update(statement_bindings(stmt))  # class attributes: what the body binds
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if stmt.name in DYNAMIC_METHODS:
                facts.dynamic = True
            if _decorators(stmt) & {"abstractmethod", "abstractproperty"}:
                facts.abstract.append(stmt.name)
            receiver = _first_param(stmt)
            if receiver and not _decorators(stmt) & {"staticmethod", "classmethod"}:
                methods.append((stmt, receiver))
        elif isinstance(stmt, ast.Assign):
            for t in stmt.targets:
                if isinstance(t, ast.Name) and t.id == "__slots__":  # each slot is an attribute too
                    values = stmt.value.elts if isinstance(stmt.value, (ast.Tuple, ast.List, ast.Set)) else [stmt.value]
                    sets.update(v.value for v in values if isinstance(v, ast.Constant) and isinstance(v.value, str))
    receivers = {"self", "cls", node.name}
    stores: list[ast.Attribute] = []
    for inner in _walk(node):
        if isinstance(inner, ast.Attribute):
            if isinstance(inner.ctx, (ast.Store, ast.Del)) and isinstance(inner.value, ast.Name):
                stores.append(inner)
            if inner.attr in DYNAMIC_NAMES:
                facts.dynamic = True
        elif isinstance(inner, ast.Name):
            if inner.id in DYNAMIC_CALLS or inner.id in DYNAMIC_NAMES:
                facts.dynamic = True
        elif isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            first = _first_param(inner)
            if first:
                receivers.add(first)
    sets.update(s.attr for s in stores if s.value.id in receivers)
    facts.sets = sorted(sets)
    if facts.dynamic:
        return facts
    first_read: dict[str, int] = {}
    for fn, receiver in methods:
        for line, attr in _reads(fn, receiver):
            if attr.startswith("__") and attr.endswith("__") or attr in sets or attr in file_sets:
                continue
            first_read[attr] = min(line, first_read.get(attr, line))
    facts.reads = sorted((line, attr) for attr, line in first_read.items())
    return facts


def file_sets(nodes: list[ast.AST]) -> set[str]:
    """Attributes any code of the file sets on anything, or asks for with a fallback."""
    out: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, (ast.Store, ast.Del)):
            out.add(node.attr)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and len(node.args) >= 2:
            name = node.args[1]
            if not (isinstance(name, ast.Constant) and isinstance(name.value, str)):
                continue
            if node.func.id in ("setattr", "hasattr") or (node.func.id == "getattr" and len(node.args) >= 3):
                out.add(name.value)
    return out


def class_uses(tree: ast.Module, nodes: list[ast.AST] | None = None) -> list[str]:
    """Dotted names, as written, of the CapWords names the file reads (`C(...)`, `mod.C`, `{"x": C}`)
    other than as a class's base, an isinstance/issubclass target, an annotation or subscript (a type),
    `super(C, self)`, `Base.method(self, ...)`, `C.CONSTANT` or `Alias = C`: where an instance of a class
    may be made. One breadth-first pass: what skips a node is always met before the node."""
    skip: set[int] = set()
    called: set[int] = set()

    def mark(node: ast.AST | None) -> None:
        if node is not None:
            skip.update(id(n) for n in _walk(node))

    for stmt in _scope_statements(tree.body):  # `Alias = C`: the aliases resolve it where it is used
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name) \
                and _dotted(stmt.value):
            mark(stmt.value)
    out: set[str] = set()
    for node in _walk(tree) if nodes is None else nodes:
        if isinstance(node, (ast.Name, ast.Attribute)):
            if isinstance(node, ast.Attribute) and id(node) not in called:
                skip.add(id(node.value))  # `C.CONSTANT`: a class attribute read (`C.make(...)` may make one)
            if id(node) in skip or not isinstance(node.ctx, ast.Load):
                continue
            leaf = node.id if isinstance(node, ast.Name) else node.attr
            if leaf.lstrip("_")[:1].isupper():
                out.add(_dotted(node) or leaf)
        elif isinstance(node, ast.Call):
            called.add(id(node.func))
            func = _dotted(node.func)
            if func in ("isinstance", "issubclass") and len(node.args) == 2:
                mark(node.args[1])
            elif func == "super":
                for arg in node.args:
                    mark(arg)
            elif (isinstance(node.func, ast.Attribute) and node.args and isinstance(node.args[0], ast.Name)
                  and node.args[0].id == "self"):
                mark(node.func.value)
        elif isinstance(node, ast.ClassDef):
            for b in node.bases:
                mark(b)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            a = node.args
            for arg in (*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg):
                if arg is not None:
                    mark(arg.annotation)
            mark(node.returns)
        elif isinstance(node, ast.AnnAssign):
            mark(node.annotation)
        elif isinstance(node, ast.Subscript):  # `Optional[C]`, `Callable[..., C]`: a type, not an instance
            mark(node.slice)
    return sorted(out)


def class_facts(tree: ast.Module, module: str, package: str
                ) -> tuple[list[ClassFacts], dict[str, list[str]], list[str], list[str]]:
    """Every class of a parsed file (module-level, nested and in functions), the module's aliases, the
    attributes the file sets on anything and the class names it uses (`class_uses`)."""
    nodes = list(_walk(tree))
    aliases = module_aliases(tree, module, package, nodes)
    stored = file_sets(nodes)
    out: list[ClassFacts] = []

    def walk(node: ast.AST, prefix: str) -> None:
        for child in _children(node):
            if isinstance(child, ast.ClassDef):
                qual = f"{prefix}{child.name}"
                out.append(_class_facts(child, qual, module, aliases, stored))
                walk(child, f"{qual}.")
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                walk(child, f"{prefix}{child.name}.<locals>.")
            elif isinstance(child, (ast.stmt, ast.ExceptHandler, ast.match_case)):
                walk(child, prefix)  # a class statement is never inside an expression

    walk(tree, "")
    return out, aliases, sorted(stored), class_uses(tree, nodes)


# --- across the tree -------------------------------------------------------------------------------


def _known_external(dotted: str) -> set[str] | None:
    """Attributes of a base outside the tree that holds no instance state; None for any other."""
    if dotted in KNOWN_EXTERNAL:
        return set(dir(KNOWN_EXTERNAL[dotted]))
    module, _, name = dotted.rpartition(".")
    if module == "builtins" and isinstance(getattr(builtins, name, None), type):
        return set(dir(getattr(builtins, name)))
    return None


class _Classes:
    def __init__(self, facts: dict) -> None:
        self.facts = facts
        self.by_name: dict[str, list[tuple[str, ClassFacts]]] = {}
        for module, f in facts.items():
            for c in f.classes:
                if "<locals>" not in c.name:
                    self.by_name.setdefault(f"{module}.{c.name}", []).append((module, c))
        self._bases: dict[int, tuple[list, set[str], bool]] = {}
        self._closure: dict[int, tuple[set[str], set[str]] | None] = {}
        self._lookups: dict[str, tuple[list, set[str]] | None] = {}

    def lookup(self, dotted: str, seen: frozenset[str] = frozenset()) -> tuple[list, set[str]] | None:
        """A base's dotted name -> (tree classes it may be, attributes known from outside the tree),
        or None when it may be anything else."""
        if dotted in seen or not dotted:
            return None
        if not seen and dotted in self._lookups:
            return self._lookups[dotted]
        found = self._lookup(dotted, seen | {dotted})
        if not seen:
            self._lookups[dotted] = found
        return found

    def _lookup(self, dotted: str, seen: frozenset[str]) -> tuple[list, set[str]] | None:
        if dotted in self.by_name:
            return self.by_name[dotted], set()
        known = _known_external(dotted)
        if known is not None:
            return [], known
        parts = dotted.split(".")
        for i in range(len(parts) - 1, 0, -1):
            module = ".".join(parts[:i])
            f = self.facts.get(module)
            if f is None:
                continue
            name, rest = parts[i], parts[i + 1:]
            if name in f.aliases:  # imported or assigned: each thing it may stand for must resolve
                found = [self.lookup(".".join([t, *rest]), seen) for t in f.aliases[name]]
            elif name in f.defined:
                return None  # bound here, but not as a class of the tree
            elif any(star not in self.facts for star in f.star_imports):
                return None  # a star import from outside the tree may bind it
            else:
                found = [self.lookup(".".join([star, name, *rest]), seen) for star in f.star_imports]
                found = [x for x in found if x is not None]
                if not found and not rest and _known_external(f"builtins.{name}") is not None:
                    found = [([], _known_external(f"builtins.{name}"))]
            if not found or any(x is None for x in found):
                return None
            return [c for x in found for c in x[0]], {a for x in found for a in x[1]}
        return None

    def parents(self, c: ClassFacts) -> tuple[list, set[str], bool]:
        """(tree classes its bases may be, attributes known from outside, every base resolved?)"""
        if id(c) not in self._bases:
            classes: list = []
            attrs: set[str] = set()
            complete = True
            for base in c.bases:
                found = self.lookup(base)
                if found is None:
                    complete = False
                    continue
                classes += found[0]
                attrs |= found[1]
            self._bases[id(c)] = (classes, attrs, complete)
        return self._bases[id(c)]

    def closure(self, c: ClassFacts, stack: frozenset[int] = frozenset()) -> tuple[set[str], set[str]] | None:
        """(what c and its MRO set, the abstract methods none of them implements), or None when c or an
        ancestor is dynamic or not of the tree."""
        if id(c) in self._closure:
            return self._closure[id(c)]
        if id(c) in stack:
            return None  # a cycle: names resolved to the wrong class
        parents = self.parents(c)
        out: tuple[set[str], set[str]] | None = None
        if parents[2] and not c.dynamic:
            sets, abstract = set(c.sets) | parents[1], set(c.abstract)
            concrete = set(c.sets) - abstract
            for _, p in parents[0]:
                inherited = self.closure(p, stack | {id(c)})
                if inherited is None:
                    sets = None
                    break
                sets |= inherited[0]
                abstract |= inherited[1]
            out = None if sets is None else (sets, abstract - concrete)
        self._closure[id(c)] = out
        return out


def unset_attributes(facts: dict) -> list[tuple[str, int, str, str, list[str]]]:
    """(module, line, class C, attribute X, instance classes) for each `self.X` read in a method of C
    that some instance made in the tree (of C or a subclass) never gets X."""
    classes = _Classes(facts)
    children: dict[int, list[ClassFacts]] = {}
    where: dict[int, str] = {}
    for module, f in facts.items():
        for c in f.classes:
            where[id(c)] = module
            for _, p in classes.parents(c)[0]:
                children.setdefault(id(p), []).append(c)
    by_leaf: dict[str, list[ClassFacts]] = {}
    for f in facts.values():
        for c in f.classes:
            by_leaf.setdefault(c.name.rpartition(".")[2], []).append(c)
    named: set[int] = set()
    for module, f in facts.items():
        for use in f.class_uses:
            found = [classes.lookup(t) for t in _resolve_local(use, module, f.aliases)]
            hits = [c for x in found if x is not None for _, c in x[0]]
            first = use.partition(".")[0]
            if not hits and first not in f.aliases and first not in f.defined:
                hits = by_leaf.get(use.rpartition(".")[2], [])  # a star import's, a local import's: by name
            named.update(id(c) for c in hits)
        for _, text in f.strings:  # a registry string ("pkg.mod:Class") makes one by name
            found = classes.lookup(text.replace(":", "."))
            named.update(id(c) for _, c in (found[0] if found else []))
    out = []
    for module, f in sorted(facts.items()):
        for c in f.classes:
            if not c.reads:
                continue
            missing: dict[str, list[str]] = {}  # attribute -> instance classes that lack it
            todo, seen = [c], set()
            while todo:
                d = todo.pop()
                if id(d) in seen:
                    continue
                seen.add(id(d))
                todo += children.get(id(d), [])
                known = classes.closure(d) if id(d) in named else None
                if known is None or known[1]:
                    continue  # never made in the tree, abstract, or X may come from outside the tree
                instance = d.name if d is c else f"{where[id(d)]}.{d.name}"
                configured = set(facts[where[id(d)]].attr_stores) if d is not c else set()
                for _, attr in c.reads:
                    if attr not in known[0] and attr not in configured:
                        missing.setdefault(attr, []).append(instance)
            out += [(module, line, c.name, attr, sorted(missing[attr])) for line, attr in c.reads if attr in missing]
    return out
