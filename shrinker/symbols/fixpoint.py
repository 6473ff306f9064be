"""Analyse -> remove -> analyse again until a pass removes nothing, on a scratch copy of a tree.

Reachability already removes dead cycles in one pass; later passes find what the other codemods of
the run (remove_unused_names: `_is_hip = is_hip()` flags, imports the removed code used) made
unreferenced. Each pass parses only the files that changed (the symbol facts are cached by
content), transforms only the modules with dead symbols, and records lines and seconds.

Never run on the work tree itself: `measure` copies it first; `run_fixpoint` refuses
build/<profile>-<version>/ (apply owns that tree and commits every change there).
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Optional, Sequence

from shrinker import paths
from shrinker.codemods.inputs import CodemodInputs, Removed
from shrinker.codemods.pipeline import CODEMODS, FileItem, summarize, transform_files
from shrinker.errors import ShrinkError
from shrinker.rules.load import load_rules
from shrinker.symbols.graph import SymbolGraph, build_symbol_graph
from shrinker.symbols.rules import SymbolRules, load_symbol_rules


@dataclass
class PassResult:
    number: int
    dead_symbols: int
    dead_lines: int  # what the graph said would go
    lines_before: int
    lines_after: int
    files_changed: int
    changes: dict[str, int]
    failures: list[str]
    findings: list[str]
    undefined: list[str]
    analysis_seconds: float
    transform_seconds: float
    # entries removed from rules.attribute_tables' classes: {"module:Class": [names]} (the environment
    # variables nothing reads any more, for the apply report)
    table_entries: dict[str, list[str]] = field(default_factory=dict)


def table_entries(dead: dict, symbol_rules: SymbolRules) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for module, d in sorted(dead.items()):
        for member in sorted(d.members):
            cls, _, name = member.rpartition(".")
            if symbol_rules.attribute_table(f"{module}:{cls}") is not None:
                out.setdefault(f"{module}:{cls}", []).append(name)
    return out


@dataclass
class FixpointResult:
    tree: str
    lines_before: int
    lines_after: int
    passes: list[PassResult] = field(default_factory=list)
    seconds: float = 0.0
    converged: bool = False

    @property
    def removed(self) -> int:
        return self.lines_before - self.lines_after

    def to_dict(self) -> dict:
        return {**asdict(self), "removed": self.removed}


def _register() -> None:
    from shrinker.codemods.dead_symbols import RemoveDeadSymbols

    CODEMODS.setdefault(RemoveDeadSymbols.NAME, RemoveDeadSymbols)


def _total_lines(graph: SymbolGraph) -> int:
    return sum(m.lines for m in graph.modules.values())


def _imported_names(tree: Path, jobs: int) -> dict[str, frozenset[str]]:
    """What kept modules take from each module of `tree` (`Removed.imported`): remove_unused_names then
    drops a public import the pass left unused (`is_hip` once the dead `_is_hip = is_hip()` went) unless
    another module takes it from there, as the batches before do."""
    from shrinker.codemods.unused_names import imported_names_from_facts
    from shrinker.graph.build import build_graph
    from shrinker.graph.sources import tree_source_reader

    graph = build_graph(tree, jobs=jobs)
    return imported_names_from_facts(list(graph.facts.values()), Removed(),
                                     tree_source_reader(tree, graph.module_path))


def run_pass(tree: Path, number: int, rules, symbol_rules: SymbolRules, *,
             codemods: Sequence[str] = ("remove_dead_symbols", "remove_unused_names"),
             jobs: int = 2, upstream: Optional[Path] = None) -> tuple[Optional[PassResult], int]:
    """One analysis + removal over `tree`, written in place: (the pass, the tree's lines before it).
    The pass is None when the graph finds nothing dead. Callers own the tree (apply commits it).
    `upstream`: the tree upstream of it, for attribute tables read there (default: the pinned one)."""
    _register()
    t0 = time.perf_counter()
    graph = build_symbol_graph(tree, symbol_rules, jobs=jobs, upstream=upstream)
    lines = _total_lines(graph)
    dead = graph.dead()
    analysis = time.perf_counter() - t0
    if not dead:
        return None, lines
    removed = Removed()
    removed.dead_symbols = dead  # type: ignore[attr-defined]  # read by remove_dead_symbols
    removed.imported = _imported_names(tree, jobs)
    inputs = CodemodInputs(rules=rules, removed=removed)
    items = [FileItem(path=str(tree / graph.modules[m].path), module=m) for m in dead]
    t1 = time.perf_counter()
    results = transform_files(items, inputs, list(codemods), jobs=jobs, description=f"dead symbols, pass {number}")
    changed = delta = 0
    for res in results:
        if res.status == "success":
            target = Path(res.path)
            delta += _non_blank(target.read_text(encoding="utf-8")) - _non_blank(res.code)
            target.write_text(res.code, encoding="utf-8")
            changed += 1
    summary = summarize(results)
    result = PassResult(
        number=number, dead_symbols=sum(len(d.names) + len(d.members) + len(d.imports) for d in dead.values()),
        dead_lines=sum(d.lines for d in dead.values()), lines_before=lines, lines_after=lines - delta,
        files_changed=changed, changes=summary["changes"], failures=summary["failures"],
        findings=[f for r in results for f in r.findings], undefined=[u for r in results for u in r.undefined],
        analysis_seconds=round(analysis, 2), transform_seconds=round(time.perf_counter() - t1, 2),
        table_entries=table_entries(dead, symbol_rules))
    return result, lines


def run_fixpoint(tree: Path, *, profile: str = "deepseek", symbol_rules: Optional[SymbolRules] = None,
                 codemods: Sequence[str] = ("remove_dead_symbols", "remove_unused_names"),
                 jobs: int = 2, max_passes: int = 8) -> FixpointResult:
    """Remove dead symbols from `tree` IN PLACE until a pass removes nothing (see module docstring)."""
    tree = tree.resolve()
    work = paths.project_root() / "build"
    if tree == work or work in tree.parents:
        raise ShrinkError(f"{tree} is under build/: run_fixpoint edits in place, give it a copy")
    rules = load_rules(profile)
    symbol_rules = symbol_rules or load_symbol_rules(profile)
    start = time.perf_counter()
    result = FixpointResult(tree=str(tree), lines_before=0, lines_after=0)
    for number in range(1, max_passes + 1):
        one, lines = run_pass(tree, number, rules, symbol_rules, codemods=codemods, jobs=jobs)
        if number == 1:
            result.lines_before = lines
        result.lines_after = lines
        if one is None:
            result.converged = True
            break
        result.passes.append(one)
        result.lines_after = one.lines_after
        if not one.files_changed:
            result.converged = True
            break
    result.seconds = round(time.perf_counter() - start, 2)
    return result


def _non_blank(code: str) -> int:
    return sum(1 for line in code.splitlines() if line.strip())


def copy_tree(source: Path, dest: Path) -> Path:
    """A plain copy of `source` (its committed state when it is a git work tree) at `dest`."""
    dest.mkdir(parents=True, exist_ok=True)
    if (source / ".git").exists():
        archive = subprocess.run(["git", "-C", str(source), "archive", "HEAD"], check=True, capture_output=True)
        subprocess.run(["tar", "-x", "-C", str(dest)], input=archive.stdout, check=True)
    else:
        shutil.copytree(source, dest, dirs_exist_ok=True, ignore=shutil.ignore_patterns(".git", "__pycache__"))
    return dest


def measure(source: Path, *, profile: str = "deepseek", jobs: int = 2, keep_copy: Optional[Path] = None,
            delete: Sequence[str] = (), **kwargs) -> FixpointResult:
    """Run the fixpoint on a copy of `source` (read-only); `delete`: tree paths removed from the copy
    first (to measure on the tree the remaining batches would leave)."""
    holder = None
    if keep_copy is None:
        holder = tempfile.TemporaryDirectory(prefix="shrink-symbols-")
        dest = Path(holder.name)
    else:
        dest = keep_copy
    try:
        copy_tree(source, dest)
        for rel in delete:
            target = dest / rel
            if target.is_file():
                target.unlink()
        return run_fixpoint(dest, profile=profile, jobs=jobs, **kwargs)
    finally:
        if holder is not None:
            holder.cleanup()
