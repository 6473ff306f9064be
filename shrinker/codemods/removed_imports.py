"""Remove imports of modules the plan removes, and say where a name they bound is still used.

SGLang shapes handled (module-level, in functions, under `if TYPE_CHECKING:`, in `try/except`):
  - `import sglang.srt.hardware_backend.npu.graph_runner` / `import a.b as c`
  - `from sglang.srt.multimodal.processors.base_processor import BaseMultimodalProcessor`
  - relative imports, resolved against the file's package: `from .npu_ops import x`, `from .. import y`
  - `from sglang.srt.layers.moe.moe_runner import aiter` where only the submodule `aiter` is removed
    (the other names of the statement stay)
  - `from sglang.srt.configs import AfmoeConfig` where the kept package no longer provides the name
    (its own import of a removed module went): `inputs.removed.names` lists such names per module,
    when the plan supplies it (`lost_names_from_facts` computes it from the tracer's facts)
  - `try: from <removed> import X; HAVE_X = True  except ImportError: HAVE_X = False`: the removed
    module always raises ImportError now, so the statement becomes what runs then (`HAVE_X = False`)
  - `if TYPE_CHECKING:` blocks that empty are removed; `__all__` entries naming removed names go.
  - `isinstance(x, C)` with C bound only by a removed import folds to `False` (no instance of a class
    whose module is gone can exist), and C leaves an `isinstance(x, (A, C))` tuple or an
    `isinstance(x, A | C)` union (configs/hybrid_arch.py from 0.5.20); only where `x` is
    a name or attribute (nothing that could have a side effect is dropped).

A name bound only by a removed import and still used by remaining code is never left as a silent
NameError: each use becomes a finding "path:line: NAME from removed module MOD is still used", and
the batch's gate fails on findings. Uses that Python never evaluates stay quiet: inside string
annotations, annotations under `from __future__ import annotations`, local variable annotations and
`if TYPE_CHECKING:` blocks (a TYPE_CHECKING import never bound anything at runtime). A parameter or
return annotation of a `def` with no decorator but staticmethod/classmethod goes instead
(`qsa_profile: Optional[QSAProfile] = None` -> `qsa_profile=None`): nothing reads it but
`__annotations__`, and no object of the removed class can reach the call; a decorated def's stays a
finding (a FastAPI route or pydantic's validate_call reads its annotations).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Iterable, Mapping, Union

import libcst as cst
import libcst.matchers  # noqa: F401  (cst.matchers)
from libcst.codemod import CodemodContext
from libcst.helpers import get_absolute_module_from_package_for_import, get_full_name_for_node
from libcst.metadata import BuiltinAssignment, ImportAssignment, ParentNodeProvider, ScopeProvider

from shrinker.codemods.base import NodeIds, ShrinkCodemod
from shrinker.codemods.elements import drop_elements, drop_from_literal
from shrinker.codemods.inputs import CodemodInputs, Removed

ImportStmt = Union[cst.Import, cst.ImportFrom]
_IMPORT_ERRORS = {"ImportError", "ModuleNotFoundError", "Exception", "BaseException"}


_STILL_USED = re.compile(r": (\w+) from removed module \S+ is still used")


def still_used_name(finding: str) -> str | None:
    """NAME of a "path:line: NAME from removed module M is still used" finding (this codemod's), else None."""
    used = _STILL_USED.search(finding)
    return used[1] if used else None


# ------------------------------------------------------------------------------------------------
# Which imports are dead (shared with the registry codemod)

def lost_names(removed: Removed) -> Mapping[str, frozenset[str]]:
    """Names a kept module no longer provides, by module (`Removed.names`, when the plan has it)."""
    return getattr(removed, "names", None) or {}


def lost_names_from_facts(facts: Iterable, removed: Removed,
                          seed: Mapping[str, frozenset[str]] | None = None) -> dict[str, frozenset[str]]:
    """`Removed.names` from the tracer's FileFacts: names kept modules no longer provide.

    A kept module loses `n` when an unguarded module-level `from T import n` of it imports from a
    removed module, a removed submodule `T.n`, or a module that itself lost `n` (re-export chains:
    `sglang.srt.configs` re-exports `AfmoeConfig` from the removed `sglang.srt.configs.afmoe`).
    Guarded, TYPE_CHECKING and try/except imports are left out: their module may still bind the
    name another way. Aliased imports (`as`) are left out: the facts do not say which alias.
    `seed`: names kept modules lose to a codemod (remove_platform_classes), followed the same way.
    """
    kept = [f for f in facts if not removed.module_removed(f.module)]
    lost: dict[str, set[str]] = {m: set(v) for m, v in (seed or {}).items()}
    changed = True
    while changed:
        changed = False
        for f in kept:
            defined = set(f.defined)
            for rec in f.imports:
                where = rec.where
                if not rec.is_from or where.scope != "module" or where.type_checking or where.try_import \
                        or where.guards:
                    continue
                for name in rec.names:
                    if name == "*" or name not in defined or name in lost.get(f.module, ()):
                        continue
                    if name in removed.reexports.get(rec.target, ()):
                        continue  # the import is redirected to the module defining it
                    if removed.module_removed(rec.target) or removed.module_removed(f"{rec.target}.{name}") \
                            or name in lost.get(rec.target, ()):
                        lost.setdefault(f.module, set()).add(name)
                        changed = True
    return {m: frozenset(v) for m, v in lost.items()}


def module_and_package(context: CodemodContext) -> tuple[str | None, str | None]:
    """The file's dotted module and the package its relative imports resolve against."""
    module = context.full_module_name
    if module and module.endswith(".__init__"):
        module = module[: -len(".__init__")]
    if context.full_package_name is not None:
        return module, context.full_package_name
    if not module:
        return None, None
    if context.filename and context.filename.replace("\\", "/").endswith("/__init__.py"):
        return module, module
    return module, module.rpartition(".")[0]


@dataclass(frozen=True)
class DeadAlias:
    """One name an import statement binds from something removed."""

    alias: cst.ImportAlias | None  # None for `from <removed> import *`
    bound: str  # the name bound: `x` for `import a.b as x`, `a.b` for `import a.b`, `n` for from-imports
    source: str  # for messages: "from removed module a.b" / "from a.b, which no longer provides n"


def dead_aliases(stmt: ImportStmt, package: str | None, removed: Removed) -> list[DeadAlias]:
    """The aliases of `stmt` that import something removed (empty when the statement is alive)."""
    out: list[DeadAlias] = []
    if isinstance(stmt, cst.Import):
        for alias in stmt.names:
            dotted = get_full_name_for_node(alias.name) or ""
            if removed.module_removed(dotted):
                bound = alias.evaluated_alias or dotted
                out.append(DeadAlias(alias, bound, f"from removed module {dotted}"))
        return out
    if stmt.relative and package is None:
        return out  # a relative import in a file of unknown package: cannot resolve
    base = get_absolute_module_from_package_for_import(package, stmt)
    if not base:
        return out
    if removed.module_removed(base):
        if isinstance(stmt.names, cst.ImportStar):
            return [DeadAlias(None, "*", f"from removed module {base}")]
        return [DeadAlias(a, a.evaluated_alias or a.evaluated_name, f"from removed module {base}") for a in stmt.names]
    if isinstance(stmt.names, cst.ImportStar):
        return out
    lost = lost_names(removed).get(base, frozenset())
    for alias in stmt.names:
        name = alias.evaluated_name
        bound = alias.evaluated_alias or name
        if removed.module_removed(f"{base}.{name}"):
            out.append(DeadAlias(alias, bound, f"from removed module {base}.{name}"))
        elif name in lost:
            out.append(DeadAlias(alias, bound, f"from {base}, which no longer provides {name}"))
    return out


# Decorators that never read a function's annotations (the others may: FastAPI, pydantic, dataclass-likes)
_PLAIN_DECORATORS = frozenset({"staticmethod", "classmethod"})

_STATEMENT_LEVEL = (cst.BaseStatement, cst.BaseSuite, cst.BaseSmallStatement, cst.ExceptHandler,
                    cst.ExceptStarHandler, cst.Else, cst.Finally, cst.MatchCase)


def statement_parents(node: cst.CSTNode) -> dict[cst.CSTNode, cst.CSTNode]:
    """Parent of every statement-level node under `node` (statements, blocks, handlers), found
    without walking into expressions: a full visitor costs about as much as parsing."""
    parents: dict[cst.CSTNode, cst.CSTNode] = {}
    stack: list[cst.CSTNode] = [node]
    while stack:
        current = stack.pop()
        for child in current.children:
            if isinstance(child, _STATEMENT_LEVEL):
                parents[child] = current
                if not isinstance(child, cst.BaseSmallStatement):
                    stack.append(child)
    return parents


def iter_statements(node: cst.CSTNode) -> Iterable[cst.CSTNode]:
    """Every statement under `node`, small ones included (and blocks/handlers), no expressions."""
    return statement_parents(node).keys()


def find_dead_imports(tree: cst.Module, package: str | None, removed: Removed,
                      parents: Mapping[cst.CSTNode, cst.CSTNode] | None = None
                      ) -> dict[ImportStmt, list[DeadAlias]]:
    """The import statements of `tree` that import something removed, with the dead aliases."""
    dead: dict[ImportStmt, list[DeadAlias]] = {}
    for stmt in (parents if parents is not None else statement_parents(tree)):
        if isinstance(stmt, (cst.Import, cst.ImportFrom)):
            found = dead_aliases(stmt, package, removed)
            if found:
                dead[stmt] = found
    return dead


def subtree_ids(nodes: Iterable[cst.CSTNode]) -> set[int]:
    """Ids of every node in the given subtrees (to place an access without a parent map)."""
    ids: set[int] = set()
    for node in nodes:
        node.visit(NodeIds(ids))
    return ids


def _bound_names(alias: cst.ImportAlias, is_import: bool) -> set[str]:
    """Every name libcst's scope analysis records for an alias (`import a.b` binds `a` and `a.b`)."""
    if alias.asname is not None:
        return {alias.evaluated_alias}
    if not is_import:
        return {alias.evaluated_name}
    parts = (get_full_name_for_node(alias.name) or "").split(".")
    return {".".join(parts[:i]) for i in range(1, len(parts) + 1)}


def is_type_checking_test(test: cst.BaseExpression) -> bool:
    name = get_full_name_for_node(test)
    return name in ("TYPE_CHECKING", "typing.TYPE_CHECKING")


def _catches_import_error(handler: cst.ExceptHandler) -> bool:
    if handler.type is None:
        return True
    types = [e.value for e in handler.type.elements] if isinstance(handler.type, cst.Tuple) else [handler.type]
    return any((get_full_name_for_node(t) or "").rpartition(".")[2] in _IMPORT_ERRORS for t in types)


def _is_pass_only(block: cst.BaseSuite) -> bool:
    body = block.body
    if not body:
        return True  # libcst writes `pass` for a block whose statements were all removed
    if isinstance(block, cst.IndentedBlock):
        return len(body) == 1 and isinstance(body[0], cst.SimpleStatementLine) and \
            all(isinstance(s, cst.Pass) for s in body[0].body)
    return all(isinstance(s, cst.Pass) for s in body)


def _pass_block() -> cst.IndentedBlock:
    return cst.IndentedBlock(body=[cst.SimpleStatementLine(body=[cst.Pass()])])


# ------------------------------------------------------------------------------------------------

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _trigger_words(removed: Removed) -> frozenset[str]:
    """Words one of which any import of something removed must contain (last module parts, names)."""
    return _words(removed.modules, frozenset(n for names in lost_names(removed).values() for n in names))


def _plain_reference(node: cst.BaseExpression) -> bool:
    """A name or a dotted attribute of one: evaluating it again or not at all changes nothing."""
    while isinstance(node, cst.Attribute):
        node = node.value
    return isinstance(node, cst.Name)


@lru_cache(maxsize=8)
def _is_union(node: cst.CSTNode | None) -> bool:
    return isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.BitOr)


