"""One .py file -> what it says about kernels, read with `ast`: the kernel manifest's Python facts.

  ops       `torch.ops.<namespace>.<op>` attribute chains (any namespace; the plan picks its own);
  imports   `from X import a, b` / `import X` with the names bound (to follow wrappers and extensions);
  attrs     `<name>.<attr>` where <name> is bound by an import in this file (`sgl_kernel.rmsnorm`,
            `spatial.get_sm_available`): the attribute read on a module object;
  strings   string constants, and f-strings as globs (`f"deepseek_v4/c{ratio}_v2.cuh"` ->
            `deepseek_v4/c*_v2.cuh`), that may name a JIT source; with the first string argument of the
            `load_jit(...)` call they stand in, if any (the JIT module's name);
  triton    the module defines a `@triton.jit` (or `@triton.autotune` ...) function.

Every fact carries where it stands (guards, enclosing function, TYPE_CHECKING, registry keys), as the
graph's import records do, so the planner judges each like an import (`record_dead`). Top-level
functions get their facts apart (`defs`), module-level code its own (`module_code`): a wrapper
package's functions are kept one by one. Facts hold no rule decision.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

from shrinker.graph.bindings import dotted
from shrinker.graph.parse import resolve_relative

KERNEL_REFS_VERSION = "2"
_SOURCE_LIKE = re.compile(r"[\w./*-]+\.[A-Za-z]{1,4}\Z")


@dataclass
class Fact:
    kind: str  # op | import | attr | string
    target: str  # op: namespace; import: absolute module; attr: module bound to the name; string: text
    name: str  # op name, imported name ("" for `import X`), attribute, or the load_jit name for a string
    line: int
    guards: list[str] = field(default_factory=list)
    function: str = ""
    type_checking: bool = False
    registry_keys: list[list[str]] = field(default_factory=list)
    bound: str = ""  # import: the local name it binds

    def record(self) -> dict:
        """The shape reach.record_dead judges."""
        return {"type_checking": self.type_checking, "guards": self.guards, "function": self.function,
                "registry_keys": self.registry_keys, "scope": "function" if self.function else "module",
                "names": [self.name] if self.kind == "import" and self.name else [], "target": self.target,
                "line": self.line}


@dataclass
class DefFacts:
    """One top-level function (or class): its own facts and the bare names it reads."""

    line: int
    facts: list[Fact] = field(default_factory=list)
    names: list[str] = field(default_factory=list)


@dataclass
class KernelFacts:
    module: str
    path: str
    module_code: list[Fact] = field(default_factory=list)
    module_names: list[str] = field(default_factory=list)  # bare names module-level code reads
    defs: dict[str, DefFacts] = field(default_factory=dict)
    aliases: dict[str, str] = field(default_factory=dict)  # module-level `from X import n as a`: a -> "X:n"
    stars: list[str] = field(default_factory=list)  # module-level `from X import *`
    assigned: list[str] = field(default_factory=list)  # names module-level assignments bind (`a = b`)
    triton: bool = False
    parse_error: str = ""

    def all_facts(self) -> list[Fact]:
        return [*self.module_code, *(f for d in self.defs.values() for f in d.facts)]


def _glob(node: ast.JoinedStr) -> str:
    return "".join(p.value if isinstance(p, ast.Constant) and isinstance(p.value, str) else "*"
                   for p in node.values)


class _Walker(ast.NodeVisitor):
    def __init__(self, module: str, is_package: bool, out: KernelFacts, packages: frozenset[str]):
        self.module, self.is_package, self.out = module, is_package, out
        self.packages = packages
        self.guards: list[str] = []
        self.function = ""
        self.type_checking = False
        self.keys: list[list[str]] = []
        self.sink: list[Fact] = out.module_code
        self.names: set[str] = set()
        self.bound: dict[str, str] = {}  # local name -> module it holds (any import in the file)
        self.loader: str | None = None  # the load_jit name while inside such a call

    def _fact(self, kind: str, target: str, name: str, line: int, bound: str = "") -> None:
        self.sink.append(Fact(kind, target, name, line, list(self.guards), self.function, self.type_checking,
                              [list(k) for k in self.keys], bound))

    # -- structure ------------------------------------------------------------------------------
    def visit_If(self, node: ast.If) -> None:
        self.visit(node.test)
        if dotted(node.test).rsplit(".", 1)[-1] == "TYPE_CHECKING":
            saved, self.type_checking = self.type_checking, True
            for stmt in node.body:
                self.visit(stmt)
            self.type_checking = saved
        else:
            test = ast.unparse(node.test)
            self.guards.append(test)
            for stmt in node.body:
                self.visit(stmt)
            self.guards[-1] = f"not ({test})"
            for stmt in node.orelse:
                self.visit(stmt)
            self.guards.pop()
            return
        self.guards.append(f"not ({ast.unparse(node.test)})")
        for stmt in node.orelse:
            self.visit(stmt)
        self.guards.pop()

    def _def(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> None:
        keys = []
        for deco in node.decorator_list:
            self.visit(deco)
            name = dotted(deco.func if isinstance(deco, ast.Call) else deco)
            if name.rsplit(".", 1)[-1] in ("jit", "autotune", "heuristics") and name.split(".")[0] == "triton":
                self.out.triton = True
            if isinstance(deco, ast.Call) and deco.args and isinstance(deco.args[0], ast.Constant) \
                    and isinstance(deco.args[0].value, str):
                keys.append([name.rsplit(".", 1)[-1], deco.args[0].value])
        top = not self.function and self.sink is self.out.module_code  # at module level, through ifs
        saved = (self.function, self.keys, self.sink, self.names)
        self.function = f"{self.function}.{node.name}" if self.function else node.name
        self.keys = [*self.keys, *keys]
        if top:
            entry = self.out.defs.setdefault(node.name, DefFacts(node.lineno))
            self.sink, self.names = entry.facts, set(entry.names)
        body = node.body if isinstance(node, ast.ClassDef) else [*node.args.defaults, *node.args.kw_defaults,
                                                                  *node.body]
        if isinstance(node, ast.ClassDef):
            for base in [*node.bases, *node.keywords]:
                self.visit(base)
        for stmt in body:
            if stmt is not None:
                self.visit(stmt)
        if top:
            self.out.defs[node.name].names = sorted(self.names)
        self.function, self.keys, self.sink, self.names = saved

    visit_FunctionDef = visit_AsyncFunctionDef = visit_ClassDef = _def  # type: ignore[assignment]

    def _assigned(self, targets: list[ast.expr]) -> None:
        if self.sink is self.out.module_code and not self.function:
            for target in targets:
                for node in ast.walk(target):
                    if isinstance(node, ast.Name) and node.id not in self.out.assigned:
                        self.out.assigned.append(node.id)

    def visit_Assign(self, node: ast.Assign) -> None:
        self._assigned(node.targets)
        self.generic_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:
            self._assigned([node.target])
        self.generic_visit(node)

    # -- imports --------------------------------------------------------------------------------
    def _ours(self, module: str) -> bool:
        return module.split(".")[0] in self.packages

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            bound = alias.asname or alias.name.split(".")[0]
            self.bound[bound] = alias.name if alias.asname else alias.name.split(".")[0]
            if self._ours(alias.name):
                self._fact("import", alias.name, "", node.lineno, bound)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        target = resolve_relative(self.module, self.is_package, node.level, node.module or "")
        for alias in node.names:
            bound = alias.asname or alias.name
            if alias.name == "*":
                if self.sink is self.out.module_code and not self.function:
                    self.out.stars.append(target)
            else:
                self.bound[bound] = f"{target}.{alias.name}"
                if self.sink is self.out.module_code and not self.function:
                    self.out.aliases[bound] = f"{target}:{alias.name}"
            if self._ours(target):
                self._fact("import", target, alias.name, node.lineno, bound)

    # -- reads ----------------------------------------------------------------------------------
    def visit_Name(self, node: ast.Name) -> None:
        if not isinstance(node.ctx, ast.Store):
            self.names.add(node.id)
            if self.sink is self.out.module_code:
                self.out.module_names.append(node.id)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        chain = dotted(node)
        parts = chain.split(".") if chain else []
        if len(parts) == 4 and parts[:2] == ["torch", "ops"]:
            self._fact("op", parts[2], parts[3], node.lineno)
        elif len(parts) == 2 and parts[0] in self.bound and self._ours(self.bound[parts[0]]):
            self._fact("attr", self.bound[parts[0]], parts[1], node.lineno)
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        name = dotted(node.func).rsplit(".", 1)[-1]
        if name == "load_jit":
            first = node.args[0] if node.args and not isinstance(node.args[0], ast.Starred) else None
            label = first.value if isinstance(first, ast.Constant) and isinstance(first.value, str) else \
                _glob(first) if isinstance(first, ast.JoinedStr) else ast.unparse(first)[:60] if first else "?"
            saved, self.loader = self.loader, label
            self.generic_visit(node)
            self.loader = saved
            return
        self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str) and len(node.value) < 300 and _SOURCE_LIKE.match(node.value):
            self._fact("string", node.value, self.loader or "", node.lineno)

    def visit_JoinedStr(self, node: ast.JoinedStr) -> None:
        glob = _glob(node)
        if _SOURCE_LIKE.match(glob) and "." in glob.rsplit("/", 1)[-1]:
            self._fact("string", glob, self.loader or "", node.lineno)
        for part in node.values:
            if not isinstance(part, ast.Constant):
                self.visit(part)


def kernel_facts(source: str, path: str, module: str, is_package: bool,
                 packages: frozenset[str] = frozenset()) -> KernelFacts:
    """`packages`: top-level packages whose imports and module attributes are recorded (the kernel
    packages and the external kernel libraries; part of the cache key)."""
    out = KernelFacts(module=module, path=path)
    try:
        tree = ast.parse(source, filename=path)
    except (SyntaxError, ValueError) as exc:
        out.parse_error = f"{type(exc).__name__}: {exc}"
        return out
    _Walker(module, is_package, out, packages).visit(tree)
    out.module_names = sorted(set(out.module_names))
    return out
