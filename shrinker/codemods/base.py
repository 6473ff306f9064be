"""The convention every shrinker codemod follows (libcst codemod style, one transform per class).

A codemod is a `libcst.codemod.ContextAwareTransformer` subclass:

    class FoldPlatformPredicates(ShrinkCodemod):
        NAME = "fold_platform"            # the name rules/<profile>.toml [[batches]].codemods use
        DESCRIPTION = "..."

        def leave_If(self, original_node, updated_node):
            ...
            self.count("if_tests")         # what it changed, for apply.json / the batch report
            self.report(original_node, "why something was left")   # a finding: path:line + message
            return new_node

constructed as `Cls(context: CodemodContext, inputs: CodemodInputs)` and run with libcst's own
`transform_module(tree)` (metadata providers resolve as usual: declare METADATA_DEPENDENCIES).

Two departures from a stock ContextAwareTransformer, both for speed and both safe because the
pipeline owns the tree it parsed:
- the metadata wrapper is built with `unsafe_skip_copy=True` (stock libcst deep-copies the whole
  module for every transform even when no metadata is needed: about as costly as the transform);
- a finding is positioned lazily: `report(node, msg)` keeps the original node and its line is only
  computed (PositionProvider) when a transform produced findings, on the tree it visited.
"""

from __future__ import annotations

from collections import Counter
from contextlib import contextmanager
from dataclasses import replace
import re
from typing import ClassVar, Generator, Optional

import libcst as cst
from libcst.codemod import CodemodContext, ContextAwareTransformer
from libcst._nodes.internal import CodegenState
from libcst.metadata import MetadataWrapper

from shrinker.codemods.inputs import CodemodInputs


_PRUNABLE = (cst.SimpleStatementLine, cst.FunctionDef, cst.ClassDef)


class ShrinkCodemod(ContextAwareTransformer):
    """Base class: NAME, inputs, a change counter and findings (`path:line: message`).

    Speed (a whole SGLang tree is ~1 M lines): visits dispatch like a plain CSTTransformer (libcst's
    matcher-decorator machinery costs ~4x per node and no shrinker codemod uses @m.visit/@m.leave),
    and a codemod may name a `prune_pattern()`: statements, functions and classes whose code
    does not match it are not descended into (they cannot hold anything the codemod changes).
    """

    NAME: ClassVar[str] = ""
    DESCRIPTION: ClassVar[str] = ""

    def __init__(self, context: CodemodContext, inputs: CodemodInputs) -> None:
        super().__init__(context)
        self.inputs = inputs
        self.changes: Counter[str] = Counter()
        self.findings: list[str] = []
        self._pending: list[tuple[Optional[cst.CSTNode], str]] = []
        self._prune = self.prune_pattern()
        self._prune_index: Optional[_PruneIndex] = None

    def prune_pattern(self) -> Optional[re.Pattern]:
        """A regex every statement/function/class this codemod may change matches (None: visit all)."""
        return None

    # -- dispatch --------------------------------------------------------------------------------
    def on_visit(self, node: cst.CSTNode) -> bool:
        result = cst.CSTTransformer.on_visit(self, node)
        if result and self._prune is not None and isinstance(node, _PRUNABLE):
            if self._prune_index is None or self._prune_index.module is not self.module:
                self._prune_index = _PruneIndex(self.module, self._prune)
            return self._prune_index.matches(node)
        return result

    on_leave = cst.CSTTransformer.on_leave
    on_visit_attribute = cst.CSTTransformer.on_visit_attribute
    on_leave_attribute = cst.CSTTransformer.on_leave_attribute

    # -- what a pipeline asks before parsing ---------------------------------------------------
    @classmethod
    def wants(cls, source: str, inputs: CodemodInputs) -> bool:
        """Cheap text test: False only when this codemod cannot change `source` (skips the parse)."""
        return True

    # -- bookkeeping used by subclasses --------------------------------------------------------
    def count(self, what: str, n: int = 1) -> None:
        self.changes[what] += n

    def report(self, node: Optional[cst.CSTNode], message: str) -> None:
        """Record a finding about an ORIGINAL node (one of the tree being visited)."""
        self._pending.append((node, message))

    @property
    def path(self) -> str:
        return self.context.filename or "<unknown>"

    # -- libcst plumbing -----------------------------------------------------------------------
    @contextmanager
    def _handle_metadata_reference(self, module: cst.Module) -> Generator[cst.Module, None, None]:
        # Same as libcst's Codemod._handle_metadata_reference, without the deep copy (see docstring).
        oldwrapper = self.context.wrapper
        wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
        with self.resolve(wrapper):
            self.context = replace(self.context, wrapper=wrapper)
            try:
                yield wrapper.module
                self._flush_findings(wrapper)
            finally:
                self.context = replace(self.context, wrapper=oldwrapper)

    def _flush_findings(self, wrapper: MetadataWrapper) -> None:
        if not self._pending:
            return
        lines = node_lines(wrapper.module, [node for node, _ in self._pending if node is not None])
        for node, message in self._pending:
            line = lines.get(id(node)) if node is not None else None
            self.findings.append(f"{self.path}:{line if line is not None else '?'}: {message}")
        self._pending.clear()