def _union_members(original: cst.BaseExpression, updated: cst.BaseExpression, before: cst.BitOr | None = None,
                   top: bool = True) -> list[tuple[cst.CSTNode, cst.BaseExpression, cst.BitOr | None]]:
    """The members of an `A | B | C` chain in order: (original node, updated node, the `|` before it).
    A parenthesised inner chain is one member."""
    if _is_union(original) and isinstance(updated, cst.BinaryOperation) and (top or not original.lpar):
        return [*_union_members(original.left, updated.left, before, False),
                *_union_members(original.right, updated.right, updated.operator, False)]  # type: ignore[arg-type]
    return [(original, updated, before)]


def _without_members(original: cst.BinaryOperation, updated: cst.BinaryOperation,
                     dead: set[int]) -> cst.BaseExpression | None:
    """`A | B | C` without the dead members, each kept `|` with its own spacing; None when all go."""
    kept = [(u, op) for o, u, op in _union_members(original, updated) if id(o) not in dead]
    if not kept:
        return None
    result = kept[0][0]
    for member, op in kept[1:]:
        result = cst.BinaryOperation(left=result, operator=op or cst.BitOr(), right=member)
    return result.with_changes(lpar=updated.lpar, rpar=updated.rpar) if updated.lpar else result


def _words(modules: frozenset[str], names: frozenset[str]) -> frozenset[str]:
    return frozenset({m.rpartition(".")[2] for m in modules} | names)


