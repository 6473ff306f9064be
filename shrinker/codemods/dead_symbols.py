"""Remove the symbols no kept code can reach: module-level functions, classes and side-effect-free
assignments, methods (and nested classes) of kept classes, and `from X import n` aliases.

Which ones is decided over the whole tree by the symbol graph (shrinker/symbols/graph.py): the
codemod gets, per module, a `DeadSymbols` in `inputs.removed.dead_symbols` ({module: DeadSymbols})
and removes exactly the statements that bind those names:
  - `names`: every module-body `def` / `async def` / `class` of that name, and every module-body
    `NAME = value` / `NAME: T = value` whose value is side-effect free (the graph's own test,
    `shrinker.symbols.facts.pure`, with the same `pure_calls`): an assignment with effects stays;
  - `members` ("Class.name"): every `def` / `class` of that name in the class body itself
    (a property and its setter go together), and a class-body `NAME = value` line (an entry of a
    table class that rules.attribute_tables names, such as the environment variables' `Envs`);
  - `imports` ((absolute module, name, alias)): that alias of a module-level `from module import`
    (at any depth of module-level if / try / with), relative imports resolved against the file;
  - and the strings naming any of these in a module-level `__all__ = [...]` / `__all__ += [...]`
    (the graph counts `__all__` as a use only when some module star-imports the module).
A block left empty gets `pass`. Comments: a comment block directly above a removed statement
(no blank line between) goes with it; comments separated from it by a blank line, and headings
framed by rule lines (`# -----`), stay, moved onto the next statement (a heading whose whole
section went is dropped when the next statement brings its own). Everything else stays byte for byte; a second run
with the same inputs changes nothing.

SGLang shapes: unused helpers in utils modules (`sglang.srt.utils.common`), classes of removed
features left in shared modules, methods nothing calls (`Scheduler.*`), and the `from ... import`
lines that only re-exported them.
"""

from __future__ import annotations

import ast
from typing import Optional, Sequence, Union

import libcst as cst
from libcst.codemod import CodemodContext, SkipFile
from libcst.helpers import get_full_name_for_node

from shrinker.codemods.base import ShrinkCodemod
from shrinker.codemods.elements import drop_elements, drop_from_literal
from shrinker.codemods.registries import string_value
from shrinker.codemods.inputs import CodemodInputs
from shrinker.codemods.removed_imports import module_and_package
from shrinker.graph.parse import resolve_relative
from shrinker.symbols.facts import pure
from shrinker.symbols.graph import DeadSymbols

_EMPTY = cst.Module(body=[])
_DEFS = (cst.FunctionDef, cst.ClassDef)
Block = Union[cst.Module, cst.IndentedBlock]


def dead_symbols_of(inputs: CodemodInputs, module: Optional[str]) -> Optional[DeadSymbols]:
    plan = getattr(inputs.removed, "dead_symbols", None)
    return plan.get(module) if plan and module else None


def _non_blank(node: cst.CSTNode) -> int:
    return sum(1 for line in _EMPTY.code_for_node(node).splitlines() if line.strip())


def _ruled(line: cst.EmptyLine) -> bool:
    """A heading rule, `# -----` / `# =====` (SGLang frames section titles in ServerArgs with them)."""
    text = line.comment.value.lstrip("#").strip() if line.comment else ""
    return len(text) >= 5 and len(set(text)) == 1 and text[0] in "-=#*~"


def _headed(lines: Sequence[cst.EmptyLine]) -> bool:
    return any(_ruled(line) for line in lines)


def _detached(lines: Sequence[cst.EmptyLine]) -> list[cst.EmptyLine]:
    """The leading lines of a removed statement that stay: comments separated from it by a blank
    line (with the lines before them), and a section heading framed by rule lines; any other
    comment block directly above it goes with it."""
    last_blank = max((i for i, line in enumerate(lines) if line.comment is None), default=-1)
    if _headed(lines[last_blank + 1:]):
        last_blank = len(lines)  # the block is a heading of what follows, not the statement's comment
    head = list(lines[:last_blank])
    while head and head[-1].comment is None:  # the next statement brings its own blank lines
        head.pop()
    return head


def _assigned_name(small: cst.BaseSmallStatement) -> Optional[str]:
    """NAME of `NAME = value` / `NAME: T = value` (the class attributes the graph can find dead)."""
    if isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(small.targets[0].target, cst.Name):
        return small.targets[0].target.value
    if isinstance(small, cst.AnnAssign) and small.value is not None and isinstance(small.target, cst.Name):
        return small.target.value
    return None


def _pass_line(leading: list[cst.EmptyLine]) -> cst.SimpleStatementLine:
    return cst.SimpleStatementLine(body=[cst.Pass()], leading_lines=leading)