class _PruneIndex(CodegenState):
    """Which prunable nodes of a module hold text the prune pattern matches, from ONE code generation
    of the module (asking `code_for_node` per node regenerates a class for itself, then for each of its
    methods, then for each statement: most of a platform batch's visiting time). A node's text here
    differs from `code_for_node(node)` only by its parents' indentation at line starts, which no
    pattern word can begin, end or span (a `\b` next to whitespace or the text's start holds alike)."""

    def __init__(self, module: cst.Module, pattern: re.Pattern) -> None:
        super().__init__(default_indent=module.default_indent, default_newline=module.default_newline)
        self.module, self.pattern = module, pattern
        self._open: dict[int, int] = {}  # id(node) -> token index where its code starts
        self._spans: dict[int, tuple[int, int]] = {}
        module._codegen(self)
        offsets = [0]
        for token in self.tokens:
            offsets.append(offsets[-1] + len(token))
        self.text = "".join(self.tokens)
        self.ranges = {key: (offsets[min(a, len(self.tokens))], offsets[min(b, len(self.tokens))])
                       for key, (a, b) in self._spans.items()}

    def before_codegen(self, node: cst.CSTNode) -> None:
        if isinstance(node, _PRUNABLE):
            self._open[id(node)] = len(self.tokens)

    def after_codegen(self, node: cst.CSTNode) -> None:
        if isinstance(node, _PRUNABLE):
            self._spans[id(node)] = (self._open.pop(id(node)), len(self.tokens))

    def matches(self, node: cst.CSTNode) -> bool:
        span = self.ranges.get(id(node))
        if span is None:  # not a node of this module's code: ask it alone
            return self.pattern.search(self.module.code_for_node(node)) is not None
        return self.pattern.search(self.text[span[0]:span[1]]) is not None


class _LineFinder(CodegenState):
    """Code generation that notes the line where given nodes start (PositionProvider computes
    every node's range: ~30x the cost when a few findings need a line)."""

    def __init__(self, module: cst.Module, targets: set[int]) -> None:
        super().__init__(default_indent=module.default_indent, default_newline=module.default_newline)
        self.targets, self.lines = targets, {}
        self._counted, self._newlines = 0, 0

    def before_codegen(self, node: cst.CSTNode) -> None:
        if id(node) in self.targets and id(node) not in self.lines:
            self._newlines += sum(t.count("\n") for t in self.tokens[self._counted:])
            self._counted = len(self.tokens)
            self.lines[id(node)] = self._newlines + 1 + len(getattr(node, "leading_lines", ()))


def node_lines(module: cst.Module, nodes: list[cst.CSTNode]) -> dict[int, int]:
    """Line (1-based) of each node of `module`, keyed by id(node); absent nodes are left out."""
    finder = _LineFinder(module, {id(n) for n in nodes})
    module._codegen(finder)
    return finder.lines


def new_context(path: str, module: str) -> CodemodContext:
    """A CodemodContext for one file (`module` is dotted: sglang.srt.layers.layernorm)."""
    package = module if path.endswith("__init__.py") else module.rpartition(".")[0]
    return CodemodContext(filename=path, full_module_name=module or None, full_package_name=package or None)


# ---------------------------------------------------------------------------------------------
# Small CST helpers shared by the codemods (exact rewrites: parentheses, spacing, blocks).

_ATOMS = (cst.Name, cst.Attribute, cst.Call, cst.Subscript, cst.SimpleString, cst.FormattedString,
          cst.Integer, cst.Float, cst.Imaginary, cst.Ellipsis, cst.List, cst.Dict, cst.Set,
          cst.ListComp, cst.DictComp, cst.SetComp, cst.GeneratorExp)


def _nl(ws: object) -> bool:
    return isinstance(ws, cst.ParenthesizedWhitespace)


def top_level_newline(node: cst.BaseExpression) -> bool:
    """True when `node` breaks a line outside its own brackets (then it needs enclosing parens)."""
    if getattr(node, "lpar", None):
        return False
    if isinstance(node, (cst.BooleanOperation, cst.BinaryOperation)):
        op = node.operator
        return (_nl(op.whitespace_before) or _nl(op.whitespace_after)
                or top_level_newline(node.left) or top_level_newline(node.right))
    if isinstance(node, cst.Comparison):
        return top_level_newline(node.left) or any(
            _nl(t.operator.whitespace_before) or _nl(t.operator.whitespace_after)
            or top_level_newline(t.comparator) for t in node.comparisons)
    if isinstance(node, cst.UnaryOperation):
        return _nl(getattr(node.operator, "whitespace_after", None)) or top_level_newline(node.expression)
    if isinstance(node, cst.IfExp):
        return (any(_nl(w) for w in (node.whitespace_before_if, node.whitespace_after_if,
                                     node.whitespace_before_else, node.whitespace_after_else))
                or any(top_level_newline(n) for n in (node.body, node.test, node.orelse)))
    if isinstance(node, cst.Attribute):
        return (_nl(node.dot.whitespace_before) or _nl(node.dot.whitespace_after)
                or top_level_newline(node.value))
    if isinstance(node, cst.Call):
        return _nl(node.whitespace_after_func) or top_level_newline(node.func)
    if isinstance(node, cst.Subscript):
        return _nl(node.whitespace_after_value) or top_level_newline(node.value)
    if isinstance(node, cst.ConcatenatedString):
        return _nl(node.whitespace_between) or top_level_newline(node.left) or top_level_newline(node.right)
    if isinstance(node, cst.Await):
        return _nl(node.whitespace_after_await) or top_level_newline(node.expression)
    return False


