"""Remove the records of an inventory whose keys the plan removes (`[[registries]] kind = "records"`).

0.5.17+'s kernel inventory: each `sglang.kernels.ops.*` package registers its ops at import time,
`register_kernel(KernelSpec(op="elementwise.fused_qwen4_gate_value", target="…qwen4_gate:…"))`, and the
selector imports a record's target only when a caller asks for its op (`get_kernel("…")`). The plan
removes the ops no code asks for (plan/registries.py) and with them what only their records named; this
codemod removes those records, so the inventory never names a module the tree no longer has.

A module-level statement goes when every `record` call in it carries a removed key as a literal and
its arguments run no code (literals, names, f-strings, string concatenation, `a if c else b` over
those, and the calls the rules call pure, `KernelSpec` and `KernelBackend` among them). So does a loop
over literals whose body is only such statements (0.5.23's `for _bk in ("torch", "triton"):
register_kernel(KernelSpec(op="moe.muse_spark_routing", backend=KernelBackend(_bk), target="…" + ...))`),
with the `del _bk` after it when no statement that stays binds that name. A record under a computed key
(`op=f"elementwise.{_fn}"`) stays. Comment lines above a removed statement move to the next one that stays.
"""

from __future__ import annotations

from typing import Optional

import libcst as cst
import libcst.matchers as m

from shrinker.codemods.base import ShrinkCodemod
from shrinker.codemods.registries import string_value
from shrinker.rules.predicates import dotted_name
from shrinker.rules.schema import Registry


def record_keys(stmt: cst.BaseStatement, reg: Registry) -> list[Optional[str]]:
    """The key of every `reg.record(...)` call in a statement (None where it is not a literal)."""
    keys: list[Optional[str]] = []
    for call in m.findall(stmt, m.Call()):
        if isinstance(call, cst.Call) and dotted_name(call.func) == reg.record:
            values = [a.value for a in call.args if a.keyword is not None and a.keyword.value == reg.element_key]
            keys.append(string_value(values[0]) if len(values) == 1 else None)
    return keys


def runs_no_code(node: cst.BaseExpression, folder) -> bool:
    """Evaluating a registration's argument runs no code: literals, names, f-strings, string concatenation,
    `a if c else b` over those, and the calls `folder` (fold_platform's purity rules) calls pure."""
    if isinstance(node, cst.IfExp):
        return all(runs_no_code(n, folder) for n in (node.test, node.body, node.orelse))
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Add) and any(
            isinstance(n, (cst.SimpleString, cst.FormattedString, cst.ConcatenatedString))
            for n in (node.left, node.right)):  # string concatenation
        return runs_no_code(node.left, folder) and runs_no_code(node.right, folder)
    if isinstance(node, cst.FormattedString):
        return all(runs_no_code(p.expression, folder) for p in node.parts
                   if isinstance(p, cst.FormattedStringExpression))
    if isinstance(node, cst.Call):
        if (isinstance(node.func, cst.Attribute) and isinstance(node.func.value, cst.SimpleString)
                and node.func.attr.value in _STR_METHODS):  # `"_fused".lstrip("_")`, once a row's value is in
            return all(not a.star and runs_no_code(a.value, folder) for a in node.args)
        return folder.pure_callee(node) and all(runs_no_code(a.value, folder) for a in node.args)
    return folder.pure(node)


# str's own methods that only compute a new string from the literal and their arguments
_STR_METHODS = frozenset({"lstrip", "rstrip", "strip", "lower", "upper", "replace", "removeprefix", "removesuffix"})


def deletes_only(stmt: cst.BaseStatement, names: set[str]) -> bool:
    """`del _bk` where every name deleted is one of `names`."""
    if not (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1
            and isinstance(stmt.body[0], cst.Del)):
        return False
    target = stmt.body[0].target
    targets = [e.value for e in target.elements] if isinstance(target, cst.Tuple) else [target]
    return all(isinstance(t, cst.Name) and t.value in names for t in targets)


def without_statements(module: cst.Module, gone: set[int],
                       edited: Optional[dict[int, cst.BaseStatement]] = None) -> cst.Module:
    """`module` without its top-level statements numbered in `gone` (and `edited` ones replaced); the comment
    lines above a removed statement head the next one that stays (or the footer)."""
    body: list[cst.BaseStatement] = []
    carried: list[cst.EmptyLine] = []
    for i, stmt in enumerate(module.body):
        if i in gone:
            if any(line.comment is not None for line in stmt.leading_lines):
                carried.extend(stmt.leading_lines)
            continue
        stmt = (edited or {}).get(i, stmt)
        if carried:
            stmt = stmt.with_changes(leading_lines=[*carried, *stmt.leading_lines])
            carried = []
        body.append(stmt)
    footer = [*carried, *module.footer] if carried else module.footer
    return module.with_changes(body=body, footer=footer)


class PruneRecords(ShrinkCodemod):
    NAME = "prune_records"
    DESCRIPTION = "Remove inventory records (register_kernel(KernelSpec(op=...))) of the keys the plan removes."

    @classmethod
    def wants(cls, source: str, inputs) -> bool:
        return any(reg.kind == "records" and reg.record in source and inputs.removed.registry_keys.get(reg.name)
                   for reg in inputs.rules.registries)

    def __init__(self, context, inputs) -> None:
        super().__init__(context, inputs)
        from shrinker.codemods.fold_platform import Folder  # the purity rules fold_platform applies

        self._folder = Folder(inputs)

    def _dead(self, stmt: cst.BaseStatement) -> bool:
        """A lone registration statement of records whose keys are all removed, running no code."""
        if not (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1
                and isinstance(stmt.body[0], cst.Expr) and isinstance(stmt.body[0].value, cst.Call)):
            return False
        for reg in self.inputs.rules.registries:
            removed = self.inputs.removed.registry_keys.get(reg.name, frozenset())
            if reg.kind != "records" or not removed:
                continue
            keys = record_keys(stmt, reg)
            if keys and all(k in removed for k in keys):
                # the registering call itself runs (that is what goes); its arguments must not
                return all(runs_no_code(a.value, self._folder) for a in stmt.body[0].value.args)
        return False

    def _dead_loop(self, stmt: cst.BaseStatement) -> Optional[str]:
        """`for _bk in ("torch", "triton"): <dead registrations>`: the loop variable, else None."""
        if not (isinstance(stmt, cst.For) and stmt.asynchronous is None and stmt.orelse is None
                and isinstance(stmt.target, cst.Name) and isinstance(stmt.iter, (cst.Tuple, cst.List))
                and all(isinstance(e.value, cst.SimpleString) for e in stmt.iter.elements)
                and isinstance(stmt.body, cst.IndentedBlock) and stmt.body.body):
            return None
        return stmt.target.value if all(self._dead(s) for s in stmt.body.body) else None

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        statements = list(updated_node.body)
        gone: set[int] = set()
        for i, stmt in enumerate(statements):
            if self._dead(stmt):
                gone.add(i)
            elif (name := self._dead_loop(stmt)) is not None:
                after = statements[i + 1] if i + 1 < len(statements) else None
                if after is not None and deletes_only(after, {name}):
                    gone.update((i, i + 1))  # the loop and the `del` of its variable
                elif not any(isinstance(n, cst.Name) and n.value == name
                             for s in statements[i + 1:] for n in m.findall(s, m.Name())):
                    gone.add(i)  # nothing after it reads or deletes the variable
        if not gone:
            return updated_node
        self.count("records_removed", len(gone))
        return without_statements(updated_node, gone)
