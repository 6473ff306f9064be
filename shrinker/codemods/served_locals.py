"""A function's locals that hold what the served model is: one of its architectures, or its model_type.

SGLang shapes (0.5.23): `arch = architectures[0] if architectures else ""` (chat_encoding's
resolve_chat_encoding_spec, template_detection), then `if "KimiK3" in arch:`;
`model_type = model_config.hf_config.model_type` (the loader's quantised-weight remaps), then
`if model_type == "mllama" and ...`; `model_type = getattr(model_config.hf_config, "model_type", "")`.
fold_platform compares such a local as the place it copies: `model_type == "mllama"` is False as
`hf_config.model_type == "mllama"` is, and `"KimiK3" in arch` is False when no kept architecture's name
holds "KimiK3" (rules.predicates.architecture_substring).

A local counts when (each checked, else it is an ordinary name):
- it is bound once in the whole function, nested scopes included, by a plain `name = value` statement of
  the function's own scope (local_constants.binding), and no read comes before that statement;
- the value is a place the rules say holds the served model_type (`[architectures].model_type_at`), an
  element of a place holding the served architectures (`hf_config.architectures[0]`, `[architectures].served`),
  or a conditional expression whose arms are such elements or string literals (what the local may hold instead).
"""

from __future__ import annotations

from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING, Optional

import libcst as cst

from shrinker.codemods.bindings import BindingCounts
from shrinker.codemods.local_constants import PerFunction, scope_bindings, undominated
from shrinker.rules.predicates import PredicateTable, literal, model_type_place, served_place

if TYPE_CHECKING:
    from shrinker.codemods.fold_platform import Folder


@dataclass(frozen=True)
class ServedLocal:
    """What a local holds: the model_type place it copies, or an architecture (with the literals it may
    hold instead)."""

    place: Optional[cst.BaseExpression] = None
    alternatives: tuple[str, ...] = ()


def architecture_element(node: cst.BaseExpression, table: PredicateTable) -> bool:
    """`<served architectures>[i]`: one architecture of the served model."""
    if not isinstance(node, cst.Subscript) or len(node.slice) != 1:
        return False
    index = node.slice[0].slice
    if not isinstance(index, cst.Index) or not isinstance(index.value, (cst.Integer, cst.UnaryOperation)):
        return False
    return served_place(node.value, table)


def served_value(value: cst.BaseExpression, table: PredicateTable) -> Optional[ServedLocal]:
    """What a binding's value makes its local hold, or None."""
    place = model_type_place(value, table.readers)
    if place is not None and table.model_types and any(fnmatchcase(place, g) for g in table.model_type_at):
        return ServedLocal(place=value)
    if architecture_element(value, table):
        return ServedLocal()
    if isinstance(value, cst.IfExp):
        arms = (value.body, value.orelse)
        literals = [value if isinstance(value := literal(arm), str) else None for arm in arms]
        elements = [architecture_element(arm, table) for arm in arms]
        if any(elements) and all(e or lit is not None for e, lit in zip(elements, literals)):
            return ServedLocal(alternatives=tuple(lit for lit in literals if lit is not None))
    return None


class _ServedLocals(PerFunction):
    """Per function (by qualified name): its served locals."""

    def __init__(self, folder: "Folder") -> None:
        super().__init__()
        self.folder = folder

    def facts(self, node: cst.FunctionDef, qualname: str) -> dict[str, ServedLocal]:
        candidates = {}
        for name, values in scope_bindings(node).items():
            served = served_value(values[0], self.folder.table) if len(values) == 1 else None
            if served is not None:
                candidates[name] = served
        if not candidates:
            return {}
        counter = BindingCounts(self.folder)
        node.visit(counter)
        candidates = {n: s for n, s in candidates.items() if counter.count.get(n) == 1}
        bad = undominated(node, frozenset(candidates))
        return {n: s for n, s in candidates.items() if n not in bad}


def served_locals(tree: cst.Module, folder: "Folder") -> dict[str, dict[str, ServedLocal]]:
    """Qualified function name -> its locals that hold the served model's architecture or model_type."""
    if not folder.table.served and not folder.table.model_type_at:
        return {}
    visitor = _ServedLocals(folder)
    tree.visit(visitor)
    return visitor.found
