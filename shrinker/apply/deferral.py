"""Gate findings a later batch settles: uses of removed names inside a function or a module-level
table nothing references.

A batch can leave a kept function using a name of a module it removed when the function's only
callers went in the same or an earlier batch (0.5.17: utils/common.load_audio, whose caller was the
removed EPD encoder; the NPU hooks' dsv4_state_payloads, called only under `if _is_npu:`). Such a
function is dead, and the dead-symbol batch removes it; until then its findings say nothing about
code that can run. So before a symbol batch, a gate defers the findings that lie inside a top-level
function whose name no Python file of the tree mentions outside its own definition, files a later
batch deletes aside (a word search: strings, `__all__` and getattr names count as mentions, so nothing
reachable by name is deferred). A module-level assignment to one name counts the same way (0.5.18's
quantization CPU_QUANTIZATION_METHODS, read by nothing, still names the removed AutoRoundConfig).
The symbol batch's own gate, and verify, are strict: a deferred function still there then fails.
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from pathlib import Path

from shrinker.codemods.removed_imports import still_used_name
from shrinker.graph.sources import python_sources
from shrinker.rules.predicates import PredicateTable, evaluate_source

_UNDEFINED = re.compile(r"undefined name '(\w+)'")
_LOCATION = re.compile(r"^\[[^\]]+\] (?P<path>[^:\s]+\.py):(?P<line>\d+)")


def _definitions(source: str) -> list[tuple[str, int, int]]:
    """(name, first line, last line) of each top-level function, each method of a top-level class
    (0.5.20's Fp8MoEMethod._process_npu_fp4_expert_weights, called only under `if _is_npu:`), and each
    top-level assignment to one name (`TABLE = {...}`)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    out = []
    for n in tree.body:
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out.append((n.name, n.lineno, n.end_lineno or n.lineno))
        elif isinstance(n, ast.ClassDef):
            out += [(m.name, m.lineno, m.end_lineno or m.lineno) for m in n.body
                    if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))]
        elif isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name):
            out.append((n.targets[0].id, n.lineno, n.end_lineno or n.lineno))
        elif isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name) and n.value is not None:
            out.append((n.target.id, n.lineno, n.end_lineno or n.lineno))
    return out


def _dead_lines(source: str, table: PredicateTable) -> set[int]:
    """Lines of the `if` branches that never run on CUDA (the test folds to a constant under the platform
    table): the platform batch removes them, so a mention there keeps nothing alive."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    dead: set[int] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.If):
            continue
        value = evaluate_source(ast.get_source_segment(source, node.test) or "", table)
        branch = node.body if value is False else node.orelse if value is True else []
        for stmt in branch:
            dead.update(range(stmt.lineno, (stmt.end_lineno or stmt.lineno) + 1))
    return dead


def defer_dead_functions(findings: list[str], tree: Path, going: set[str] = frozenset(),
                         table: PredicateTable | None = None) -> tuple[list[str], list[str]]:
    """(findings that stand, findings deferred to the dead-symbol batch, each saying why). `going`:
    tree paths a later batch deletes (their mentions do not count); `table`: the platform's predicates
    (a mention inside a branch that never runs on CUDA does not count: 0.5.18 reads
    CPU_QUANTIZATION_METHODS only under `if is_cpu() and cpu_has_amx_support():`)."""
    where: dict[str, list[tuple[int, str]]] = defaultdict(list)
    for f in findings:
        m = _LOCATION.match(f)
        if m:
            where[m["path"]].append((int(m["line"]), f))
    enclosing: dict[str, tuple[str, str]] = {}  # finding -> (function, path)
    for path, located in where.items():
        file = tree / path
        source = file.read_text(errors="replace") if file.is_file() else ""
        definitions = _definitions(source)
        for line, f in located:
            hits = {name for name, first, last in definitions if first <= line <= last}
            undefined = _UNDEFINED.search(f)
            used = still_used_name(f) or (undefined[1] if undefined else None)
            if used:
                # a codemod's finding counts lines before the batch's own edits: where the line now falls
                # in a definition that does not use the name, find the use by its name
                word = re.compile(rf"\b{re.escape(used)}\b")
                uses = [i for i, text in enumerate(source.splitlines(), 1) if word.search(text)]
                by_name = {name for name, first, last in definitions for i in uses if first <= i <= last}
                if by_name and not hits & by_name:
                    hits = by_name
            if len(hits) == 1:
                enclosing[f] = (hits.pop(), path)
    if not enclosing:
        return findings, []
    names = {name for name, _ in enclosing.values()}
    pattern = re.compile(r"\b(" + "|".join(sorted(map(re.escape, names))) + r")\b")
    mentions: dict[str, int] = defaultdict(int)
    for rel, text in python_sources(tree):
        if rel in going or not pattern.search(text):
            continue
        dead = _dead_lines(text, table) if table is not None else set()
        for number, line in enumerate(text.splitlines(), 1):
            if number not in dead:
                for word in pattern.findall(line):
                    mentions[word] += 1
    dead = {n for n in names if mentions[n] == 1}  # its own `def` only
    kept = [f for f in findings if enclosing.get(f, ("", ""))[0] not in dead]
    deferred = [f"{f} (deferred: {enclosing[f][0]} in {enclosing[f][1]} is referenced nowhere in the tree; "
                "the dead-symbol batch removes it)" for f in findings if enclosing.get(f, ("", ""))[0] in dead]
    return kept, deferred
