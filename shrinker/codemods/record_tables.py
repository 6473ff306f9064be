"""Inventory records whose values come from a table: drop each record no CUDA deployment can use.

From 0.5.17 each `sglang.kernels.ops` package registers its kernels in a loop over a literal table
(0.5.23's kernels/ops/attention/__init__.py):

    _TRITON_KERNELS = [
        ("decode_attention", "decode_attention_fwd"),
        ("rocm_mla_decode_rope", "decode_attention_fwd_grouped_rope"),   # module removed with ROCm
    ]
    for _mod, _fn in _TRITON_KERNELS:
        register_kernel(KernelSpec(op=f"attention.{_fn}", backend=KernelBackend.TRITON,
                                   target=f"sglang.kernels.ops.attention.{_mod}:{_fn}"))
    del _mod, _fn

or `for _mod, _fn, _backend, _device in [(..., CapabilityRequirement.HIP), ...]`, and a record reads a
module constant (`capabilities=_HIP`, `_HIP = frozenset({CapabilityRequirement.HIP})`). fold_platform and
prune_records decide a record whose arguments are written out; this codemod puts each table row's values
(and the module constants) into the loop's registrations and decides the row the same way. A row goes when
every registration it makes, with its values put in, runs no code and is dead:
- its key is one the plan removes ([[registries]] kind "records");
- its capabilities ([platform].capability_keywords) name only other platforms' devices: never dispatched
  on CUDA;
- a string argument names a `module:attr` of a module the plan removes: the selector would only fail
  to import it.
A loop whose rows all go goes (with the `del` of its variables, and the table when nothing else reads it);
a lone registration goes the same way. A row under a value that is not a literal, a table the module
binds twice, or a loop body doing anything but registering stays as it is. Rows keep their layout and
comments (codemods/elements.py).
"""

from __future__ import annotations

from typing import Optional, Sequence

import libcst as cst
import libcst.helpers  # noqa: F401  (cst.helpers)
import libcst.matchers as m

from shrinker.codemods.base import ShrinkCodemod
from shrinker.codemods.bindings import BindingCounts
from shrinker.codemods.elements import drop_from_literal
from shrinker.codemods.records import deletes_only, record_keys, runs_no_code, without_statements
from shrinker.codemods.registries import string_value
from shrinker.rules.predicates import dotted_name, other_devices_only

_CODE = cst.Module([])


class _PutValues(cst.CSTTransformer):
    """Replace names by values; an f-string whose parts all became string literals becomes one."""

    def __init__(self, values: dict[str, cst.BaseExpression]) -> None:
        self.values = values

    def leave_Attribute(self, original_node: cst.Attribute, updated_node: cst.Attribute) -> cst.BaseExpression:
        return updated_node.with_changes(attr=original_node.attr)  # `x.name`: an attribute, not a variable

    def leave_Arg(self, original_node: cst.Arg, updated_node: cst.Arg) -> cst.Arg:
        return updated_node.with_changes(keyword=original_node.keyword)  # `op=`: a keyword, not a variable

    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.BaseExpression:
        value = self.values.get(original_node.value)
        return value.deep_clone() if value is not None else updated_node

    def leave_FormattedString(self, original_node: cst.FormattedString,
                              updated_node: cst.FormattedString) -> cst.BaseExpression:
        text = []
        for part in updated_node.parts:
            if isinstance(part, cst.FormattedStringText):
                text.append(part.value)
                continue
            value = string_value(part.expression)
            if value is None or part.format_spec is not None or part.conversion is not None or part.equal:
                return updated_node
            text.append(value)
        if "{" in "".join(text) or "}" in "".join(text):
            return updated_node  # an escaped brace: leave the f-string as written
        return cst.SimpleString(repr("".join(text)))


def _names(target: cst.BaseExpression) -> Optional[list[str]]:
    """The loop variables of `for a, b in ...` / `for a in ...`, else None."""
    if isinstance(target, cst.Name):
        return [target.value]
    if isinstance(target, (cst.Tuple, cst.List)) and all(isinstance(e.value, cst.Name) for e in target.elements):
        return [e.value.value for e in target.elements]  # type: ignore[union-attr]
    return None


def _row(element: cst.BaseElement, names: Sequence[str]) -> Optional[dict[str, cst.BaseExpression]]:
    """The loop variables' values in one table row, else None (a row of another shape)."""
    value = element.value
    if isinstance(element, cst.StarredElement):
        return None
    if len(names) == 1:
        return {names[0]: value}
    if isinstance(value, (cst.Tuple, cst.List)) and len(value.elements) == len(names) and not any(
            isinstance(e, cst.StarredElement) for e in value.elements):
        return dict(zip(names, (e.value for e in value.elements)))
    return None


