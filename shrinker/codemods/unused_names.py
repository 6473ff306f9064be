"""Drop module-level imports and simple assignments that the edits of THIS run left unused.

Only names the pre-edit module used and the edited module no longer uses go; a name already unused
upstream stays (it may be a re-export), and so does any name in `__all__`, any dunder, and any
name other kept modules import from this one. SGLang shapes handled:
  - `from sglang.srt.utils import is_hip, is_npu, is_cuda` after the platform folds: only the
    aliases nothing reads any more go; `import torch_npu` style whole statements go;
  - `_is_hip = is_hip()` / `_use_aiter = get_bool_env_var("SGLANG_USE_AITER") and _is_hip`
    module flags, and then the predicate import they were the last use of;
  - `if TYPE_CHECKING:` imports whose last use went (the emptied block goes too);
  - `try: from x import y; except ImportError: y = None` when `y` is unused: the whole try goes;
  - `if cond: X = 1 else: X = 2` when `X` is unused: both arms go, then the `if` (a pure test);
  - a function's own import standing in its body (`from sglang.srt.utils import is_hip, is_npu` in
    fused_op's `_platform_key()`) whose name that function read before the edits and reads no more.
Values must be free of obvious side effects (names, attributes, literals, operators and calls
whose arguments are such): `_x = register_op(...)` with a lambda or comprehension argument stays.

API for the pipeline (the codemod needs the module as it was before this run's edits):
    RemoveNewlyUnusedNames(context, inputs, original=<pre-edit source str or cst.Module>)
`NEEDS_ORIGINAL = True` marks it; without `original` it reads `context.scratch[ORIGINAL_KEY]`,
and with neither it raises ShrinkError (a pipeline bug, never a silent no-op). Run it LAST, after
every other codemod of the batch, on the same tree. Which names other modules import comes from
`inputs.removed.imported` (module -> names, "*" = all public names; see `imported_names_from_facts`);
while the plan does not provide it, public names are assumed imported and only `_private` names go.
"""

from __future__ import annotations

import re
from typing import Callable, ClassVar, Iterable, Mapping, Optional, Sequence, Union

import libcst as cst
import libcst.helpers
from libcst.codemod import CodemodContext
from libcst.metadata import Assignment, ImportAssignment, MetadataWrapper, ScopeProvider

from shrinker.codemods.base import NodeIds, ShrinkCodemod
from shrinker.codemods.elements import drop_elements
from shrinker.codemods.inputs import CodemodInputs, Removed
from shrinker.codemods.registries import pure_test, string_value
from shrinker.codemods.removed_imports import module_and_package
from shrinker.errors import ShrinkError
from shrinker.graph.module_reads import ModuleReads, module_reads

ORIGINAL_KEY = "shrinker.original_module"
_PREFIX = object()
Binding = Union[cst.ImportAlias, cst.Assign, cst.AnnAssign]


def _blank_run(lines) -> list[cst.EmptyLine]:
    """The blank lines a statement's leading lines start with (a comment after them described it)."""
    out = []
    for line in lines:
        if line.comment is not None:
            break
        out.append(line)
    return out


def imported_names(removed: Removed) -> Optional[Mapping[str, frozenset[str]]]:
    """Names kept modules import from each module (`Removed.imported`), or None when unknown."""
    return getattr(removed, "imported", None)


