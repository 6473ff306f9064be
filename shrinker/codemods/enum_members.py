"""Remove enum members of another platform that no kept code names (graph/enum_members says which):

    class MoeA2ABackend(Enum):                 class MoeA2ABackend(Enum):
        NONE = "none"                              NONE = "none"
        DEEPEP = "deepep"              ->          DEEPEP = "deepep"
        MORI = "mori"                              FLASHINFER = "flashinfer"
        ASCEND_TP = "ascend_tp"
        FLASHINFER = "flashinfer"

The comment lines right above a removed member go with it: they describe that member (`# gfx950 aiter MXFP8
GEMM: ...`), and moved onto the next one they would describe a member they do not.
"""

from __future__ import annotations

import re
from typing import Optional

import libcst as cst

from shrinker.codemods.base import ShrinkCodemod


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

