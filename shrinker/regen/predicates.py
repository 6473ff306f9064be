"""Find platform predicates no rule names: new `is_*()` siblings of the predicates the rules know.

A module that defines a known predicate function (`def is_npu(): ...`) is where a platform check
lives; any other argument-less `is_*`/`use_*` function defined there, and used as a test in kept
code, is a predicate no rule names. Regen sorts them: the platform vocabulary folds one named for
another platform (`_is_xpu_available`: decided), and the rest stay runtime code, listed as info
(`is_mnnvl_fabric_device`, a CUDA runtime check).
"""

from __future__ import annotations

import re
import libcst as cst

from shrinker.graph.build import ImportGraph
from shrinker.rules.predicates import PREDICATE_NAME, PredicateTable
from shrinker.rules.schema import Rules



def _predicate_defs(source: str) -> dict[str, int]:
    """Argument-less module-level functions: name → number of parameters."""
    try:
        module = cst.parse_module(source)
    except Exception:
        return {}
    out = {}
    for stmt in module.body:
        if isinstance(stmt, cst.FunctionDef):
            params = stmt.params
            n = len(params.params) + len(params.posonly_params) + len(params.kwonly_params)
            out[stmt.name.value] = n
    return out


def uncovered_predicates(g: ImportGraph, kept: set[str], rules: Rules) -> dict[str, list[str]]:
    """{predicate name: [kept files that test it]} for predicates no written rule names (the
    vocabulary may still give them a value: PredicateTable.rule_for)."""
    table = PredicateTable(rules.platform)
    known = {p.name for p in rules.platform.predicates}
    homes = []
    for module, facts in g.facts.items():
        if not g.module_path.get(module) or not any(n in facts.defined for n in known):
            continue
        defs = _predicate_defs((g.tree / g.module_path[module]).read_text(errors="replace"))
        if any(name in known and n == 0 for name, n in defs.items()):
            homes.append(defs)
    candidates = {name for defs in homes for name, n in defs.items()
                  if n == 0 and PREDICATE_NAME.match(name) and table.written_rule_for(name) is None}
    if not candidates:
        return {}
    pattern = re.compile(r"\bif\s+(?:not\s+)?[\w.]*\b(" + "|".join(map(re.escape, sorted(candidates))) + r")\(\)")
    uses: dict[str, list[str]] = {}
    for module in sorted(kept):
        path = g.module_path.get(module)
        if not path:
            continue
        for m in pattern.finditer((g.tree / path).read_text(errors="replace")):
            uses.setdefault(m.group(1), [])
            if path not in uses[m.group(1)]:
                uses[m.group(1)].append(path)
    return uses
