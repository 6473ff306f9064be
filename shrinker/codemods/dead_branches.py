"""Remove the branches that are dead on NVIDIA CUDA (tests decided by the platform predicates).

SGLang shapes handled (v0.5.16):
- `if _is_hip:` / `if is_npu():` / `if current_platform.is_npu():` / `if _use_aiter:` blocks: removed;
- `if not _is_npu:` / `if _is_cuda:` blocks: the body is inlined (dedented by libcst), the comment
  after the colon and the comments above the `if` move onto the first inlined line;
- `if`/`elif`/`else` chains (`if _is_cuda: A elif _is_hip: B else: C` -> `A`;
  `if x: A elif is_npu(): B else: C` -> `if x: A else: C`; a kept `elif` becomes the `if` when the
  branches above it are dead);
- ternaries: `a if _is_hip else b` -> `b`; comprehension filters `if not _is_npu` that are always true;
- `try: import aiter ... except ImportError: <CUDA path>` (first statement of the try imports a
  package of rules.platform.packages, so on CUDA it always raises): replaced by the handler that
  catches the ImportError (plus any `finally`); the `else:` is dropped. Kept when the handler
  uses the bound exception (`except ImportError as e: ... e ...`) or an earlier handler is unknown.
- code after an inlined `return`/`raise`/`continue`/`break` is unreachable and goes
  (`if not _is_npu: return None` at the top of an NPU-only helper leaves `return None`);
- a predicate called alone on a line (`use_mlx()`, 0.5.19; `maybe_pre_warm_aiter_chip_info()`) goes:
  its value is discarded, and on CUDA the rules fix it;
- a block that empties gets `pass`; an `else:` that empties is dropped.

A test is decided only when a platform predicate folds in it and every dropped operand is free of
side effects (see fold_platform); literal `if True:` written upstream stays (CuTe DSL code uses it).
Tests still holding a predicate next to a call with side effects are reported. `while` and `assert`
are never touched.
"""

from __future__ import annotations

import builtins
import re
from typing import ClassVar, Optional, Sequence, Union

import libcst as cst
import libcst.matchers

from shrinker.codemods.base import (
    ShrinkCodemod,
    block_statements,
    header_comment,
    only_pass,
    pass_block,
    swap_expression,
    unwrap,
    with_leading_lines,
)
from shrinker.codemods.fold_platform import PredicateScope, predicate_triggers
from shrinker.codemods.inputs import CodemodInputs

def _triggers(inputs: CodemodInputs) -> re.Pattern:
    return predicate_triggers(inputs, extra=tuple(inputs.rules.platform.packages))


_Statement = Union[cst.BaseStatement, cst.FlattenSentinel, cst.RemovalSentinel]


def _import_roots(stmt: cst.BaseStatement) -> list[str]:
    """Top-level package names imported by the first small statement of a line, if it imports."""
    if not isinstance(stmt, cst.SimpleStatementLine) or not stmt.body:
        return []
    first = stmt.body[0]
    if isinstance(first, cst.Import):
        return [cst.helpers.get_full_name_for_node(a.name).split(".")[0] for a in first.names]
    if isinstance(first, cst.ImportFrom) and not first.relative and first.module is not None:
        return [cst.helpers.get_full_name_for_node(first.module).split(".")[0]]
    return []


def _catches_import_error(handler_type: Optional[cst.BaseExpression]) -> Optional[bool]:
    """Does `except <type>` catch ModuleNotFoundError? None when the type is not a known builtin."""
    if handler_type is None:
        return True
    if isinstance(handler_type, cst.Tuple):
        answers = [_catches_import_error(e.value) for e in handler_type.elements]
        if any(a is True for a in answers):
            return True
        return None if any(a is None for a in answers) else False
    if isinstance(handler_type, cst.Name):
        cls = getattr(builtins, handler_type.value, None)
        if isinstance(cls, type) and issubclass(cls, BaseException):
            return issubclass(ModuleNotFoundError, cls)
    return None


def _walk(node: cst.CSTNode, into_functions: bool = True):
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        if into_functions or not isinstance(current, (cst.FunctionDef, cst.Lambda)):
            stack.extend(current.children)