class _RedirectReexports(cst.CSTTransformer):
    """`from <removed> import name` of names the removed module only re-exported (the plan's
    reexports_of_removed) imports them from the module that defines them: the same objects."""

    def __init__(self, package: str | None, removed: Removed) -> None:
        super().__init__()
        self._package, self._removed, self.count = package, removed, 0

    def leave_ImportFrom(self, original_node: cst.ImportFrom, updated_node: cst.ImportFrom) -> cst.ImportFrom:
        if isinstance(updated_node.names, cst.ImportStar) or (updated_node.relative and self._package is None):
            return updated_node
        base = get_absolute_module_from_package_for_import(self._package, updated_node)
        if not base or base not in self._removed.reexports:
            return updated_node
        origin = self._removed.redirect(base, [a.evaluated_name for a in updated_node.names])
        if origin is None:
            return updated_node
        self.count += 1
        return updated_node.with_changes(module=cst.parse_expression(origin), relative=[])


class RemoveImportsOfRemovedModules(ShrinkCodemod):
    """Remove imports of removed modules; fold `try/except ImportError` around them; report uses.

    Cost: one scope analysis (for the uses); parents are tracked for statements only and the
    edit visit enters only the statements that hold a dead import (or `__all__`).
    """

    NAME = "remove_dead_imports"
    DESCRIPTION = "remove imports of removed modules; report names they bound that are still used"
    METADATA_DEPENDENCIES = (ScopeProvider, ParentNodeProvider)

    def __init__(self, context: CodemodContext, inputs: CodemodInputs):
        super().__init__(context, inputs)
        self._parent: dict[cst.CSTNode, cst.CSTNode] = {}
        self._dead: dict[ImportStmt, list[DeadAlias]] = {}
        self._folds: dict[cst.Try, tuple[int, cst.ExceptHandler]] = {}
        self._dropped: set[cst.CSTNode] = set()  # subtrees a fold discards (their uses don't count)
        self._dead_names: set[str] = set()  # module-level names bound only by dead imports
        self._enter: set[cst.CSTNode] = set()  # statement-level nodes the edit visit goes into
        self._local_annotations: dict[cst.CSTNode, set[int]] = {}
        self._isinstance: dict[cst.Call, set[int]] = {}  # isinstance calls -> ids of dead class args
        self._dropped_annotations: set[int] = set()  # ids of def signature annotations naming dead names
        self._dropped_elements: set[int] = set()  # ids of class-list elements naming dead classes

    @classmethod
    def wants(cls, source: str, inputs: CodemodInputs) -> bool:
        words = _trigger_words(inputs.removed)
        return bool(words) and not words.isdisjoint(_WORD.findall(source))

    # -- entry: skip files without dead imports before any metadata is computed
    def transform_module(self, tree: cst.Module) -> cst.Module:
        _, package = module_and_package(self.context)
        if self.inputs.removed.reexports:
            redirect = _RedirectReexports(package, self.inputs.removed)
            tree = tree.visit(redirect)
            self.changes["imports_redirected"] += redirect.count
        self._parent = statement_parents(tree)
        if (not find_dead_imports(tree, package, self.inputs.removed, self._parent)
                and not self._record_statements()):
            return tree
        tree = super().transform_module(tree)
        self.findings.sort(key=_finding_line)
        return tree

    # -- planning, on the tree with metadata
    def visit_Module(self, node: cst.Module) -> None:
        _, package = module_and_package(self.context)
        if not self._parent or next(iter(self._parent.values())) is not node:
            self._parent = statement_parents(node)
        self._dead = find_dead_imports(node, package, self.inputs.removed, self._parent)
        self._plan_folds()
        self._check_uses(node)
        for stmt in [*self._dead, *self._folds, *self._record_statements()]:
            self._enter.add(stmt)
            self._enter.update(self._parents(stmt))

    def _parents(self, node: cst.CSTNode) -> Iterable[cst.CSTNode]:
        while True:
            node = self._parent.get(node)  # type: ignore[assignment]
            if node is None:
                return
            yield node

    def _whole(self, stmt: ImportStmt) -> bool:
        dead = self._dead[stmt]
        return dead[0].alias is None or len(dead) == len(stmt.names)  # type: ignore[arg-type]

    def _enclosing_try(self, stmt: ImportStmt) -> tuple[cst.Try, cst.BaseStatement] | None:
        """The innermost `try` whose body runs `stmt` when the try runs, and its top-level statement."""
        path: list[cst.CSTNode] = [stmt]
        for parent in self._parents(stmt):
            if isinstance(parent, (cst.FunctionDef, cst.ClassDef)):
                return None
            if isinstance(parent, cst.Try) and path[-1] is parent.body and len(path) >= 2:
                return parent, path[-2]  # type: ignore[return-value]
            path.append(parent)
        return None

    def _plan_folds(self) -> None:
        """A removed module raises ImportError at once: fold each `try` to what runs then."""
        points: dict[cst.Try, int] = {}
        guarded: dict[cst.Try, list[ImportStmt]] = {}
        for stmt in self._dead:
            found = self._enclosing_try(stmt)
            if found is None:
                continue
            try_node, top = found
            if not any(_catches_import_error(h) for h in try_node.handlers):
                continue
            k = list(try_node.body.body).index(top)
            points[try_node] = min(k, points.get(try_node, k))
            guarded.setdefault(try_node, []).append(stmt)
        for try_node, k in points.items():
            top = try_node.body.body[k]
            handler = next(h for h in try_node.handlers if _catches_import_error(h))
            only_imports = isinstance(top, cst.SimpleStatementLine) and all(
                isinstance(s, (cst.Import, cst.ImportFrom)) for s in top.body)
            foldable = only_imports and handler.name is None and (
                k == 0 or (len(try_node.handlers) == 1 and try_node.finalbody is None))
            if not foldable:
                # `except ImportError as e:` (e read), or statements between: the try stays as it is,
                # its import with it. It raises ModuleNotFoundError where upstream's raises whatever the
                # module lacked, and the same handler runs: what the fold would make explicit.
                for stmt in guarded[try_node]:
                    del self._dead[stmt]
                continue
            self._folds[try_node] = (k, handler)
            self._dropped.update(try_node.body.body[k:])
            if try_node.orelse is not None:
                self._dropped.add(try_node.orelse)
            self._dropped.update(h for h in try_node.handlers if h is not handler)

    def _local_annotation(self, access) -> bool:
        """True for an access in a local variable annotation (`x: T = ...` in a function body)."""
        function = getattr(access.scope, "node", None)
        if not isinstance(function, (cst.FunctionDef, cst.Lambda)):
            return False
        if function not in self._local_annotations:
            annotations = [small.annotation for small in statement_parents(function)
                           if isinstance(small, cst.AnnAssign)]
            self._local_annotations[function] = subtree_ids(annotations)
        return id(access.node) in self._local_annotations[function]

    def _check_uses(self, module: cst.Module) -> None:
        future = any(isinstance(s, cst.ImportFrom) and get_full_name_for_node(s.module) == "__future__"
                     and not isinstance(s.names, cst.ImportStar)
                     and any(a.evaluated_name == "annotations" for a in s.names)
                     for line in module.body if isinstance(line, cst.SimpleStatementLine) for s in line.body)
        # uses there are never evaluated: code a fold drops, and `if TYPE_CHECKING:` blocks
        quiet = subtree_ids([*self._dropped, *(n.body for n in self._parent
                                                if isinstance(n, cst.If) and is_type_checking_test(n.test))])

        removed_assignments: dict[object, DeadAlias] = {}
        star_sources: list[str] = []
        for stmt, dead in self._dead.items():
            scope = self.get_metadata(ScopeProvider, stmt, None)
            if scope is None:
                continue
            if dead[0].alias is None:
                star_sources.append(dead[0].source)
                continue
            is_import = isinstance(stmt, cst.Import)
            kept_names: set[str] = set()
            dead_aliases_ = {d.alias for d in dead}
            for alias in stmt.names:  # type: ignore[union-attr]
                if alias not in dead_aliases_:
                    kept_names |= _bound_names(alias, is_import)
            for d in dead:
                for name in _bound_names(d.alias, is_import) - kept_names:
                    for assignment in scope.assignments[name]:
                        if isinstance(assignment, ImportAssignment) and assignment.node is stmt:
                            removed_assignments[assignment] = d
        for assignment, d in removed_assignments.items():
            reported: set[int] = set()
            for access in assignment.references:
                if any(ref not in removed_assignments for ref in access.referents):
                    continue  # still bound by something that stays
                node = access.node
                if isinstance(node, (cst.SimpleString, cst.ConcatenatedString)) or id(node) in quiet:
                    continue  # a string annotation, dropped code, a TYPE_CHECKING block
                if access.is_annotation and (future or self._local_annotation(access)):
                    continue  # an annotation Python does not evaluate
                if self._runtime_import(assignment.node) and self._fold_isinstance(node):
                    continue  # isinstance(x, <removed class>): folds (leave_Call)
                if self._runtime_import(assignment.node) and self._drop_class_list_element(node):
                    continue  # a class list only isinstance reads: the element goes (leave_List)
                if access.is_annotation and self._drop_signature_annotation(node):
                    continue  # `qsa_profile: Optional[QSAProfile] = None`: the annotation goes (leave_Param)
                if id(node) not in reported:
                    reported.add(id(node))
                    self.report(node, f"{d.bound} {d.source} is still used")
        global_scope = self.get_metadata(ScopeProvider, module, None)
        self._dead_names = {
            name for name in (d.bound for d in removed_assignments.values())
            if global_scope is not None and name in global_scope.assignments
            and all(a in removed_assignments for a in global_scope.assignments[name])
        }
        if self._dead_names:  # module-level `__all__` statements are edited too
            for line in module.body:
                if isinstance(line, cst.SimpleStatementLine) and any(_sets_all(s) for s in line.body):
                    self._enter.add(line)
                    self._enter.update(line.body)
        if star_sources and global_scope is not None:
            unresolved = sorted({a.node.value for a in global_scope.accesses
                                 if not a.referents and isinstance(a.node, cst.Name)})
            for source in star_sources:
                for name in unresolved:
                    self.report(None, f"{name} may have come from a star import {source}")

    def _runtime_import(self, stmt: cst.CSTNode) -> bool:
        """Not under `if TYPE_CHECKING:` (a name that import binds is a NameError at run time upstream)."""
        return not any(isinstance(p, cst.If) and is_type_checking_test(p.test) for p in self._parents(stmt))

    def _fold_isinstance(self, node: cst.CSTNode) -> bool:
        """Record `node` as a class argument of a builtin isinstance call whose first argument has no
        side effect; False when it is not one (then the use is a finding)."""
        parent = self.get_metadata(ParentNodeProvider, node, None)
        in_union = _is_union(parent)
        while _is_union(parent):  # isinstance(x, A | B): a member of the union
            grand = self.get_metadata(ParentNodeProvider, parent, None)
            if parent.lpar and _is_union(grand):  # type: ignore[union-attr]
                return False  # `(A | B) | C`: an inner chain is one member, never taken apart
            parent = grand
        if in_union and not isinstance(parent, cst.Arg):
            return False  # `(A | B, C)`: only a whole second argument is a union taken apart
        if isinstance(parent, cst.Element):
            parent = self.get_metadata(ParentNodeProvider, parent, None)
            if not isinstance(parent, cst.Tuple):
                return False
            parent = self.get_metadata(ParentNodeProvider, parent, None)
        call = self.get_metadata(ParentNodeProvider, parent, None) if isinstance(parent, cst.Arg) else None
        if not (isinstance(call, cst.Call) and isinstance(call.func, cst.Name) and call.func.value == "isinstance"
                and len(call.args) == 2 and call.args[1] is parent and not call.args[0].keyword
                and _plain_reference(call.args[0].value) and not self._shadowed("isinstance", call)):
            return False
        self._isinstance.setdefault(call, set()).add(id(node))
        self._enter_statement_of(call)
        return True

    def _enter_statement_of(self, node: cst.CSTNode) -> None:
        """Make the edit visit go into the statement holding `node`."""
        statement = node
        while statement is not None and statement not in self._parent:
            statement = self.get_metadata(ParentNodeProvider, statement, None)
        if statement is not None:
            self._enter.add(statement)
            self._enter.update(self._parents(statement))

    def _drop_class_list_element(self, node: cst.CSTNode) -> bool:
        """Record `node` as an element to drop from `types = [A, B, <removed class>]`, a local list bound once
        and read only as `types.append(C)` and `isinstance(x, tuple(types))` (0.5.23's eagle_worker_v2
        `graph_supported_backend_types`): no instance of a class whose module is gone can exist, so the
        isinstance answers the same without it. False when `node` is not such an element."""
        element = self.get_metadata(ParentNodeProvider, node, None)
        literal = self.get_metadata(ParentNodeProvider, element, None) if isinstance(element, cst.Element) else None
        assign = self.get_metadata(ParentNodeProvider, literal, None) if isinstance(literal, cst.List) else None
        if not (isinstance(assign, cst.Assign) and assign.value is literal and len(assign.targets) == 1
                and isinstance(assign.targets[0].target, cst.Name)):
            return False
        name = assign.targets[0].target.value
        scope = self.get_metadata(ScopeProvider, assign, None)
        if scope is None or not isinstance(getattr(scope, "node", None), cst.FunctionDef):
            return False
        assignments = list(scope.assignments[name])
        if len(assignments) != 1 or getattr(assignments[0], "node", None) is not assign.targets[0].target:
            return False
        if not all(self._appended_or_tested(a.node) for a in assignments[0].references):
            return False
        self._dropped_elements.add(id(element))
        self._enter_statement_of(assign)
        return True

    def _appended_or_tested(self, read: cst.CSTNode) -> bool:
        """`read` (the list's name) stands in `read.append(x)` or in `isinstance(y, tuple(read))`."""
        parent = self.get_metadata(ParentNodeProvider, read, None)
        if isinstance(parent, cst.Attribute) and parent.value is read and parent.attr.value == "append":
            call = self.get_metadata(ParentNodeProvider, parent, None)
            return isinstance(call, cst.Call) and call.func is parent
        arg = parent if isinstance(parent, cst.Arg) else None
        to_tuple = self.get_metadata(ParentNodeProvider, arg, None) if arg is not None else None
        if not (isinstance(to_tuple, cst.Call) and isinstance(to_tuple.func, cst.Name)
                and to_tuple.func.value == "tuple" and len(to_tuple.args) == 1):
            return False
        outer_arg = self.get_metadata(ParentNodeProvider, to_tuple, None)
        call = self.get_metadata(ParentNodeProvider, outer_arg, None) if isinstance(outer_arg, cst.Arg) else None
        return (isinstance(call, cst.Call) and isinstance(call.func, cst.Name) and call.func.value == "isinstance"
                and len(call.args) == 2 and call.args[1] is outer_arg)

    def _drop_signature_annotation(self, node: cst.CSTNode) -> bool:
        """Record the parameter or return annotation of a `def` that `node` stands in, to be dropped; False
        when `node` is in no such annotation. Python evaluates it when the `def` runs, so a removed name
        there is a NameError; without it the function runs the same (only `__annotations__` lose the
        entry), where a call site passing such an object cannot exist any more."""
        parent = self.get_metadata(ParentNodeProvider, node, None)
        while parent is not None and not isinstance(parent, cst.Annotation):
            if isinstance(parent, (cst.BaseStatement, cst.BaseSmallStatement, cst.Lambda)):
                return False
            parent = self.get_metadata(ParentNodeProvider, parent, None)
        owner = self.get_metadata(ParentNodeProvider, parent, None) if parent is not None else None
        if not (isinstance(owner, cst.Param) and owner.annotation is parent) and \
                not (isinstance(owner, cst.FunctionDef) and owner.returns is parent):
            return False
        function = owner
        while function is not None and not isinstance(function, cst.FunctionDef):
            function = self.get_metadata(ParentNodeProvider, function, None)
        if function is None or any(get_full_name_for_node(d.decorator) not in _PLAIN_DECORATORS
                                   for d in function.decorators):
            return False  # a decorator may read the annotations (a FastAPI route, pydantic's validate_call)
        self._dropped_annotations.add(id(parent))
        self._enter_statement_of(function)
        return True

    def leave_Param(self, original_node: cst.Param, updated_node: cst.Param) -> cst.Param:
        if original_node.annotation is None or id(original_node.annotation) not in self._dropped_annotations:
            return updated_node
        self.changes["annotations_naming_removed_names_dropped"] += 1
        equal = updated_node.equal
        if updated_node.default is not None:  # `x: T = None` -> `x=None`, as an unannotated default is written
            equal = cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""),
                                    whitespace_after=cst.SimpleWhitespace(""))
        return updated_node.with_changes(annotation=None, equal=equal)

    def leave_FunctionDef(self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef) -> cst.FunctionDef:
        if original_node.returns is None or id(original_node.returns) not in self._dropped_annotations:
            return updated_node
        self.changes["annotations_naming_removed_names_dropped"] += 1
        return updated_node.with_changes(returns=None, whitespace_before_colon=cst.SimpleWhitespace(""))

    def _shadowed(self, name: str, node: cst.CSTNode) -> bool:
        scope = self.get_metadata(ScopeProvider, node, None)
        return scope is not None and any(not isinstance(a, BuiltinAssignment) for a in scope[name])

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call):
        dead = self._isinstance.get(original_node)
        if not dead:
            return updated_node
        classes = original_node.args[1].value
        if _is_union(classes):
            self.changes["isinstance_folded"] += 1
            union = _without_members(classes, updated_node.args[1].value, dead)
            if union is None:
                return cst.Name("False")
            return updated_node.with_changes(args=[updated_node.args[0], updated_node.args[1].with_changes(value=union)])
        if not isinstance(classes, cst.Tuple):
            self.changes["isinstance_folded"] += 1
            return cst.Name("False")
        flags = {id(u): id(o.value) in dead for o, u in zip(classes.elements, updated_node.args[1].value.elements)}
        kept = [e for e in updated_node.args[1].value.elements if not flags[id(e)]]
        self.changes["isinstance_folded"] += 1
        if not kept:
            return cst.Name("False")
        result = drop_elements(updated_node.args[1].value.elements, lambda e: flags[id(e)], None, None)
        assert result is not None
        elements = list(result[0])
        if len(elements) == 1 and elements[0].comma is cst.MaybeSentinel.DEFAULT:
            elements[0] = elements[0].with_changes(comma=cst.Comma())  # (A,) stays a tuple
        new_tuple = updated_node.args[1].value.with_changes(elements=elements)
        return updated_node.with_changes(args=[updated_node.args[0], updated_node.args[1].with_changes(value=new_tuple)])

    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, _STATEMENT_LEVEL) and node not in self._enter:
            return False  # nothing to change in there
        return super().on_visit(node)

    # -- editing
    def _edit_import(self, original: ImportStmt, updated: ImportStmt):
        dead = self._dead.get(original)
        if not dead:
            return updated
        if self._whole(original):
            self.changes["imports_removed"] += 1
            return cst.RemoveFromParent()
        gone = {d.alias for d in dead}
        # match updated aliases to original ones by position (the visitor may rebuild them)
        flags = {id(u): o in gone for o, u in zip(original.names, updated.names)}  # type: ignore[arg-type]
        lead = updated.lpar.whitespace_after if isinstance(updated, cst.ImportFrom) and updated.lpar else None
        tail = updated.rpar.whitespace_before if isinstance(updated, cst.ImportFrom) and updated.rpar else None
        result = drop_elements(updated.names, lambda a: flags[id(a)], lead, tail)  # type: ignore[arg-type]
        assert result is not None
        kept, lead, tail = result
        self.changes["import_names_removed"] += len(gone)
        changes: dict = {"names": kept}
        if isinstance(updated, cst.ImportFrom) and updated.lpar:
            changes["lpar"] = updated.lpar.with_changes(whitespace_after=lead)
            changes["rpar"] = updated.rpar.with_changes(whitespace_before=tail)  # type: ignore[union-attr]
        return updated.with_changes(**changes)

    def leave_Import(self, original_node: cst.Import, updated_node: cst.Import):
        return self._edit_import(original_node, updated_node)

    def leave_ImportFrom(self, original_node: cst.ImportFrom, updated_node: cst.ImportFrom):
        return self._edit_import(original_node, updated_node)

    def leave_Try(self, original_node: cst.Try, updated_node: cst.Try):
        fold = self._folds.get(original_node)
        if fold is None:
            return updated_node
        k, handler = fold
        self.changes["try_folded"] += 1
        index = list(original_node.handlers).index(handler)
        fallback = list(updated_node.handlers[index].body.body)
        if _is_pass_only(updated_node.handlers[index].body):
            fallback = []
        statements: list[cst.BaseStatement] = []
        if k > 0:
            statements.append(updated_node.with_changes(
                body=updated_node.body.with_changes(body=updated_node.body.body[:k]),
                handlers=[updated_node.handlers[index].with_changes(body=_pass_block())],
                orelse=None))
        statements.extend(fallback)
        if updated_node.finalbody is not None:
            statements.extend(updated_node.finalbody.body.body)
        if not statements:
            return cst.RemoveFromParent()
        first = statements[0]
        if k == 0:
            statements[0] = first.with_changes(
                leading_lines=[*updated_node.leading_lines, *first.leading_lines])
        return cst.FlattenSentinel(statements)

    def leave_If(self, original_node: cst.If, updated_node: cst.If):
        if (is_type_checking_test(original_node.test) and _is_pass_only(updated_node.body)
                and not _is_pass_only(original_node.body)):
            if updated_node.orelse is None:
                self.changes["type_checking_blocks_removed"] += 1
                return cst.RemoveFromParent()
        return updated_node

    def _prune_all(self, value: cst.BaseExpression) -> cst.BaseExpression | None:
        def drop(el: cst.CSTNode) -> bool:
            v = getattr(el, "value", None)
            return isinstance(v, cst.SimpleString) and v.evaluated_value in self._dead_names
        new = drop_from_literal(value, drop)
        if new is not None:
            self.changes["dunder_all_entries_removed"] += 1
        return new

    # -- literal records that name a removed module -------------------------------------------
    def leave_Tuple(self, original_node: cst.Tuple, updated_node: cst.Tuple) -> cst.BaseExpression:
        return self._drop_records(updated_node)

    def leave_List(self, original_node: cst.List, updated_node: cst.List) -> cst.BaseExpression:
        gone = {i for i, el in enumerate(original_node.elements) if id(el) in self._dropped_elements}
        if gone:
            position = {id(el): i for i, el in enumerate(updated_node.elements)}
            new = drop_from_literal(updated_node, lambda el: position.get(id(el)) in gone)
            if new is not None:
                self.changes["class_list_elements_removed"] += len(gone)
                updated_node = new  # type: ignore[assignment]
        return self._drop_records(updated_node)

    def _record_statements(self) -> list[cst.CSTNode]:
        """The small statements holding a tuple or list with a literal record that names a removed module."""
        package = self.inputs.rules.profile.package
        out = []
        for stmt in self._parent:
            if not isinstance(stmt, cst.BaseSmallStatement):
                continue
            for seq in cst.matchers.findall(stmt, cst.matchers.Tuple() | cst.matchers.List()):
                if any(_record_names_removed(getattr(e, "value", None), self.inputs.removed, package)
                       for e in seq.elements):  # type: ignore[attr-defined]
                    out.append(stmt)
                    break
        return out

    def _drop_records(self, node: cst.Tuple | cst.List) -> cst.BaseExpression:
        """`(NativeMmFamily(name="qwen_vl", mm_processor="<removed module>:Cls", ...), ...)`: an entry of
        a table of literal records that names a removed module by string describes what only that module
        holds, which cannot exist any more, so the entry goes (0.5.18's rust_server NATIVE_MM_FAMILIES).
        Only records made of literals: nothing that could run is dropped."""
        package = self.inputs.rules.profile.package
        new = drop_from_literal(node, lambda el: _record_names_removed(getattr(el, "value", None),
                                                                       self.inputs.removed, package))
        if new is None:
            return node
        self.changes["records_naming_removed_modules_removed"] += len(node.elements) - len(new.elements)
        return new

    def _at_module_level(self, small: cst.CSTNode) -> bool:
        return self._parent.get(self._parent.get(small)) is self.module  # type: ignore[arg-type]

    def leave_Assign(self, original_node: cst.Assign, updated_node: cst.Assign):
        if self._dead_names and _sets_all(original_node) and self._at_module_level(original_node):
            new = self._prune_all(updated_node.value)
            if new is not None:
                return updated_node.with_changes(value=new)
        return updated_node

    def leave_AugAssign(self, original_node: cst.AugAssign, updated_node: cst.AugAssign):
        if self._dead_names and _sets_all(original_node) and self._at_module_level(original_node):
            new = self._prune_all(updated_node.value)
            if new is not None:
                return updated_node.with_changes(value=new)
        return updated_node