# Lower precedence than a comparison: these keep their parentheses inside and/or/not.
_LOOSE = (cst.BooleanOperation, cst.IfExp, cst.Lambda, cst.NamedExpr)


def swap_expression(original: cst.BaseExpression, new: cst.BaseExpression, *,
                    boolean_operand: bool = False) -> cst.BaseExpression:
    """`new` (a part of `original`, or a constant) in the place of `original`.

    With `boolean_operand` (`original` sat in a test or as an operand of and/or/not), the
    parentheses of `original` go when `new` stays valid without them: on one line and binding
    tighter than `and`/`or` (`(x and _is_cuda)` -> `x`). Anywhere else they move onto `new`
    (`return(a if c else b)` must not become `returnb`); see `unwrap` for safe places.
    """
    if new is original or getattr(new, "lpar", None) or not getattr(original, "lpar", None):
        return new
    if boolean_operand and not top_level_newline(new) and not isinstance(new, _LOOSE):
        return new
    return new.with_changes(lpar=original.lpar, rpar=original.rpar)


def unwrap(node: cst.BaseExpression) -> cst.BaseExpression:
    """Drop the parentheses of an atom on one line (for places where they are redundant)."""
    if len(getattr(node, "lpar", ())) != 1 or not isinstance(node, _ATOMS):
        return node
    bare = node.with_changes(lpar=[], rpar=[])
    return node if top_level_newline(bare) else bare


def spaced(ws: cst.BaseParenthesizableWhitespace, after: cst.BaseExpression) -> cst.BaseParenthesizableWhitespace:
    """Whitespace between a keyword and `after`: at least one space once parentheses are gone."""
    if getattr(after, "lpar", None):
        return ws
    if isinstance(ws, cst.SimpleWhitespace) and ws.value == "":
        return cst.SimpleWhitespace(" ")
    return ws


def constant(value: bool) -> cst.Name:
    return cst.Name("True" if value else "False")


def block_statements(body: cst.BaseSuite) -> list[cst.BaseStatement]:
    """The statements of a suite as full statements (a one-line suite becomes one line)."""
    if isinstance(body, cst.IndentedBlock):
        return list(body.body)
    assert isinstance(body, cst.SimpleStatementSuite)
    return [cst.SimpleStatementLine(body=body.body, trailing_whitespace=body.trailing_whitespace)]


def header_comment(body: cst.BaseSuite) -> list[cst.EmptyLine]:
    """The comment after a block's colon (`if x:  # why`) as a line of its own."""
    if isinstance(body, cst.IndentedBlock) and body.header.comment is not None:
        return [cst.EmptyLine(comment=body.header.comment)]
    return []


def with_leading_lines(statements: list[cst.BaseStatement], lines: list[cst.EmptyLine]) -> list[cst.BaseStatement]:
    """Put `lines` (comments kept from a removed header) before the first of `statements`."""
    if not statements or not lines:
        return statements
    first = statements[0]
    return [first.with_changes(leading_lines=[*lines, *first.leading_lines]), *statements[1:]]


def only_pass(statements: list[cst.BaseStatement]) -> bool:
    """True when a block does nothing (every statement is `pass`)."""
    for stmt in statements:
        if not isinstance(stmt, cst.SimpleStatementLine):
            return False
        if not all(isinstance(s, cst.Pass) for s in stmt.body):
            return False
    return True


def pass_block(block: cst.IndentedBlock) -> cst.IndentedBlock:
    return block.with_changes(body=[cst.SimpleStatementLine(body=[cst.Pass()])])


def remove_elements(elements: list, drop: set[int]) -> list:
    """Drop elements (dict/list/call args) by index, keeping commas and line layout valid."""
    kept = [e for i, e in enumerate(elements) if i not in drop]
    if not kept or len(kept) == len(elements):
        return kept
    last_index = len(elements) - 1
    if last_index in drop:
        # The new last element takes the old last element's comma (trailing comma, closing layout).
        kept[-1] = kept[-1].with_changes(comma=elements[last_index].comma)
    return kept


class NodeIds(cst.CSTVisitor):
    """Collects the ids of every node of a subtree (to tell whether a use sits in code that goes)."""

    def __init__(self, into: set[int]):
        self.into = into

    def on_visit(self, node: cst.CSTNode) -> bool:
        self.into.add(id(node))
        return True
