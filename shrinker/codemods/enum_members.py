"""Enum members the kept tree cannot hold (graph/enum_members says which): remove_platform_enum_members removes
those of another platform that no kept code names; drop_never_produced_members and fold_platform's Folder
(`never_produced_compare`) take the tests of those no code produces (below).

Members of another platform that no kept code names:

    class TransferBackend(Enum):               class TransferBackend(Enum):
        MOONCAKE = "mooncake"                      MOONCAKE = "mooncake"
        MORI = "mori"                  ->          NIXL = "nixl"
        NIXL = "nixl"                              FAKE = "fake"
        ASCEND = "ascend"
        FAKE = "fake"

The comment lines right above a removed member go with it: they describe that member (`# gfx950 aiter MXFP8
GEMM: ...`), and moved onto the next one they would describe a member they do not.
"""

from __future__ import annotations

import re
from typing import Mapping, Optional

import libcst as cst

from shrinker.codemods.base import ShrinkCodemod
from shrinker.codemods.elements import drop_from_literal
from shrinker.graph.enum_members import COLLECTION_CALLS


class RemovePlatformEnumMembers(ShrinkCodemod):
    """Drop `NAME = "value"` members that `inputs.platform_enum_members` lists for their (module-level) enum."""

    NAME = "remove_platform_enum_members"
    DESCRIPTION = "remove enum members whose value names another platform and which no kept code names"

    @classmethod
    def wants(cls, source: str, inputs) -> bool:
        members = inputs.platform_enum_members
        return bool(members) and any(f"class {name}" in source for name in members)

    def prune_pattern(self) -> Optional[re.Pattern]:
        members = self.inputs.platform_enum_members or {}
        if not members:
            return re.compile(r"(?!)")
        return re.compile(r"\bclass\s+(?:%s)\b" % "|".join(re.escape(n) for n in sorted(members)))

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False  # only module-level classes: the graph counts a class name once in the whole tree

    def leave_ClassDef(self, original_node: cst.ClassDef, updated_node: cst.ClassDef) -> cst.ClassDef:
        gone = (self.inputs.platform_enum_members or {}).get(updated_node.name.value)
        if not gone or not isinstance(updated_node.body, cst.IndentedBlock):
            return updated_node
        body = [stmt for stmt in updated_node.body.body if _member_name(stmt) not in gone]
        removed = len(updated_node.body.body) - len(body)
        if not removed:
            return updated_node
        self.count("members_removed", removed)
        return updated_node.with_changes(body=updated_node.body.with_changes(body=body))


def _member_name(stmt: cst.BaseStatement) -> Optional[str]:
    if (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Assign)
            and len(stmt.body[0].targets) == 1 and isinstance(stmt.body[0].targets[0].target, cst.Name)):
        return stmt.body[0].targets[0].target.value
    return None



def never_produced_compare(left: cst.BaseExpression, op: cst.BaseCompOp, right: cst.BaseExpression,
                           members: Mapping[str, frozenset[str]]) -> Optional[bool]:
    """The value of a test of a member no code produces (graph/enum_members.never_produced), for fold_platform's
    Folder: `x == M`/`x is M` is False, `!=`/`is not` True, `M in y` False, `x in (M, N)` False when every
    element is such a member (`not in`: True). None when the test is no such test."""
    def member(node: cst.BaseExpression) -> bool:
        return (isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name)
                and node.attr.value in members.get(node.value.value, ()))

    if not members:
        return None
    if isinstance(op, (cst.Equal, cst.Is, cst.NotEqual, cst.IsNot)) and (member(left) or member(right)):
        return isinstance(op, (cst.NotEqual, cst.IsNot))
    if isinstance(op, (cst.In, cst.NotIn)):
        literal = _collection_literal(right)
        if member(left) or (literal is not None and literal.elements
                            and all(member(e.value) for e in literal.elements)):
            return isinstance(op, cst.NotIn)
    return None


class DropNeverProducedMembers(ShrinkCodemod):
    """Drop enum members no code produces (graph/enum_members.never_produced) from the literals and lookup
    tables that only tests read: 0.5.23's `StateType.QSA_PENDING`/`QSA_COMPRESSED`/`MINIMAX_DENSE_KV`, once the
    Qwen4 and MiniMax models went, are never appended to a transfer's state types, yet the disaggregation
    connections list them:

        _FLAT_STATE_TYPES = frozenset((StateType.MAMBA, StateType.QSA_PENDING))  ->  frozenset((StateType.MAMBA,))
        payloads = {StateType.MAMBA: _mamba_payload, StateType.QSA_PENDING: _qsa_payload}
                                                           ->  payloads = {StateType.MAMBA: _mamba_payload}

    A literal of such members alone stays for fold_platform, whose Folder decides its test
    (`never_produced_compare`: `st in (StateType.QSA_PENDING, StateType.QSA_COMPRESSED)` is False), as it decides
    `st == StateType.MINIMAX_DENSE_KV`; the dead-branch pass then takes the branches. The graph listed a member
    only when every read of it stands in such a test, literal or table, so nothing here is a guess. The
    definitions go after the refold's rounds, once nothing names them (apply/refold.drop_unnamed_members).
    """

    NAME = "drop_never_produced_members"
    DESCRIPTION = "drop enum members no code produces from the literals and lookup tables only tests read"

    @classmethod
    def wants(cls, source: str, inputs) -> bool:
        members = inputs.never_produced_members
        return bool(members) and any(f"{name}." in source for name in members)

    def prune_pattern(self) -> Optional[re.Pattern]:
        members = self.inputs.never_produced_members or {}
        words = sorted({m for names in members.values() for m in names})
        if not words:
            return re.compile(r"(?!)")
        return re.compile(r"\.(?:%s)\b" % "|".join(re.escape(w) for w in words))

    def _member(self, node: Optional[cst.CSTNode]) -> bool:
        members = self.inputs.never_produced_members or {}
        return (isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name)
                and node.attr.value in members.get(node.value.value, ()))

    def _drop(self, updated_node, what: str):
        def drop(element: cst.CSTNode) -> bool:
            key = element.key if isinstance(element, cst.DictElement) else getattr(element, "value", None)
            return self._member(key)

        dropped = [e for e in updated_node.elements if drop(e)]
        if not dropped or len(dropped) == len(updated_node.elements):
            return updated_node  # members alone: the Folder decides the test that reads them
        new = drop_from_literal(updated_node, drop)
        if new is None:
            return updated_node
        self.count(what, len(dropped))
        return new

    def leave_Tuple(self, original_node: cst.Tuple, updated_node: cst.Tuple) -> cst.BaseExpression:
        return self._drop(updated_node, "elements_removed")

    def leave_List(self, original_node: cst.List, updated_node: cst.List) -> cst.BaseExpression:
        return self._drop(updated_node, "elements_removed")

    def leave_Set(self, original_node: cst.Set, updated_node: cst.Set) -> cst.BaseExpression:
        return self._drop(updated_node, "elements_removed")

    def leave_Dict(self, original_node: cst.Dict, updated_node: cst.Dict) -> cst.BaseExpression:
        return self._drop(updated_node, "entries_removed")


def _collection_literal(node: cst.BaseExpression):
    """The literal `in` tests: `(a, b)`, `[a]`, `{a}`, or the one argument of `frozenset((a, b))`."""
    if (isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value in COLLECTION_CALLS
            and len(node.args) == 1 and node.args[0].keyword is None and not node.args[0].star):
        node = node.args[0].value
    return node if isinstance(node, (cst.Tuple, cst.List, cst.Set)) else None