def imported_names_from_facts(facts: Iterable, removed: Removed,
                              source_of: Optional[Callable[[str], Optional[str]]] = None) -> dict[str, frozenset[str]]:
    """`Removed.imported` from the tracer's FileFacts: for each module, the names kept modules take
    from it; "*" when a kept module may read any of them (a string reference, a module read whole).

    With `source_of` (module -> its source), two whole-module uses narrow to the names they take
    (graph/module_reads.py): a module bound as an object (`import m`, `from p import m as a`) gives
    the attributes read through it, and `from m import *` into S gives what S reads itself plus, to a
    fixpoint, what S's own importers take from S. Without it, both count as "*"."""
    facts = [f for f in facts if not removed.module_removed(f.module)]
    modules = {f.module for f in facts}
    out: dict[str, set[str]] = {}
    stars: list[tuple[str, str]] = []  # (importing module, star-imported module)
    passed_on: list[tuple[str, frozenset[str], str]] = []  # (module, names it binds a module to, that module)
    for f in facts:
        reads = _reads(f, source_of)
        if reads is not None:
            passed_on.extend((f.module, local, target) for target, local in reads.exported.items())
        for record in f.imports:
            if not record.is_from:
                out.setdefault(record.target, set()).update(_through(reads, record.target))
                continue
            for name in record.names:
                if name == "*":
                    if reads is None or reads.dynamic:
                        out.setdefault(record.target, set()).add("*")
                    else:
                        stars.append((f.module, record.target))
                        out.setdefault(record.target, set()).update(reads.names)
                    continue
                if f"{record.target}.{name}" in modules:
                    out.setdefault(f"{record.target}.{name}", set()).update(
                        _through(reads, f"{record.target}.{name}"))
                out.setdefault(record.target, set()).add(name)
        for ref in f.strings:
            out.setdefault(ref.target, set()).add(ref.attr or "*")
    changed = True
    while changed:
        changed = False
        for importer, target in stars:  # what importers take from S, S takes from what it star-imports
            taken = out.get(importer, set())
            need = out.setdefault(target, set())
            if not taken <= need:
                need.update(taken)
                changed = True
        for holder, local, target in passed_on:  # a module object others may take from its holder
            taken = out.get(holder, set())
            if ("*" in taken or local & taken) and "*" not in out.get(target, set()):
                out.setdefault(target, set()).add("*")
                changed = True
    return {m: frozenset(v) for m, v in out.items()}


def _reads(f, source_of) -> Optional["ModuleReads"]:
    if source_of is None:
        return None
    source = source_of(f.module)
    return None if source is None else module_reads(source, f.module, f.is_package)


def _through(reads: Optional["ModuleReads"], target: str) -> set[str]:
    """What a module bound as an object gives away: the attributes read through it, else everything. A module
    that reads its namespace whole (`dynamic`: `mod.__dict__`) may hand on what it binds at module level; a
    binding inside a function (`from sglang.srt.distributed import parallel_state` in a test helper) is no
    namespace entry, so only its attribute reads count."""
    if reads is None or (reads.dynamic and target in reads.exported):
        return {"*"}
    if target not in reads.through:
        return set()  # imported, never read through the binding
    taken = reads.through[target]
    return {"*"} if taken is None else set(taken)


def _side_effect_free(node: Optional[cst.BaseExpression]) -> bool:
    if node is None:
        return False
    if isinstance(node, (cst.Name, cst.SimpleString, cst.Integer, cst.Float, cst.Imaginary,
                         cst.Ellipsis, cst.ConcatenatedString)):
        return True
    if isinstance(node, cst.Attribute):
        return _side_effect_free(node.value)
    if isinstance(node, cst.Call):
        return _side_effect_free(node.func) and all(_side_effect_free(a.value) for a in node.args)
    if isinstance(node, cst.Subscript):
        return _side_effect_free(node.value) and all(
            isinstance(s.slice, cst.Index) and _side_effect_free(s.slice.value) for s in node.slice)
    if isinstance(node, cst.UnaryOperation):
        return _side_effect_free(node.expression)
    if isinstance(node, (cst.BooleanOperation, cst.BinaryOperation)):
        return _side_effect_free(node.left) and _side_effect_free(node.right)
    if isinstance(node, cst.Comparison):
        return _side_effect_free(node.left) and all(_side_effect_free(c.comparator) for c in node.comparisons)
    if isinstance(node, cst.IfExp):
        return all(_side_effect_free(n) for n in (node.test, node.body, node.orelse))
    if isinstance(node, (cst.List, cst.Tuple, cst.Set)):
        return all(_side_effect_free(getattr(e, "value", None)) for e in node.elements)
    if isinstance(node, cst.Dict):
        return all(isinstance(e, cst.DictElement) and _side_effect_free(e.key) and _side_effect_free(e.value)
                   for e in node.elements)
    return False


def _all_names(module: cst.Module) -> set[str]:
    """Strings in module-level `__all__ = [...]` / `__all__ += [...]`."""
    names: set[str] = set()
    for line in module.body:
        if not isinstance(line, cst.SimpleStatementLine):
            continue
        for small in line.body:
            target = value = None
            if isinstance(small, cst.Assign) and len(small.targets) == 1:
                target, value = small.targets[0].target, small.value
            elif isinstance(small, (cst.AugAssign, cst.AnnAssign)):
                target, value = small.target, small.value
            if isinstance(target, cst.Name) and target.value == "__all__" and \
                    isinstance(value, (cst.List, cst.Tuple, cst.Set)):
                names.update(v for v in (string_value(getattr(e, "value", None)) for e in value.elements) if v)
    return names


