"""Per-file facts for the static checks: one ast parse (and one pyflakes pass) per file content.

Facts depend only on the file's bytes, its dotted module name and the internal package names, so
they are cached by content hash: the pruned tree re-parses only the files a codemod changed.
"""

from __future__ import annotations

import ast
import re
import warnings
from collections import Counter
from dataclasses import asdict, dataclass, field

from pyflakes import checker as flakes
from pyflakes import messages as flake_messages

from shrinker.graph.bindings import statement_bindings, target_names
from shrinker.checks.attributes import ClassFacts, class_facts, internal_aliases

# Exception names whose handler makes an import inside the `try` optional.
IMPORT_GUARDS = {"ImportError", "ModuleNotFoundError", "Exception", "BaseException"}
# pyflakes' F821-class messages: a name used that nothing defines.
UNDEFINED = (flake_messages.UndefinedName, flake_messages.UndefinedExport, flake_messages.UndefinedLocal)
DOTTED = re.compile(r"^[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+(?::[A-Za-z_][\w.]*)?$")


@dataclass
class ImportRef:
    line: int
    module: str  # absolute dotted name
    names: list[str] | None  # `from module import names`; None for `import module`
    guard: str  # "" | "try" (try/except ImportError) | "type_checking"
    in_function: bool
    # at module level and outside every if/try/loop/with/match: runs whenever the body gets that far
    certain: bool = False


@dataclass
class FileFacts:
    module: str
    syntax_error: str = ""  # "line: message"
    defined: list[str] = field(default_factory=list)
    dynamic: bool = False  # module-level __getattr__: any name may be imported from it
    star_imports: list[str] = field(default_factory=list)
    imports: list[ImportRef] = field(default_factory=list)
    strings: list[tuple[int, str]] = field(default_factory=list)  # dotted strings naming internal modules
    undefined: list[tuple[int, str, str]] = field(default_factory=list)  # line, pyflakes kind, name
    classes: list[ClassFacts] = field(default_factory=list)  # for the self_attributes check
    aliases: dict[str, list[str]] = field(default_factory=dict)  # name -> dotted targets in the tree
    class_uses: list[str] = field(default_factory=list)  # CapWords names read other than as a base
    attr_stores: list[str] = field(default_factory=list)  # attributes the file sets on anything

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> "FileFacts":
        data = dict(data)
        data["imports"] = [ImportRef(**i) for i in data["imports"]]
        data["strings"] = [tuple(s) for s in data["strings"]]
        data["undefined"] = [tuple(u) for u in data["undefined"]]
        data["classes"] = [ClassFacts.from_json(c) for c in data["classes"]]
        return cls(**data)


def extract(source: bytes, module: str, is_package: bool, internal: frozenset[str]) -> FileFacts:
    facts = FileFacts(module=module)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # SyntaxWarning for odd escapes: not our business
        try:
            tree = ast.parse(source, filename=module)
            compile(tree, module, "exec", dont_inherit=True)  # what ast.parse lets through (e.g. bad `return`)
        except SyntaxError as exc:
            facts.syntax_error = f"{exc.lineno or 0}: {exc.msg}"
            return facts
        except (ValueError, UnicodeDecodeError) as exc:  # null bytes, bad encoding
            facts.syntax_error = f"0: {exc}"
            return facts
    package = module if is_package else module.rpartition(".")[0]
    _collect_defined(tree, facts)
    _ImportCollector(facts, package).visit(tree)
    facts.classes, aliases, facts.attr_stores, facts.class_uses = class_facts(tree, module, package)
    facts.aliases = internal_aliases(aliases, internal)
    texts = module_texts(tree)
    for node in ast.walk(tree):
        text = node.value if isinstance(node, ast.Constant) else joined(node, texts) if isinstance(
            node, ast.JoinedStr) else None
        if isinstance(text, str) and DOTTED.match(text) and text.split(".", 1)[0] in internal:
            facts.strings.append((node.lineno, text))
    quiet = never_evaluated(tree)
    for msg in flakes.Checker(tree, filename=module).messages:
        if isinstance(msg, UNDEFINED) and (msg.lineno, msg.col) not in quiet:
            facts.undefined.append((msg.lineno, type(msg).__name__, str(msg.message_args[0])))
    return facts


def module_texts(tree: ast.Module) -> dict[str, str]:
    """Module-level names bound once, to a string (`_KDA_PACKAGE = "sglang.kernels.kda_kernels"`), by a
    statement of the module's own body; a name bound anywhere else at module level is no constant."""
    counts: Counter[str] = Counter()
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt) and not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            counts.update(statement_bindings(node))
        elif isinstance(node, ast.Global):
            counts.update(node.names)
    return {stmt.targets[0].id: stmt.value.value for stmt in tree.body
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)
            and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str)
            and counts[stmt.targets[0].id] == 1}