def _sets_all(small: cst.BaseSmallStatement) -> bool:
    """`__all__ = [...]` or `__all__ += [...]`."""
    if isinstance(small, cst.Assign):
        targets = [t.target for t in small.targets]
    elif isinstance(small, cst.AugAssign):
        targets = [small.target]
    else:
        return False
    return any(isinstance(t, cst.Name) and t.value == "__all__" for t in targets)


def _finding_line(finding: str) -> int:
    """The line of a `path:line: message` finding (unknown lines last)."""
    parts = finding.split(":", 2)
    return int(parts[1]) if len(parts) > 2 and parts[1].isdigit() else 1 << 30


_DATA_CALLS = frozenset({"frozenset", "set", "tuple", "dict", "list"})


def _literal_data(node: cst.CSTNode) -> bool:
    """Strings, numbers, True/False/None, and tuples, lists, sets, dicts and frozenset()/dict()... calls of them."""
    if isinstance(node, (cst.SimpleString, cst.ConcatenatedString, cst.Integer, cst.Float)):
        return True
    if isinstance(node, cst.Name):
        return node.value in ("True", "False", "None")
    if isinstance(node, cst.UnaryOperation):
        return _literal_data(node.expression)
    if isinstance(node, (cst.Tuple, cst.List, cst.Set)):
        return all(isinstance(e, cst.Element) and _literal_data(e.value) for e in node.elements)
    if isinstance(node, cst.Dict):
        return all(isinstance(e, cst.DictElement) and _literal_data(e.key) and _literal_data(e.value)
                   for e in node.elements)
    if isinstance(node, cst.Call):
        return (isinstance(node.func, cst.Name) and node.func.value in _DATA_CALLS
                and all(not a.star and _literal_data(a.value) for a in node.args))
    return False


def _record_names_removed(node: cst.CSTNode | None, removed: Removed, package: str) -> bool:
    """A record made of literals (`Record(k="...", ...)`, a tuple or dict of them) one of whose strings
    names a module of `package` the plan removes (`"pkg.mod:Cls"`, `"pkg.mod.Cls"`)."""
    if isinstance(node, cst.Call):
        if not isinstance(node.func, (cst.Name, cst.Attribute)) or any(a.star for a in node.args):
            return False
        parts = [a.value for a in node.args]
    elif isinstance(node, (cst.Tuple, cst.Dict)):
        parts = [node]
    else:
        return False
    if not parts or not all(_literal_data(p) for p in parts):
        return False
    for string in cst.matchers.findall(node, cst.matchers.SimpleString()):
        text = string.evaluated_value  # type: ignore[attr-defined]
        if (isinstance(text, str) and text.startswith(package + ".") and " " not in text
                and removed.module_removed(text.split(":")[0])):
            return True
    return False