def _used_names(wrapper: MetadataWrapper) -> set[str]:
    """Module-level names some code reads (any access resolving to a module-level binding)."""
    scopes = wrapper.resolve(ScopeProvider)
    scope = scopes.get(wrapper.module)
    used: set[str] = set()
    if scope is None:
        return used
    for assignment in scope.assignments:
        if assignment.references:
            used.add(assignment.name)
            used.add(assignment.name.split(".")[0])
    return used


def _local_imports(module: cst.Module, scopes: Mapping[cst.CSTNode, object]
                   ) -> dict[tuple[str, str], tuple[cst.ImportAlias, bool]]:
    """(function qualname, bound name) -> (its alias, whether code reads it) for the imports standing directly
    in a function's body whose name that function binds once (`from sglang.srt.utils import is_hip` in
    `_platform_key()`); a name imported twice, or also bound otherwise there, is left out."""
    found: dict[tuple[str, str], tuple[cst.ImportAlias, bool]] = {}

    def walk(body: Sequence[cst.BaseStatement], prefix: str, in_function: bool) -> None:
        for stmt in body:
            if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
                inner = stmt.body.body if isinstance(stmt.body, cst.IndentedBlock) else ()
                walk(inner, f"{prefix}{stmt.name.value}.", isinstance(stmt, cst.FunctionDef))
            elif in_function and isinstance(stmt, cst.SimpleStatementLine):
                for small in stmt.body:
                    if isinstance(small, (cst.Import, cst.ImportFrom)) and not isinstance(small.names, cst.ImportStar):
                        scope = scopes.get(small)
                        for alias in small.names:
                            bound = alias.evaluated_alias or alias.evaluated_name
                            assignments = scope.assignments[bound] if scope is not None and bound in scope else ()
                            if len(assignments) == 1 and "." not in bound:
                                found[(prefix.rstrip("."), bound)] = (alias, bool(next(iter(assignments)).references))

    walk(module.body, "", False)
    return found


def _subtree_ids(node: cst.CSTNode, into: set[int]) -> None:
    node.visit(NodeIds(into))