def _terminates(stmt: cst.BaseStatement) -> bool:
    """A line ending in return/raise/continue/break: what follows it in its block never runs."""
    return (isinstance(stmt, cst.SimpleStatementLine) and bool(stmt.body)
            and isinstance(stmt.body[-1], (cst.Return, cst.Raise, cst.Continue, cst.Break)))


def _leading_blanks(stmt: cst.BaseStatement) -> int:
    count = 0
    for line in stmt.leading_lines:
        if line.comment is not None:
            break
        count += 1
    return count


def _name_count(node: cst.CSTNode, name: str) -> int:
    return len(cst.matchers.findall(node, cst.matchers.Name(name)))


def _uses_name(node: cst.CSTNode, name: str) -> bool:
    found = False

    class _Finder(cst.CSTVisitor):
        def visit_Name(self, n: cst.Name) -> None:
            nonlocal found
            if n.value == name:
                found = True

    node.visit(_Finder())
    return found


class RemoveDeadBranches(PredicateScope, ShrinkCodemod):
    """Remove or inline branches whose test the platform predicates decide on CUDA."""

    NAME = "remove_dead_branches"
    DESCRIPTION = "remove dead if/elif/else branches, ternaries and platform try-imports; inline live ones"

    # fold_platform rewrote `_is_gfx1250 = _is_hip and ...` to `= False` before this runs: the module's
    # constants are read from the file as it was before this run (module_constants needs the predicate)
    NEEDS_ORIGINAL: ClassVar[bool] = True
    DROPS_ATTRIBUTE_STORES: ClassVar[bool] = False  # at the end, where no read is left (PredicateScope)

    def __init__(self, context, inputs: CodemodInputs, original: Optional[cst.Module] = None) -> None:
        super().__init__(context, inputs)
        self._setup_folding(inputs)
        self._original = original
        self._elifs: set[int] = set()
        # Nodes this transform made, by id; the dicts hold the nodes too, so no id is reused by a node
        # made later while the transform runs (a freed node's address can be, and then the answer would
        # depend on memory layout).
        self._wrapped: dict[int, cst.CSTNode] = {}
        self._terminators: dict[int, cst.CSTNode] = {}  # inlined statements that always leave their block
        self._packages = frozenset(inputs.rules.platform.packages)
        # (kept Try node, original node, message): reported only if the Try survives the whole visit
        # (a kept try-import inside `if _is_hip:` goes with its branch: nothing to report then).
        self._try_findings: list[tuple[cst.Try, cst.Try, str]] = []
        # (kept test, original node, message): a test kept for its side effects, reported if it survives
        self._test_findings: list[tuple[cst.CSTNode, cst.CSTNode, str]] = []  # (kept test or filter, original, message)
        self._scopes: list[cst.FunctionDef] = []  # enclosing functions (original nodes)

    @classmethod
    def wants(cls, source: str, inputs: CodemodInputs) -> bool:
        from shrinker.codemods.fold_platform import mentions_removed_module

        return _triggers(inputs).search(source) is not None or mentions_removed_module(source, inputs)

    def prune_pattern(self) -> re.Pattern:
        return _triggers(self.inputs)

    def transform_module(self, tree: cst.Module) -> cst.Module:
        self._bind_module(tree, self._original)
        return super().transform_module(tree)

    # -- deciding a test -------------------------------------------------------------------------
    def _decide(self, test: cst.BaseExpression, where: cst.CSTNode) -> Optional[bool]:
        folded = self.folder.fold(test)
        if not folded.pred:
            return None
        if folded.value is not None and folded.pure:
            return folded.value
        if folded.node is test:  # a predicate next to an operand that must be evaluated
            # reported only if the test survives the visit: inside `elif _is_hip:` it goes with its branch
            self._test_findings.append((test, where, "platform test kept: an operand may have side effects: "
                                        + cst.Module([]).code_for_node(test).strip()))
        return None

    # -- if / elif / else ----------------------------------------------------------------------
    def visit_If(self, node: cst.If) -> Optional[bool]:
        if isinstance(node.orelse, cst.If):
            self._elifs.add(id(node.orelse))
        return True

    def leave_If(self, original_node: cst.If, updated_node: cst.If) -> _Statement:
        updated_node = self._drop_emptied_else(original_node, updated_node)
        if id(original_node) in self._elifs:
            return updated_node  # decided with its whole chain, at the `if`
        branches: list[tuple[cst.If, cst.If]] = []  # (updated, original) per `if`/`elif`
        node, orig = updated_node, original_node
        while True:
            branches.append((node, orig))
            if not isinstance(node.orelse, cst.If):
                break
            node, orig = node.orelse, orig.orelse
        tail: Optional[cst.Else] = node.orelse  # what runs when no kept test holds

        kept: list[cst.If] = []
        changed = False
        bind_none: list[str] = []  # `if x := <returns None>(...):` decided: x is None after it
        for branch, orig in branches:
            value = self._decide(branch.test, orig)
            if value is not None and self._binding_read(orig, value, bind_none if orig is original_node else None):
                value = None
            if value is None:
                kept.append(branch)
                continue
            changed = True
            self.count("branches_decided")
            if value:  # later branches and the else are dead; this body is what runs
                lines = branch.leading_lines if branch is not updated_node else []
                tail = cst.Else(body=branch.body, leading_lines=lines)
                break
        if not changed:
            return updated_node
        if tail is not None and only_pass(block_statements(tail.body)):
            tail = None
        bindings = [cst.SimpleStatementLine([cst.Assign([cst.AssignTarget(cst.Name(n))], cst.Name("None"))])
                    for n in bind_none]

        if not kept:
            if tail is None and not bindings:
                self.count("blocks_removed")
                return cst.RemoveFromParent()
            self.count("blocks_inlined")
            body = block_statements(tail.body) if tail is not None else []
            lines = [*updated_node.leading_lines, *(tail.leading_lines if tail is not None else []),
                     *(header_comment(tail.body) if tail is not None else [])]
            statements = with_leading_lines([*bindings, *body], lines)
            if _terminates(statements[-1]):
                self._terminators[id(statements[-1])] = statements[-1]
            return cst.FlattenSentinel(statements)

        # Rebuild the chain from the kept branches; the first becomes the `if`.
        chain: Optional[Union[cst.If, cst.Else]] = tail
        for branch in reversed(kept):
            chain = branch.with_changes(orelse=chain)
        assert isinstance(chain, cst.If)
        if kept[0] is not updated_node:
            chain = chain.with_changes(leading_lines=[*updated_node.leading_lines, *kept[0].leading_lines])
        if bindings:
            lines = chain.leading_lines
            return cst.FlattenSentinel([*with_leading_lines(bindings, lines), chain.with_changes(leading_lines=[])])
        return chain

    # -- `if cfg := mambaish_config(x):` -------------------------------------------------------
    def visit_FunctionDef(self, node: cst.FunctionDef) -> Optional[bool]:
        self._scopes.append(node)
        return super().visit_FunctionDef(node)

    def leave_FunctionDef(self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef):
        self._scopes.pop()
        return super().leave_FunctionDef(original_node, updated_node)

    def _binding_read(self, branch: cst.If, value: bool, bind_none: list[str] | None = None) -> bool:
        """A decided test that binds a name (`cfg := ...`) may go only when nothing but the code going
        with it reads the name: the test itself, and the body too when the branch is dead. Or, for the
        `if` of a chain (`bind_none` given), when the test is exactly `name := f(...)` with f a rule's
        `returns_none` predicate: the name is then None, and bind_none gets it (`name = None` stays)."""
        targets = [n.target.value for n in cst.matchers.findall(branch.test, cst.matchers.NamedExpr())
                   if isinstance(n.target, cst.Name)]
        if not targets:
            return False
        scope = self._scopes[-1] if self._scopes else self.module
        for name in targets:
            going = _name_count(branch.test, name) + (0 if value else _name_count(branch.body, name))
            if _name_count(scope, name) > going:
                if bind_none is not None and not value and self._returns_none(branch.test, name):
                    bind_none.append(name)
                    continue
                self.report(branch, f"test kept: {name}, bound by its assignment expression, is read elsewhere")
                return True
        return False

    def _returns_none(self, test: cst.BaseExpression, name: str) -> bool:
        """`name := f(...)` (the whole test) where the rules say f returns None."""
        if not (isinstance(test, cst.NamedExpr) and isinstance(test.target, cst.Name) and test.target.value == name
                and isinstance(test.value, cst.Call)):
            return False
        func = test.value.func
        callee = func.value if isinstance(func, cst.Name) else func.attr.value if isinstance(func, cst.Attribute) else ""
        return bool(callee) and self.folder.table.returns_none(callee)

    def _drop_emptied_else(self, original_node: cst.If, updated_node: cst.If) -> cst.If:
        """`else:` whose body this transform emptied (now `pass`) goes."""
        new, old = updated_node.orelse, original_node.orelse
        if (isinstance(new, cst.Else) and isinstance(old, cst.Else)
                and only_pass(block_statements(new.body)) and not only_pass(block_statements(old.body))):
            self.count("empty_else_removed")
            return updated_node.with_changes(orelse=None)
        return updated_node

    # -- ternaries and comprehension filters ---------------------------------------------------
    def leave_IfExp(self, original_node: cst.IfExp, updated_node: cst.IfExp) -> cst.BaseExpression:
        value = self._decide(updated_node.test, original_node)
        if value is None:
            return updated_node
        self.count("ternaries_decided")
        new = swap_expression(updated_node, updated_node.body if value else updated_node.orelse)
        if new.lpar and not (updated_node.body if value else updated_node.orelse).lpar:
            self._wrapped[id(new)] = new  # parentheses moved from the ternary: maybe redundant now
        return new

    # -- a predicate called for nothing ------------------------------------------------------------
    def leave_SimpleStatementLine(self, original_node: cst.SimpleStatementLine,
                                  updated_node: cst.SimpleStatementLine) -> _Statement:
        """A call the rules make a platform predicate, alone on a line: its value is discarded and on
        CUDA the call does nothing, so the statement goes like a dead branch. 0.5.19's
        handle_hardware_runtime_validation calls `use_mlx()` (False: SGLANG_USE_MLX is unset, so
        nothing is validated); 0.5.16's prefill graph runner calls `maybe_pre_warm_aiter_chip_info()`
        (`*aiter*`: it returns at once unless SGLANG_USE_AITER and is_hip()). The folder already
        treats predicate calls as free of side effects wherever it drops one."""
        if len(updated_node.body) != 1 or not isinstance(updated_node.body[0], cst.Expr):
            return updated_node
        value = updated_node.body[0].value
        if not isinstance(value, cst.Call):
            return updated_node
        folded = self.folder.fold(value)
        if folded.pred and folded.pure and folded.value is not None:
            self.count("predicate_statements_removed")
            return cst.RemoveFromParent()
        return updated_node

    def _unwrap(self, node: Optional[cst.BaseExpression]) -> Optional[cst.BaseExpression]:
        if node is not None and id(node) in self._wrapped:
            return unwrap(node)
        return node

    # A ternary replaced by an atom needs no parentheses as a whole value / argument / return value.
    def leave_Assign(self, original_node: cst.Assign, updated_node: cst.Assign) -> cst.Assign:
        value = self._unwrap(updated_node.value)
        return updated_node if value is updated_node.value else updated_node.with_changes(value=value)

    def leave_AnnAssign(self, original_node: cst.AnnAssign, updated_node: cst.AnnAssign) -> cst.AnnAssign:
        value = self._unwrap(updated_node.value)
        return updated_node if value is updated_node.value else updated_node.with_changes(value=value)

    def leave_Arg(self, original_node: cst.Arg, updated_node: cst.Arg) -> cst.Arg:
        value = self._unwrap(updated_node.value)
        return updated_node if value is updated_node.value else updated_node.with_changes(value=value)

    def leave_Return(self, original_node: cst.Return, updated_node: cst.Return) -> cst.Return:
        value = self._unwrap(updated_node.value)
        if value is updated_node.value:
            return updated_node
        ws = updated_node.whitespace_after_return
        if isinstance(ws, cst.SimpleWhitespace) and ws.value == "":
            ws = cst.SimpleWhitespace(" ")
        return updated_node.with_changes(value=value, whitespace_after_return=ws)

    def leave_CompFor(self, original_node: cst.CompFor, updated_node: cst.CompFor) -> cst.CompFor:
        ifs = []
        for comp_if, orig in zip(updated_node.ifs, original_node.ifs):
            value = self._decide(comp_if.test, orig)
            if value is True:
                self.count("filters_removed")
                continue
            if value is False:  # a finding only where the comprehension survives (not after an inlined return)
                self._test_findings.append((comp_if, orig, "comprehension filter is always false on CUDA: kept"))
            ifs.append(comp_if)
        if len(ifs) == len(updated_node.ifs):
            return updated_node
        return updated_node.with_changes(ifs=ifs)

    # -- try: import <platform package> except ImportError -------------------------------------
    def leave_Try(self, original_node: cst.Try, updated_node: cst.Try) -> _Statement:
        body = updated_node.body.body
        if not body or not any(root in self._packages for root in _import_roots(body[0])):
            return updated_node
        handler = None
        for candidate in updated_node.handlers:
            catches = _catches_import_error(candidate.type)
            if catches is None:
                self._try_findings.append((updated_node, original_node, "platform try-import kept: unknown exception type in a handler"))
                return updated_node
            if catches:
                handler = candidate
                break
        if handler is None:
            self._try_findings.append((updated_node, original_node, "platform try-import kept: no handler catches ImportError"))
            return updated_node
        if handler.name is not None and _uses_name(handler.body, handler.name.name.value):
            self._try_findings.append((updated_node, original_node, "platform try-import kept: the handler uses the exception"))
            return updated_node
        statements = block_statements(handler.body)
        if updated_node.finalbody is not None:
            statements += block_statements(updated_node.finalbody.body)
        statements = [s for s in statements if not only_pass([s])]
        self.count("platform_try_imports")
        if not statements:
            return cst.RemoveFromParent()
        comments = [line for line in (*handler.leading_lines, *header_comment(handler.body)) if line.comment]
        lines = [*updated_node.leading_lines, *comments]
        return cst.FlattenSentinel(with_leading_lines(statements, lines))

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        body = self._cut_unreachable(updated_node.body)
        if body and original_node.body and not _leading_blanks(original_node.body[0]):
            # The first statements went: the file does not start with the blank lines between them.
            blanks = _leading_blanks(body[0])
            if blanks:
                body = [body[0].with_changes(leading_lines=body[0].leading_lines[blanks:]), *body[1:]]
        result = updated_node if body is updated_node.body else updated_node.with_changes(body=body)
        result = self.drop_unread_attribute_stores(result)
        if self._try_findings:
            alive = {id(n) for n in _walk(result, into_functions=False)}
            for kept, original, message in self._try_findings:
                if id(kept) in alive:  # module level and surviving: a function-level one runs as upstream's
                    self.report(original, message)
        if self._test_findings:
            alive = {id(n) for n in _walk(result)}
            for test, original, message in self._test_findings:
                if id(test) in alive:
                    self.report(original, message)
        return result

    def _cut_unreachable(self, body: Sequence[cst.BaseStatement]) -> Sequence[cst.BaseStatement]:
        """Statements after an inlined `return`/`raise`/`continue`/`break` never run: they go."""
        if not self._terminators:
            return body
        for index, stmt in enumerate(body):
            if id(stmt) in self._terminators and index + 1 < len(body):
                self.count("unreachable_removed", len(body) - index - 1)
                return body[:index + 1]
        return body

    # -- blocks that emptied -------------------------------------------------------------------
    def leave_IndentedBlock(self, original_node: cst.IndentedBlock,
                            updated_node: cst.IndentedBlock) -> cst.IndentedBlock:
        body = self._cut_unreachable(updated_node.body)
        if body is not updated_node.body:
            updated_node = updated_node.with_changes(body=body)
        if not updated_node.body and original_node.body:
            self.count("blocks_emptied")
            return pass_block(updated_node)
        return updated_node