def joined(node: ast.JoinedStr, texts: dict[str, str], wildcard: str | None = None) -> str | None:
    """An f-string's text when every field is a module string constant (`f"{_KDA_PACKAGE}.sm120_fp8:f"`);
    with `wildcard`, any other field reads as it ("quant.{name}" → "quant.*"); else None."""
    out = []
    for part in node.values:
        if isinstance(part, ast.Constant):
            out.append(str(part.value))
        elif (isinstance(part, ast.FormattedValue) and isinstance(part.value, ast.Name) and part.value.id in texts
              and part.conversion == -1 and part.format_spec is None):
            out.append(texts[part.value.id])
        elif wildcard is not None:
            out.append(wildcard)
        else:
            return None
    return "".join(out)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def never_evaluated(tree: ast.Module) -> set[tuple[int, int]]:
    """(line, col) of names Python never evaluates: annotations under `from __future__ import
    annotations` (any annotation in a function body, with or without it), and `if TYPE_CHECKING:`
    bodies, and string annotations anywhere. The codemods leave uses of a removed TYPE_CHECKING-only import there (they cannot fail);
    pyflakes would still call them undefined."""
    future = any(isinstance(s, ast.ImportFrom) and s.module == "__future__" and any(a.name == "annotations"
                 for a in s.names) for s in tree.body)
    roots: list[ast.AST] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            roots.extend(node.body)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if future:
                roots.extend(a.annotation for a in (*node.args.posonlyargs, *node.args.args,
                                                    *node.args.kwonlyargs, node.args.vararg, node.args.kwarg)
                             if a is not None and a.annotation is not None)
                if node.returns is not None:
                    roots.append(node.returns)
            for inner in ast.walk(node):
                if isinstance(inner, ast.AnnAssign) and inner is not node:
                    roots.append(inner.annotation)
        if future and isinstance(node, ast.AnnAssign):
            roots.append(node.annotation)
        # a string annotation is never evaluated (pyflakes reports the names in it at the string),
        # nor is a string inside one (`-> Tuple[Tensor, "HcCoefficients"]`: a forward reference)
        annotation = getattr(node, "annotation", None) if isinstance(node, (ast.AnnAssign, ast.arg)) else None
        for ann in (annotation, getattr(node, "returns", None)):
            if ann is not None:
                roots += [s for s in ast.walk(ann) if isinstance(s, ast.Constant) and isinstance(s.value, str)]
    return {(n.lineno, n.col_offset) for root in roots for n in ast.walk(root) if isinstance(n, (ast.Name, ast.Constant))}


def _collect_defined(tree: ast.Module, facts: FileFacts) -> None:
    names: set[str] = set()

    def visit_block(stmts: list[ast.stmt]) -> None:
        for stmt in stmts:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(stmt.name)
                if stmt.name == "__getattr__" and not isinstance(stmt, ast.ClassDef):
                    facts.dynamic = True
                continue
            names.update(statement_bindings(stmt))  # a star import is resolved across modules by the checks
            for node in ast.walk(stmt):  # walrus targets anywhere in module-level code
                if isinstance(node, ast.NamedExpr):
                    names.update(target_names(node.target))
            for attr in ("body", "orelse", "finalbody"):
                block = getattr(stmt, attr, None)
                if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                    visit_block(block)
            for h in getattr(stmt, "handlers", []) or []:
                visit_block(h.body)
            for case in getattr(stmt, "cases", []) or []:
                visit_block(case.body)

    visit_block(tree.body)
    # `global x` in a function makes x a module name once the function runs.
    for node in ast.walk(tree):
        if isinstance(node, ast.Global):
            names.update(node.names)
        elif (isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets)
              and isinstance(node.value, (ast.List, ast.Tuple))):
            names.update(e.value for e in node.value.elts if isinstance(e, ast.Constant) and isinstance(e.value, str))
    facts.defined = sorted(names)


def _catches_import_error(handler: ast.ExceptHandler) -> bool:
    if handler.type is None:
        return True
    types = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    for t in types:
        name = t.attr if isinstance(t, ast.Attribute) else getattr(t, "id", "")
        if name in IMPORT_GUARDS:
            return True
    return False


class _ImportCollector(ast.NodeVisitor):
    def __init__(self, facts: FileFacts, package: str) -> None:
        self.facts = facts
        self.package = package
        self.guard = ""
        self.depth = 0
        self.branches = 0  # compound statements around the import (if/try/for/while/with/match)

    def _with_guard(self, guard: str, nodes: list[ast.AST]) -> None:
        saved = self.guard
        self.guard = self.guard or guard
        for n in nodes:
            self.visit(n)
        self.guard = saved

    def visit_Try(self, node: ast.Try) -> None:
        self.branches += 1
        guarded = any(_catches_import_error(h) for h in node.handlers)
        self._with_guard("try" if guarded else "", node.body)
        for n in [*node.handlers, *node.orelse, *node.finalbody]:
            self.visit(n)
        self.branches -= 1

    visit_TryStar = visit_Try

    def visit_If(self, node: ast.If) -> None:
        self.visit(node.test)
        self.branches += 1
        self._with_guard("type_checking" if _is_type_checking(node.test) else "", node.body)
        for n in node.orelse:
            self.visit(n)
        self.branches -= 1

    def _branch(self, node: ast.AST) -> None:
        self.branches += 1
        self.generic_visit(node)
        self.branches -= 1

    visit_For = visit_AsyncFor = visit_While = visit_With = visit_AsyncWith = visit_Match = _branch

    def _ref(self, line: int, module: str, names: list[str] | None) -> ImportRef:
        certain = self.depth == 0 and self.branches == 0
        return ImportRef(line, module, names, self.guard, self.depth > 0, certain)

    def _function(self, node: ast.AST) -> None:
        self.depth += 1
        self.generic_visit(node)
        self.depth -= 1

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = _function

    def visit_Import(self, node: ast.Import) -> None:
        for a in node.names:
            self.facts.imports.append(self._ref(node.lineno, a.name, None))

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level:
            base = self.package.split(".")
            if node.level > 1:
                base = base[: len(base) - (node.level - 1)]
            module = ".".join([*base, node.module] if node.module else base)
        else:
            module = node.module or ""
        names = [a.name for a in node.names]
        if names == ["*"]:
            if self.depth == 0:
                self.facts.star_imports.append(module)
            names = []
        self.facts.imports.append(self._ref(node.lineno, module, names))