class RemoveNewlyUnusedNames(ShrinkCodemod):
    """Remove module-level imports/assignments this run's edits made unused (see module docstring).

    One scope analysis of the edited module (plus one of the original, only when a candidate needs
    it) and one visit that enters functions and classes only when a function's own import goes: the cascade (`_is_hip = is_hip()` goes,
    so `is_hip` is unused, so its import goes; an emptied `if TYPE_CHECKING:` goes, so
    `TYPE_CHECKING` is unused) is worked out on the scope graph before the tree is touched.
    """

    NAME = "remove_unused_names"
    DESCRIPTION = "drop module-level imports and flags that this run's edits left unused"
    METADATA_DEPENDENCIES = (ScopeProvider,)
    NEEDS_ORIGINAL: ClassVar[bool] = True
    # On the module as it was, "used before, unused now" holds for no name: the pipeline skips the
    # two scope analyses when no codemod of the run changed the file (a fifth of a platform batch).
    ONLY_AFTER_EDITS: ClassVar[bool] = True

    def __init__(self, context: CodemodContext, inputs: CodemodInputs,
                 original: Union[str, cst.Module, None] = None):
        super().__init__(context, inputs)
        original = original if original is not None else context.scratch.get(ORIGINAL_KEY)
        if original is None:
            raise ShrinkError(f"{self.NAME} needs the module as it was before this run's edits "
                              f"(pass original= or context.scratch[{ORIGINAL_KEY!r}])")
        self._original = original
        self._used_before: Optional[set[str]] = None
        module, _ = module_and_package(context)
        known = imported_names(inputs.removed)
        self._external: Optional[frozenset[str]] = None if known is None else known.get(module or "", frozenset())
        self._drop: set[cst.CSTNode] = set()  # import aliases and Assign/AnnAssign statements
        self._drop_blocks: set[cst.CSTNode] = set()  # module-level if/try statements that empty
        # The blank lines above a statement line that empties stay above the next statement of its block
        # (`from __future__ import annotations` / blank / `import logging` / `import math` keeps its blank)
        self._carry: list[cst.EmptyLine] = []
        self._carried: dict[int, list[cst.EmptyLine]] = {}

    def used_before(self) -> set[str]:
        if self._used_before is None:
            tree = cst.parse_module(self._original) if isinstance(self._original, str) else self._original
            self._used_before = _used_names(MetadataWrapper(tree, unsafe_skip_copy=True)) | _all_names(tree)
        return self._used_before

    def _protected(self, name: str, all_names: set[str]) -> bool:
        if name in all_names or (name.startswith("__") and name.endswith("__")):
            return True
        if "." in name:
            return False  # `import a.b` binds a module path nobody imports from here
        if self._external is None:
            return not name.startswith("_")  # unknown importers: public names may be imported
        return "*" in self._external and not name.startswith("_") or name in self._external

    # -- planning on the edited tree (module-level statements only)
    def _module_statements(self, module: cst.Module):
        """Module-level statements, with the compound ones (if/try/with/for) they sit in."""
        stack: list[cst.CSTNode] = list(reversed(module.body))
        while stack:
            stmt = stack.pop()
            yield stmt
            if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
                continue
            if isinstance(stmt, (cst.BaseCompoundStatement, cst.If)):
                for child in reversed(list(iter_statements_shallow(stmt))):
                    stack.append(child)

    def _newly_unused_local_imports(self, node: cst.Module) -> None:
        """A function's own import nothing there reads any more, that the function read before this run's
        edits (`is_hip` in fused_op's `_platform_key()` once its test folded), goes like a module-level one."""
        unread = {key: alias for key, (alias, read) in _local_imports(node, self.metadata[ScopeProvider]).items()
                  if not read}
        if not unread:
            return
        original = cst.parse_module(self._original) if isinstance(self._original, str) else self._original
        before = _local_imports(original, MetadataWrapper(original, unsafe_skip_copy=True).resolve(ScopeProvider))
        gone = [alias for key, alias in unread.items() if key in before and before[key][1]]
        self._drop.update(gone)
        self._enter_bodies = bool(gone)  # functions and classes are entered only for such an import

    def visit_Module(self, node: cst.Module) -> None:
        self._drop, self._drop_blocks = set(), set()
        self._enter_bodies = False
        self._newly_unused_local_imports(node)
        scope = self.get_metadata(ScopeProvider, node, None)
        if scope is None:
            return
        # module-level binding sites: import statements and single-target assignments by Name
        imports: dict[cst.CSTNode, cst.CSTNode] = {}  # Import/ImportFrom -> its statement line
        assigns: dict[cst.Name, cst.CSTNode] = {}  # target Name -> Assign/AnnAssign
        compounds: list[cst.BaseCompoundStatement] = []
        for stmt in self._module_statements(node):
            if isinstance(stmt, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
                for small in stmt.body:
                    if isinstance(small, (cst.Import, cst.ImportFrom)):
                        imports[small] = stmt
                    elif isinstance(small, cst.Assign) and len(small.targets) == 1 and \
                            isinstance(small.targets[0].target, cst.Name) and _side_effect_free(small.value):
                        assigns[small.targets[0].target] = small
                    elif isinstance(small, cst.AnnAssign) and isinstance(small.target, cst.Name) and \
                            _side_effect_free(small.value):
                        assigns[small.target] = small
            elif isinstance(stmt, (cst.If, cst.Try)):
                compounds.append(stmt)

        by_name: dict[str, list] = {}
        for assignment in scope.assignments:
            by_name.setdefault(assignment.name, []).append(assignment)
        all_names = _all_names(node)
        bindings: dict[str, list[cst.CSTNode]] = {}
        for name, group in by_name.items():
            if self._protected(name, all_names):
                continue
            found = [self._binding(a, imports, assigns) for a in group]
            if found and all(b is not None for b in found):
                sites = [b for b in found if b is not _PREFIX]
                if sites:
                    bindings[name] = sites  # type: ignore[assignment]
        if not bindings:
            return

        gone: set[int] = set()  # ids of nodes in code that goes (accesses there do not count)
        undecided = dict(bindings)
        before: Optional[set[str]] = None
        changed = True
        while changed:
            changed = False
            for name in list(undecided):
                if any(id(ref.node) not in gone for a in by_name[name] for ref in a.references):
                    continue
                if before is None:
                    before = self.used_before()
                del undecided[name]
                if name not in before and not (self._external is not None and self._platform_constant(bindings[name])):
                    continue  # unused upstream too: may be a re-export
                changed = True
                for site in bindings[name]:
                    self._drop.add(site)
                    _subtree_ids(site, gone)
            for block in compounds:  # blocks that empty take their tests and handlers with them
                if block not in self._drop_blocks and self._empties(block, imports):
                    self._drop_blocks.add(block)
                    _subtree_ids(block, gone)
                    changed = True

    def _platform_constant(self, sites: list[cst.CSTNode]) -> bool:
        """Every binding is an assignment of a platform predicate's value (`_is_hip = is_hip()`,
        `_use_aiter = is_hip() and is_gfx95()`): a platform fact nothing reads, not a re-export anyone
        takes (callers checked `Removed.imported`, which must be known: a private name is imported across
        modules too, `from deepseek_common.utils import _is_hip`), so it goes though upstream never read it."""
        return bool(sites) and all(isinstance(site, (cst.Assign, cst.AnnAssign)) and site.value is not None
                                   and self._predicate_value(site.value) for site in sites)

    def _predicate_value(self, node: cst.BaseExpression) -> bool:
        if isinstance(node, cst.Call) and not node.args and isinstance(node.func, cst.Name):
            return self.inputs.table.value(node.func.value, called=True) is not None
        if isinstance(node, cst.BooleanOperation):
            return self._predicate_value(node.left) and self._predicate_value(node.right)
        if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Not):
            return self._predicate_value(node.expression)
        return False

    def _empties(self, block: cst.BaseCompoundStatement, imports: dict) -> bool:
        if isinstance(block, cst.If):
            arms = [block.body]
            orelse = block.orelse
            while orelse is not None:
                if isinstance(orelse, cst.If):
                    if not pure_test(orelse.test):
                        return False
                    arms.append(orelse.body)
                    orelse = orelse.orelse
                else:
                    arms.append(orelse.body)
                    orelse = None
            return pure_test(block.test) and all(self._arm_goes(arm) for arm in arms)
        if isinstance(block, cst.Try):
            return self._arm_goes(block.body)
        return False

    def _arm_goes(self, suite: cst.BaseSuite) -> bool:
        statements = suite.body if isinstance(suite, cst.IndentedBlock) else [suite]
        for stmt in statements:
            if stmt in self._drop_blocks:
                continue
            smalls = getattr(stmt, "body", None)
            if not isinstance(stmt, (cst.SimpleStatementLine, cst.SimpleStatementSuite)) or not smalls:
                return False
            for small in smalls:
                if isinstance(small, (cst.Import, cst.ImportFrom)):
                    if isinstance(small.names, cst.ImportStar) or not all(a in self._drop for a in small.names):
                        return False
                elif small not in self._drop:
                    return False
        return True

    def _binding(self, assignment, imports: dict, assigns: dict) -> Optional[Union[Binding, object]]:
        """The removable node behind a module-level binding; _PREFIX for the `a` that `import a.b`
        also binds (it neither blocks nor goes: `a.b` decides); None when the binding must stay."""
        if isinstance(assignment, ImportAssignment):
            stmt = assignment.node
            if stmt not in imports or isinstance(stmt.names, cst.ImportStar):
                return None
            for alias in stmt.names:
                if alias.asname is not None or isinstance(stmt, cst.ImportFrom):
                    if (alias.evaluated_alias or alias.evaluated_name) == assignment.name:
                        return alias
                elif alias.evaluated_name == assignment.name:
                    return alias
                elif alias.evaluated_name.startswith(assignment.name + "."):
                    return _PREFIX
            return None
        if isinstance(assignment, Assignment) and assignment.node in assigns:
            return assigns[assignment.node]
        return None

    # -- editing (module level only: nothing inside functions or classes changes)
    def on_visit(self, node: cst.CSTNode) -> bool:
        if self._carry and isinstance(node, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
            self._carried[id(node)], self._carry = self._carry, []
        return super().on_visit(node)

    def on_leave(self, original_node, updated_node):
        updated = super().on_leave(original_node, updated_node)
        if isinstance(original_node, (cst.Module, cst.IndentedBlock)):
            self._carry = []  # the emptied line was its block's last: nothing below takes its blank lines
        blanks = self._carried.pop(id(original_node), None)
        if blanks and isinstance(updated, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
            own = _blank_run(updated.leading_lines)
            updated = updated.with_changes(
                leading_lines=[*blanks[len(own):], *updated.leading_lines])
        return updated

    def leave_SimpleStatementLine(self, original_node: cst.SimpleStatementLine,
                                  updated_node: cst.SimpleStatementLine):
        if updated_node.body:
            return updated_node
        blanks = _blank_run(updated_node.leading_lines)
        if len(blanks) > len(self._carry):
            self._carry = blanks
        return cst.RemoveFromParent()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return self._enter_bodies

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return self._enter_bodies

    def _import(self, original: Union[cst.Import, cst.ImportFrom], updated):
        if not self._drop or isinstance(original.names, cst.ImportStar):
            return updated
        flags = [a in self._drop for a in original.names]
        if not any(flags):
            return updated
        if all(flags):
            self.count("imports_removed")
            return cst.RemoveFromParent()
        by_id = {id(u): f for u, f in zip(updated.names, flags)}
        lead = updated.lpar.whitespace_after if isinstance(updated, cst.ImportFrom) and updated.lpar else None
        tail = updated.rpar.whitespace_before if isinstance(updated, cst.ImportFrom) and updated.rpar else None
        kept, lead, tail = drop_elements(updated.names, lambda a: by_id[id(a)], lead, tail)  # type: ignore[misc]
        self.count("import_names_removed", sum(flags))
        changes: dict = {"names": kept}
        if isinstance(updated, cst.ImportFrom) and updated.lpar:
            changes["lpar"] = updated.lpar.with_changes(whitespace_after=lead)
            changes["rpar"] = updated.rpar.with_changes(whitespace_before=tail)
        return updated.with_changes(**changes)

    def leave_Import(self, original_node: cst.Import, updated_node: cst.Import):
        return self._import(original_node, updated_node)

    def leave_ImportFrom(self, original_node: cst.ImportFrom, updated_node: cst.ImportFrom):
        return self._import(original_node, updated_node)

    def leave_Assign(self, original_node: cst.Assign, updated_node: cst.Assign):
        if original_node in self._drop:
            self.count("assignments_removed")
            return cst.RemoveFromParent()
        return updated_node

    def leave_AnnAssign(self, original_node: cst.AnnAssign, updated_node: cst.AnnAssign):
        return self.leave_Assign(original_node, updated_node)  # type: ignore[arg-type]

    def leave_If(self, original_node: cst.If, updated_node: cst.If):
        if original_node in self._drop_blocks:
            self.count("emptied_blocks_removed")
            return cst.RemoveFromParent()
        return updated_node

    def leave_Try(self, original_node: cst.Try, updated_node: cst.Try):
        if original_node not in self._drop_blocks:
            return updated_node
        # Nothing in the body can raise any more: the handlers never run, `else` always does.
        self.count("emptied_blocks_removed")
        rest = [*(updated_node.orelse.body.body if updated_node.orelse else ()),
                *(updated_node.finalbody.body.body if updated_node.finalbody else ())]
        if not rest:
            return cst.RemoveFromParent()
        rest[0] = rest[0].with_changes(leading_lines=[*updated_node.leading_lines, *rest[0].leading_lines])
        return cst.FlattenSentinel(rest)


_FROM_IMPORT = re.compile(r"^[ \t]*from[ \t]+\w[\w.]*[ \t]+import[ \t]+(\([^)]*\)|[^\n]*)", re.M)
_WORD = re.compile(r"[A-Za-z_]\w*")


class RemoveUnreadPredicateImports(RemoveNewlyUnusedNames):
    """Drop a rule predicate's import that nothing reads, though no edit of this run made it so (a final sweep).

    `remove_unused_names` takes only what the running batch left unused: bootstrap's `from sglang.srt.utils
    import cpu_has_amx_support` lost its last read in the platform batch while the plan still counted
    model_runner's `bootstrap` module object as reading it whole, and nothing visits the file again. The refold
    (apply/refold.py) runs this over the final tree: an absolute `from M import P` (at module level, or standing in
    a function's body) of a name the predicate table folds (`table.value(P, called=True)`), bound once, read by
    nothing in the file, in no `__all__`, and named by no other kept module (`mod.P`, `"mod:P"`: Removed.imported)
    goes; a submodule of that name (`from sglang.kernels.ops.gemm import mxfp8_amd_gfx95`, an import that runs
    the module) stays, so the sweep needs the kept tree's modules (`inputs.kept_modules`).
    A string naming the module whole (a logger key) does not keep it: a predicate is read from the module that
    defines it, never through one that imports it. The cascade is the parent's: a module flag only such a
    predicate set (`_is_hip = is_hip()`) goes with it."""

    NAME = "remove_unread_predicate_imports"
    DESCRIPTION = "drop imports of rule predicates nothing reads (the final sweep over the kept tree)"
    NEEDS_ORIGINAL: ClassVar[bool] = False
    ONLY_AFTER_EDITS: ClassVar[bool] = False

    def __init__(self, context: CodemodContext, inputs: CodemodInputs):
        super().__init__(context, inputs, original="")
        self._sweep: set[str] = set()  # module-level names bound by a predicate's import

    @classmethod
    def wants(cls, source: str, inputs: CodemodInputs) -> bool:
        return inputs.kept_modules is not None and any(inputs.table.value(word, called=True) is not None
                   for m in _FROM_IMPORT.finditer(source) for word in _WORD.findall(m.group(1)))

    def _predicate_aliases(self, node: cst.Module) -> dict[cst.ImportAlias, bool]:
        """The aliases of absolute `from M import P` statements anywhere in the module that import a folded
        predicate P which is no submodule of M, each with whether it stands at module level."""
        modules = self.inputs.kept_modules or frozenset()
        table = self.inputs.table
        found: dict[cst.ImportAlias, bool] = {}
        depth = [0]

        class Visit(cst.CSTVisitor):
            def visit_FunctionDef(self, _: cst.FunctionDef) -> None:
                depth[0] += 1

            def leave_FunctionDef(self, _: cst.FunctionDef) -> None:
                depth[0] -= 1

            def visit_ClassDef(self, _: cst.ClassDef) -> None:
                depth[0] += 1

            def leave_ClassDef(self, _: cst.ClassDef) -> None:
                depth[0] -= 1

            def visit_ImportFrom(self, stmt: cst.ImportFrom) -> None:
                if stmt.relative or stmt.module is None or isinstance(stmt.names, cst.ImportStar):
                    return
                source = cst.helpers.get_full_name_for_node(stmt.module) or ""
                for alias in stmt.names:
                    name = alias.name.value if isinstance(alias.name, cst.Name) else ""
                    if name and table.value(name, called=True) is not None and f"{source}.{name}" not in modules:
                        found[alias] = depth[0] == 0

        node.visit(Visit())
        return found

    def visit_Module(self, node: cst.Module) -> None:
        self._aliases = self._predicate_aliases(node)
        self._sweep = {alias.evaluated_alias or alias.evaluated_name
                       for alias, top in self._aliases.items() if top}
        super().visit_Module(node)

    def used_before(self) -> set[str]:
        return self._sweep  # only these count as "read once": nothing else is this sweep's business

    def _protected(self, name: str, all_names: set[str]) -> bool:
        if name in self._sweep:
            return name in all_names or self._external is None or name in self._external
        return super()._protected(name, all_names)

    def _newly_unused_local_imports(self, node: cst.Module) -> None:
        gone = [alias for alias, read in _local_imports(node, self.metadata[ScopeProvider]).values()
                if not read and alias in self._aliases]
        self._drop.update(gone)
        self._enter_bodies = bool(gone)


def iter_statements_shallow(stmt: cst.BaseCompoundStatement):
    """The statements directly inside a compound statement's blocks (elif/else/except/finally too);
    a one-line block (`if x: import y`) is yielded as its SimpleStatementSuite."""
    for child in stmt.children:
        if isinstance(child, cst.If):  # an `elif`
            yield child
        elif isinstance(child, (cst.BaseSuite, cst.Else, cst.ExceptHandler, cst.Finally)):
            body = child if isinstance(child, cst.BaseSuite) else child.body
            if isinstance(body, cst.IndentedBlock):
                yield from body.body
            else:
                yield body


def _empty(block: cst.BaseSuite) -> bool:
    """A block whose statements were all removed (libcst writes `pass` for it)."""
    body = block.body
    if isinstance(block, cst.IndentedBlock):
        return all(isinstance(s, cst.SimpleStatementLine) and not s.body for s in body)
    return not body
