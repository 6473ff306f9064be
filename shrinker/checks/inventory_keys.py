"""verify's `kernel_ops` check: every key kept code asks an inventory for with a literal is still a record's key.

The inventories are the rules' `records` registries (rules/deepseek.toml `kernel_ops`: `KernelSpec(op=...)`
records, asked for through `get_kernel`/`select_kernel`/`registry.get`...). graph/key_lookups reads the asks
(a call that resolves through the file's imports to one of the `lookups`, its first argument a literal);
this module reads the records: the `element_key` keyword of each `record` call, an f-string as a glob
(`op=f"quant.{name}"` → "quant.*"). A key computed otherwise (0.5.23's `fused_op.py`: `op=instance.op`)
serves nothing here: counted as "any key" it would excuse every ask, so the check would never fail. An ask
served only by such records is a finding on both sides, which verify does not count (it compares with
upstream); an ask upstream serves with a literal record and the pruned tree does not is a regression
(0.5.23's `try_qwen3x_nvfp4_gemm` once its KDA records went: KeyError where upstream dispatched).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from fnmatch import fnmatchcase

from shrinker.checks.facts import FileFacts, joined, module_texts
from shrinker.checks.tree import SourceTree
from shrinker.graph.bindings import dotted
from shrinker.graph.key_lookups import key_asks


@dataclass(frozen=True)
class UnservedAsk:
    registry: str
    key: str
    where: str  # "module:line" of the ask


def unserved_asks(tree: SourceTree, facts: dict[str, FileFacts], registries) -> tuple[int, list[UnservedAsk]]:
    """(how many literal asks there are, the asks no record of the tree serves), over every `records`
    registry of the rules."""
    module_path = {name: m.rel for name, m in tree.modules.items() if m.path.suffix == ".py"}
    origins = {name: {n: imp.module for imp in f.imports if imp.names and not imp.in_function for n in imp.names}
               for name, f in facts.items()}
    asks_total, unserved = 0, []
    for reg in (r for r in registries if r.kind == "records" and r.record and r.element_key):
        keys = _record_keys(tree, module_path, reg.record, reg.element_key)
        asks = key_asks(tree.root, module_path, origins, reg.lookups)
        for key in sorted(asks.where):
            asks_total += len(asks.where[key])
            if not any(fnmatchcase(key, pattern) for pattern in keys):
                unserved += [UnservedAsk(reg.name, key, where) for where in asks.where[key]]
    return asks_total, unserved


def _record_keys(tree: SourceTree, module_path: dict[str, str], record: str, element_key: str) -> set[str]:
    keys: set[str] = set()
    for path in module_path.values():
        source = (tree.root / path).read_text(errors="replace")
        if record not in source:
            continue
        try:
            parsed = ast.parse(source)
        except SyntaxError:
            continue  # the syntax check reports it
        texts = module_texts(parsed)
        for node in ast.walk(parsed):
            if isinstance(node, ast.Call) and dotted(node.func).rsplit(".", 1)[-1] == record:
                value = next((k.value for k in node.keywords if k.arg == element_key), None)
                if isinstance(value, ast.Constant) and isinstance(value.value, str):
                    keys.add(value.value)
                elif isinstance(value, ast.JoinedStr) and (glob := joined(value, texts, "*")) not in (None, "*"):
                    keys.add(glob)
    return keys