class PruneRecordTables(ShrinkCodemod):
    NAME = "prune_record_tables"
    DESCRIPTION = ("Drop the rows of a kernel inventory's table (and records through module constants) whose "
                   "record is removed, serves only other devices, or names a removed module.")

    @classmethod
    def wants(cls, source: str, inputs) -> bool:
        return any(reg.kind == "records" and reg.record in source for reg in inputs.rules.registries)

    def __init__(self, context, inputs) -> None:
        super().__init__(context, inputs)
        from shrinker.codemods.fold_platform import Folder  # the purity rules fold_platform applies

        self._folder = Folder(inputs)
        self._registries = [r for r in inputs.rules.registries if r.kind == "records"]
        self._constants: dict[str, cst.BaseExpression] = {}

    # -- deciding one registration ---------------------------------------------------------------
    def _runs_no_code(self, node: cst.BaseExpression) -> bool:
        return runs_no_code(node, self._folder)

    def _dead_call(self, call: cst.Call) -> bool:
        """A registration running no code whose records are all of no use on CUDA (module doc)."""
        if not call.args or not all(self._runs_no_code(a.value) for a in call.args):
            return False
        records = [c for c in m.findall(call, m.Call()) if isinstance(c, cst.Call)
                   and any(dotted_name(c.func) == reg.record for reg in self._registries)]
        return bool(records) and all(self._dead_record(r) for r in records)

    def _dead_record(self, record: cst.Call) -> bool:
        stmt = cst.SimpleStatementLine([cst.Expr(record)])
        for reg in self._registries:
            removed = self.inputs.removed.registry_keys.get(reg.name, frozenset())
            keys = record_keys(stmt, reg)
            if removed and keys and all(k in removed for k in keys):
                return True
        keywords = self.inputs.rules.platform.capability_keywords
        for arg in record.args:
            if arg.keyword is not None and arg.keyword.value in keywords and other_devices_only(
                    _CODE.code_for_node(arg.value), self.inputs.table.strings):
                return True
            text = string_value(arg.value)
            if text and ":" in text and "." in text and self.inputs.removed.module_removed(text.split(":")[0]):
                return True
        return False

    def _dead_statement(self, stmt: cst.BaseStatement, values: dict[str, cst.BaseExpression]) -> bool:
        if not (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1
                and isinstance(stmt.body[0], cst.Expr) and isinstance(stmt.body[0].value, cst.Call)):
            return False
        call = stmt.body[0].value.visit(_PutValues(values))
        return isinstance(call, cst.Call) and self._dead_call(call)

    # -- the module ------------------------------------------------------------------------------
    def _module_constants(self, module: cst.Module) -> dict[str, cst.BaseExpression]:
        """Top-level names bound once, by a plain assignment of a pure value, and nowhere else."""
        counts = BindingCounts(self._folder)
        module.visit(counts)
        found: dict[str, cst.BaseExpression] = {}
        for stmt in module.body:
            if (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1
                    and isinstance(stmt.body[0], cst.Assign) and len(stmt.body[0].targets) == 1
                    and isinstance(stmt.body[0].targets[0].target, cst.Name)):
                name = stmt.body[0].targets[0].target.value
                if counts.count.get(name) == 1 and self._runs_no_code(stmt.body[0].value):
                    found[name] = stmt.body[0].value
        return found

    def _loop(self, stmt: cst.BaseStatement) -> Optional[tuple[list[str], cst.BaseExpression, Optional[str]]]:
        """(loop variables, the table literal, the table's name when the loop reads it by name) of a
        registration loop over a literal table, else None."""
        if not (isinstance(stmt, cst.For) and stmt.asynchronous is None and stmt.orelse is None
                and isinstance(stmt.body, cst.IndentedBlock) and stmt.body.body):
            return None
        names = _names(stmt.target)
        if names is None:
            return None
        table, table_name = stmt.iter, None
        if isinstance(table, cst.Name):
            table_name = table.value
            table = self._constants.get(table.value)
        if not isinstance(table, (cst.List, cst.Tuple)):
            return None
        if any(_row(e, names) is None for e in table.elements):
            return None
        return names, table, table_name

    def _dead_row(self, body: Sequence[cst.BaseStatement], names: list[str], element: cst.BaseElement) -> bool:
        values = {**self._constants, **(_row(element, names) or {})}
        return all(self._dead_statement(s, values) for s in body)

    @staticmethod
    def _reads(statements: Sequence[cst.BaseStatement], name: str) -> int:
        return sum(1 for s in statements for n in m.findall(s, m.Name(name)))

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        self._constants = self._module_constants(updated_node)
        statements = list(updated_node.body)
        gone: set[int] = set()
        tables: dict[str, Optional[cst.BaseExpression]] = {}  # a table read by name -> its rows left (None: none)
        edited: dict[int, cst.BaseStatement] = {}
        rows = 0
        for i, stmt in enumerate(statements):
            if self._dead_statement(stmt, self._constants):
                gone.add(i)
                continue
            loop = self._loop(stmt)
            if loop is None:
                continue
            names, table, table_name = loop
            body = stmt.body.body  # type: ignore[union-attr]
            if table_name is not None and self._reads(statements, table_name) != 2:
                continue  # the table is read elsewhere too: its rows stay
            dead = [e for e in table.elements if self._dead_row(body, names, e)]
            if not dead:
                continue
            rows += len(dead)
            if len(dead) == len(table.elements):
                gone.add(i)
                after = statements[i + 1] if i + 1 < len(statements) else None
                if after is not None and deletes_only(after, set(names)):
                    gone.add(i + 1)
                if table_name is not None:
                    tables[table_name] = None
                continue
            dead_ids = {id(e) for e in dead}
            pruned = drop_from_literal(table, lambda e: id(e) in dead_ids)
            if pruned is None:
                continue
            if table_name is not None:
                tables[table_name] = pruned
            else:
                edited[i] = stmt.with_changes(iter=pruned)
        for i, stmt in enumerate(statements):
            name = self._assigned_name(stmt)
            if name in tables:
                if tables[name] is None:
                    gone.add(i)
                else:
                    edited[i] = stmt.with_changes(body=[stmt.body[0].with_changes(value=tables[name])])  # type: ignore
        if not gone and not edited:
            return updated_node
        if rows:
            self.count("table_rows_removed", rows)
        if gone:
            self.count("statements_removed", len(gone))
        return without_statements(updated_node, gone, edited)

    @staticmethod
    def _assigned_name(stmt: cst.BaseStatement) -> Optional[str]:
        if (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Assign)
                and len(stmt.body[0].targets) == 1 and isinstance(stmt.body[0].targets[0].target, cst.Name)):
            return stmt.body[0].targets[0].target.value
        return None
