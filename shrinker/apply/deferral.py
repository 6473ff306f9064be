"""Gate findings a later batch settles: uses of removed names inside a function or a module-level
table nothing references.

A batch can leave a kept function using a name of a module it removed when the function's only
callers went in the same or an earlier batch (0.5.17: utils/common.load_audio, whose caller was the
removed EPD encoder; the NPU hooks' dsv4_state_payloads, called only under `if _is_npu:`). Such a
function is dead, and the dead-symbol batch removes it; until then its findings say nothing about
code that can run. So before a symbol batch, a gate defers the findings that lie inside a definition
nothing in the tree can reach, files a later batch deletes aside:
- a method: no Python file mentions its name outside its own definition (a word search: strings and
  getattr names count, since `obj.method` needs no import of the class's module);
- a top-level function or a module-level assignment to one name (0.5.18's quantization
  CPU_QUANTIZATION_METHODS, read by nothing, still names the removed AutoRoundConfig): no code mentions
  it where the name can mean this module's binding: in its own module outside its definition, in a
  module that imports its module (or from it), a string that is the name itself (getattr) or
  `module.name` / `module:name` (not where a module binds that name itself: sgl_kernel's
  `_DEBUG_EXPORT_NAMES` lists its own functions). As for the dead-symbol batch, `__all__` lists a use only
  when some module star-imports the module; a same-named function of another module is another function
  (0.5.23: sgl_kernel.mamba.causal_conv1d_fwd is not sglang.kernels.ops.mamba's, whose kernel asks lost
  their records with the kernels' module), and a key that contains the name is no use of it
  (`get_kernel("mamba.causal_conv1d_fwd")`).
The symbol batch's own gate, and verify, are strict: a deferred function still there then fails.
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from shrinker.codemods.removed_imports import still_used_name
from shrinker.graph.bindings import statement_bindings
from shrinker.graph.discover import module_of
from shrinker.graph.parse import resolve_relative
from shrinker.graph.sources import python_sources
from shrinker.rules.predicates import PredicateTable, evaluate_source

_UNDEFINED = re.compile(r"undefined name '(\w+)'")
_LOCATION = re.compile(r"^\[[^\]]+\] (?P<path>[^:\s]+\.py):(?P<line>\d+)")


@dataclass(frozen=True)
class _Definition:
    name: str
    first: int
    last: int
    member: bool  # a method of a top-level class


def _definitions(source: str) -> list[_Definition]:
    """Each top-level function, each method of a top-level class (0.5.20's
    Fp8MoEMethod._process_npu_fp4_expert_weights, called only under `if _is_npu:`), and each top-level
    assignment to one name (`TABLE = {...}`)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    out = []
    for n in tree.body:
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out.append(_Definition(n.name, n.lineno, n.end_lineno or n.lineno, False))
        elif isinstance(n, ast.ClassDef):
            out += [_Definition(m.name, m.lineno, m.end_lineno or m.lineno, True) for m in n.body
                    if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))]
        elif isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name):
            out.append(_Definition(n.targets[0].id, n.lineno, n.end_lineno or n.lineno, False))
        elif isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name) and n.value is not None:
            out.append(_Definition(n.target.id, n.lineno, n.end_lineno or n.lineno, False))
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
    enclosing: dict[str, tuple[_Definition, str]] = {}  # finding -> (definition, path)
    for path, located in where.items():
        file = tree / path
        source = file.read_text(errors="replace") if file.is_file() else ""
        definitions = _definitions(source)
        for line, f in located:
            hits = {d for d in definitions if d.first <= line <= d.last}
            undefined = _UNDEFINED.search(f)
            used = still_used_name(f) or (undefined[1] if undefined else None)
            if used:
                # a codemod's finding counts lines before the batch's own edits: where the line now falls
                # in a definition that does not use the name, find the use by its name
                word = re.compile(rf"\b{re.escape(used)}\b")
                uses = [i for i, text in enumerate(source.splitlines(), 1) if word.search(text)]
                by_name = {d for d in definitions for i in uses if d.first <= i <= d.last}
                if by_name and not hits & by_name:
                    hits = by_name
            if len(hits) == 1:
                enclosing[f] = (hits.pop(), path)
    if not enclosing:
        return findings, []
    candidates = set(enclosing.values())
    live = _mentioned(tree, candidates, going, table)
    dead = candidates - live
    kept = [f for f in findings if enclosing.get(f) not in dead]
    deferred = [f"{f} (deferred: {enclosing[f][0].name} in {enclosing[f][1]} is referenced nowhere in the tree; "
                "the dead-symbol batch removes it)" for f in findings if enclosing.get(f) in dead]
    return kept, deferred