class RemoveDeadSymbols(ShrinkCodemod):
    NAME = "remove_dead_symbols"
    DESCRIPTION = "remove functions, classes, methods, assignments and import aliases no kept code references"

    def __init__(self, context: CodemodContext, inputs: CodemodInputs) -> None:
        super().__init__(context, inputs)
        module, package = module_and_package(context)
        self.module_name = module or ""
        self.is_package = bool(module) and module == package
        self.dead = dead_symbols_of(inputs, module)

    # -- entry ------------------------------------------------------------------------------------
    def transform_module_impl(self, tree: cst.Module) -> cst.Module:
        if not self.dead:
            raise SkipFile("no dead symbols in this module")
        body, carry = self._block(tree.body, top=True)
        if body is None:
            return tree
        return tree.with_changes(body=body, footer=[*carry, *tree.footer])

    # -- statements of one block ------------------------------------------------------------------
    def _block(self, stmts: Sequence[cst.BaseStatement], *, top: bool = False, cls: str = ""
               ) -> tuple[Optional[list[cst.BaseStatement]], list[cst.EmptyLine]]:
        """The block's statements after removal (None: unchanged) and comments left for its footer."""
        out: list[cst.BaseStatement] = []
        carry: list[cst.EmptyLine] = []
        changed = False
        for stmt in stmts:
            new = self._statement(stmt, top=top, cls=cls)
            if carry and new is not None and _headed(carry) and _headed(new.leading_lines):
                carry = []  # a heading whose whole section went: the next statement opens a section of its own
            if new is stmt:
                if carry:
                    stmt = stmt.with_changes(leading_lines=[*carry, *stmt.leading_lines])
                    carry = []
                out.append(stmt)
                continue
            changed = True
            if new is None:
                carry.extend(_detached(stmt.leading_lines))
                continue
            if carry:
                new = new.with_changes(leading_lines=[*carry, *new.leading_lines])
                carry = []
            out.append(new)
        return (out if changed else None), carry

    def _statement(self, stmt: cst.BaseStatement, *, top: bool, cls: str) -> Optional[cst.BaseStatement]:
        """`stmt` itself when it stays as is, a new statement, or None when it goes."""
        dead = self.dead
        assert dead is not None
        if isinstance(stmt, _DEFS):
            name = stmt.name.value
            if cls:
                if f"{cls}.{name}" in dead.members:
                    self.count("methods" if isinstance(stmt, cst.FunctionDef) else "nested_classes")
                    self.count("lines", _non_blank(stmt))
                    return None
                return stmt
            if top and name in dead.names:
                self.count("functions" if isinstance(stmt, cst.FunctionDef) else "classes")
                self.count("lines", _non_blank(stmt))
                return None
            if top and isinstance(stmt, cst.ClassDef) and any(m.startswith(name + ".") for m in dead.members):
                return self._class(stmt)
            return stmt
        if cls:
            if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and \
                    f"{cls}.{_assigned_name(stmt.body[0])}" in dead.members:
                self.count("class_attributes")
                self.count("lines", _non_blank(stmt))
                return None
            return stmt
        if isinstance(stmt, cst.SimpleStatementLine):
            return self._simple_line(stmt, top=top)
        if isinstance(stmt, (cst.If, cst.Try, cst.TryStar, cst.With)) and dead.imports:
            return self._compound(stmt)
        return stmt

    def _class(self, node: cst.ClassDef) -> cst.ClassDef:
        body = node.body
        if not isinstance(body, cst.IndentedBlock):
            return node
        stmts, carry = self._block(body.body, cls=node.name.value)
        if stmts is None:
            return node
        if not stmts:
            stmts, carry = [_pass_line(carry)], []
        return node.with_changes(body=body.with_changes(body=stmts, footer=[*carry, *body.footer]))

    def _suite(self, suite: cst.BaseSuite) -> cst.BaseSuite:
        """A module-level compound statement's suite, with dead import aliases removed."""
        if not isinstance(suite, cst.IndentedBlock):
            line = cst.SimpleStatementLine(body=suite.body)  # `if x: from a import b`
            new = self._simple_line(line, top=False)
            if new is line:
                return suite
            body = new.body if new is not None else [cst.Pass()]
            return suite.with_changes(body=body)
        stmts, carry = self._block(suite.body)
        if stmts is None:
            return suite
        if not stmts:
            stmts, carry = [_pass_line(carry)], []
        return suite.with_changes(body=stmts, footer=[*carry, *suite.footer])

    def _compound(self, stmt: cst.BaseStatement) -> cst.BaseStatement:
        if isinstance(stmt, cst.If):
            orelse = stmt.orelse
            if isinstance(orelse, cst.If):
                orelse = self._compound(orelse)
            elif isinstance(orelse, cst.Else):
                orelse = orelse.with_changes(body=self._suite(orelse.body))
            new = stmt.with_changes(body=self._suite(stmt.body), orelse=orelse)
        elif isinstance(stmt, (cst.Try, cst.TryStar)):
            handlers = [h.with_changes(body=self._suite(h.body)) for h in stmt.handlers]
            orelse = stmt.orelse.with_changes(body=self._suite(stmt.orelse.body)) if stmt.orelse else None
            final = stmt.finalbody.with_changes(body=self._suite(stmt.finalbody.body)) if stmt.finalbody else None
            new = stmt.with_changes(body=self._suite(stmt.body), handlers=handlers, orelse=orelse, finalbody=final)
        elif isinstance(stmt, cst.With):
            new = stmt.with_changes(body=self._suite(stmt.body))
        else:
            return stmt
        return stmt if new.deep_equals(stmt) else new

    # -- simple statements ------------------------------------------------------------------------
    def _simple_line(self, line: cst.SimpleStatementLine, *, top: bool) -> Optional[cst.SimpleStatementLine]:
        dead = self.dead
        assert dead is not None
        kept: list[cst.BaseSmallStatement] = []
        changed = False
        for small in line.body:
            if top and self._dead_assignment(small, len(line.body)):
                self.count("assignments")
                self.count("lines", _non_blank(line) if len(line.body) == 1 else 0)
                changed = True
                continue
            if top and (pruned := self._exports(small)) is not small:
                changed = True
                kept.append(pruned)
                continue
            if isinstance(small, cst.ImportFrom) and dead.imports:
                new = self._import_from(small)
                if new is not small:
                    changed = True
                    if new is not None:
                        kept.append(new)
                    continue
            kept.append(small)
        if not changed:
            return line
        if not kept:
            return None
        last = kept[-1]
        if isinstance(getattr(last, "semicolon", None), cst.Semicolon):
            kept[-1] = last.with_changes(semicolon=cst.MaybeSentinel.DEFAULT)
        return line.with_changes(body=kept)

    def _exports(self, small: cst.BaseSmallStatement) -> cst.BaseSmallStatement:
        """`__all__ = [...]` / `__all__ += [...]` without the names that go (a name `from m import *`
        would fail on); `small` itself when nothing changes."""
        if not isinstance(small, (cst.Assign, cst.AugAssign, cst.AnnAssign)):
            return small
        target = small.targets[0].target if isinstance(small, cst.Assign) and len(small.targets) == 1 \
            else getattr(small, "target", None)
        if not (isinstance(target, cst.Name) and target.value == "__all__"):
            return small
        if not isinstance(small.value, (cst.List, cst.Tuple)):
            return small
        gone = self._gone_names()
        new_value = drop_from_literal(small.value, lambda e: isinstance(e, cst.Element) and
                                      string_value(e.value) in gone)
        if new_value is None:
            return small
        self.count("export_names", len(small.value.elements) - len(new_value.elements))
        return small.with_changes(value=new_value)

    def _gone_names(self) -> frozenset[str]:
        dead = self.dead
        assert dead is not None
        return frozenset(dead.names) | {alias for _, _, alias in dead.imports}

    def _dead_assignment(self, small: cst.BaseSmallStatement, siblings: int) -> bool:
        dead = self.dead
        assert dead is not None
        if isinstance(small, cst.Assign):
            if len(small.targets) != 1 or not isinstance(small.targets[0].target, cst.Name):
                return False
            name, value = small.targets[0].target.value, small.value
        elif isinstance(small, cst.AnnAssign):
            if not isinstance(small.target, cst.Name):
                return False
            name, value = small.target.value, small.value
        else:
            return False
        if name not in dead.names:
            return False
        if value is None:
            return True
        try:
            expr = ast.parse("(" + _EMPTY.code_for_node(value) + "\n)", mode="eval").body
        except SyntaxError:
            return False
        return pure(expr, dead.pure_calls)

    def _import_from(self, node: cst.ImportFrom) -> Optional[cst.ImportFrom]:
        dead = self.dead
        assert dead is not None
        if isinstance(node.names, cst.ImportStar):
            return node
        level = len(node.relative)
        dotted = get_full_name_for_node(node.module) if node.module is not None else ""
        target = resolve_relative(self.module_name, self.is_package, level, dotted or "")

        def gone(alias: cst.ImportAlias) -> bool:
            name = get_full_name_for_node(alias.name) or ""
            bound = alias.asname.name.value if alias.asname and isinstance(alias.asname.name, cst.Name) else name
            return (target, name, bound) in dead.imports

        names = list(node.names)
        if not any(gone(a) for a in names):
            return node
        lead = node.lpar.whitespace_after if node.lpar else None
        tail = node.rpar.whitespace_before if node.rpar else None
        result = drop_elements(names, gone, lead, tail)
        assert result is not None
        kept, lead, tail = result
        self.count("import_names", len(names) - len(kept))
        if not kept:
            return None
        changes: dict = {"names": kept}
        if node.lpar:
            changes["lpar"] = node.lpar.with_changes(whitespace_after=lead)
            changes["rpar"] = node.rpar.with_changes(whitespace_before=tail)  # type: ignore[union-attr]
        return node.with_changes(**changes)