def _mentioned(tree: Path, candidates: set[tuple[_Definition, str]], going: set[str],
               table: PredicateTable | None) -> set[tuple[_Definition, str]]:
    """The candidates some file of the tree (`going` aside) mentions where the mention can mean them."""
    names = {d.name for d, _ in candidates}
    pattern = re.compile(r"\b(" + "|".join(sorted(map(re.escape, names))) + r")\b")
    members = {(d, p) for d, p in candidates if d.member}
    top_level = {(d, p): module_of(p) for d, p in candidates if not d.member}
    star_imported = _star_imported(tree, going) if top_level else set()
    counts: dict[str, int] = defaultdict(int)  # word -> mentions on lines that run on CUDA
    live: set[tuple[_Definition, str]] = set()
    for rel, text in python_sources(tree):
        if rel in going or not pattern.search(text):
            continue
        dead = _dead_lines(text, table) if table is not None else set()
        words = set()
        for number, line in enumerate(text.splitlines(), 1):
            if number not in dead:
                for word in pattern.findall(line):
                    counts[word] += 1
                    words.add(word)
        wanted = {(d, p): m for (d, p), m in top_level.items() if d.name in words and (d, p) not in live}
        if wanted:
            live |= _module_level_uses(rel, text, wanted, dead, star_imported)
    return live | {(d, p) for d, p in members if counts[d.name] > 1}  # a method: its own `def` is one


def _module_level_uses(rel: str, text: str, wanted: dict[tuple[_Definition, str], str], dead: set[int],
                       star_imported: set[str]) -> set[tuple[_Definition, str]]:
    """Which of `wanted` (definition, path -> its module) file `rel` uses: a name or attribute in its
    own module outside the definition, or in a module that imports that module (or from it); a string
    `module.name` / `module:name`; a string that is the name, but in no `__all__` (which counts in its
    own module when some module star-imports it) nor in another module binding that name itself."""
    try:
        parsed = ast.parse(text)
    except SyntaxError:
        return set(wanted)  # unreadable: every word counts
    reached = _modules_reached(rel, parsed)
    exported = _all_strings(parsed)
    bound = _module_bindings(parsed.body)
    out = set()
    for node in ast.walk(parsed):
        line = getattr(node, "lineno", 0)
        if line in dead:
            continue
        if isinstance(node, ast.Name):
            word, string = node.id, None
        elif isinstance(node, ast.Attribute):
            word, string = node.attr, None
        elif isinstance(node, ast.alias):
            word, string = node.name.rsplit(".", 1)[-1], None
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            word, string = None, node.value
        else:
            continue
        for (d, p), module in wanted.items():
            if word == d.name:
                own = rel == p and not d.first <= line <= d.last
                if own or (rel != p and module in reached):
                    out.add((d, p))
            elif string is not None and d.name in string:
                if string in (f"{module}.{d.name}", f"{module}:{d.name}"):
                    out.add((d, p))
                elif string == d.name and id(node) not in exported and (rel == p or module in reached
                                                                        or d.name not in bound):
                    out.add((d, p))  # a getattr name: on this module, or on something unknown
                elif string == d.name and rel == p and module in star_imported:
                    out.add((d, p))
    return out


def _modules_reached(rel: str, parsed: ast.Module) -> set[str]:
    """Every module `rel` imports, each package on the way, and every module a from-import names
    (`from pkg import mod`)."""
    module, is_package = module_of(rel), rel.endswith("/__init__.py")
    out: set[str] = set()
    for node in ast.walk(parsed):
        targets = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = resolve_relative(module, is_package, node.level, node.module or "")
            targets = [base] + [f"{base}.{a.name}" for a in node.names]
        for target in targets:
            parts = target.split(".")
            out.update(".".join(parts[:i]) for i in range(1, len(parts) + 1))
    return out


def _star_imported(tree: Path, going: set[str]) -> set[str]:
    """The modules some file of the tree star-imports."""
    out: set[str] = set()
    for rel, text in python_sources(tree):
        if rel in going or "import *" not in text:
            continue
        try:
            parsed = ast.parse(text)
        except SyntaxError:
            continue
        module, is_package = module_of(rel), rel.endswith("/__init__.py")
        out.update(resolve_relative(module, is_package, n.level, n.module or "") for n in ast.walk(parsed)
                   if isinstance(n, ast.ImportFrom) and any(a.name == "*" for a in n.names))
    return out


def _module_bindings(body: list[ast.stmt]) -> set[str]:
    """The names a module binds at its top level, `if`/`try` blocks included."""
    out: set[str] = set()
    for stmt in body:
        out.update(statement_bindings(stmt))
        for block in ("body", "orelse", "finalbody"):
            if isinstance(stmt, (ast.If, ast.Try)) and getattr(stmt, block, None):
                out |= _module_bindings(getattr(stmt, block))
        for handler in getattr(stmt, "handlers", []):
            out |= _module_bindings(handler.body)
    return out


def _all_strings(parsed: ast.Module) -> set[int]:
    """The ids of the string nodes a module-level `__all__ = [...]` / `__all__ += [...]` lists."""
    out: set[int] = set()
    for stmt in parsed.body:
        if isinstance(stmt, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets) and stmt.value is not None:
                out.update(id(n) for n in ast.walk(stmt.value) if isinstance(n, ast.Constant))
    return out
