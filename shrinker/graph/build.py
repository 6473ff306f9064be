"""Parse a tree in parallel (cached) and resolve its imports into a networkx DiGraph of modules.

Nodes are dotted module names (namespace packages included, with no file). An edge u → v means
"running u may import v"; its attribute `imports` lists every record behind it (kind, line, names,
scope, type_checking, try_import, guards, function, registry_keys), so rules can judge each one.
"""

from __future__ import annotations

import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

import networkx as nx

from shrinker.console import progress
from shrinker.graph.cache import FactsCache, content_key
from shrinker.graph.discover import SourceFile, discover
from shrinker.graph.parse import parse_file
from shrinker.graph.records import (
    FROM, FROM_SUBMODULE, IMPLICIT_PARENT, IMPORT, STRING, FileFacts, Where)


@dataclass
class ParseStats:
    files: int = 0
    parsed: int = 0
    cached: int = 0
    errors: int = 0
    seconds: float = 0.0

    @property
    def hit_rate(self) -> float:
        return self.cached / self.files if self.files else 1.0


@dataclass
class ImportGraph:
    tree: Path
    files: list[SourceFile]
    facts: dict[str, FileFacts]  # by module
    graph: nx.DiGraph
    module_path: dict[str, str]  # module → path relative to the tree ("" for namespace packages)
    external: dict[str, set[str]] = field(default_factory=dict)  # module → top-level third-party names
    stats: ParseStats = field(default_factory=ParseStats)

    def importers(self, module: str) -> list[tuple[str, dict]]:
        """(importer, first record) for every module that imports `module`."""
        return [(u, data["imports"][0]) for u, _, data in self.graph.in_edges(module, data=True)]


def _parse_job(job: tuple[str, str, str, bool]) -> FileFacts:
    source, path, module, is_package = job
    return parse_file(source, path, module, is_package)


def _parse_all(tree: Path, files: list[SourceFile], cache: FactsCache, jobs: int) -> tuple[dict[str, FileFacts], ParseStats]:
    stats = ParseStats()
    start = time.perf_counter()
    facts: dict[str, FileFacts] = {}
    todo: list[tuple[str, tuple[str, str, str, bool]]] = []
    for f in files:
        if not f.is_python:
            continue
        stats.files += 1
        raw = (tree / f.path).read_bytes()
        key = content_key(raw, f.module, f.is_package)
        hit = cache.get(key)
        if hit is not None:
            # The same content may sit at another path in another release: keep the path current.
            if hit.path != f.path:
                hit = FileFacts(**{**hit.__dict__, "path": f.path})
            facts[f.module] = hit
            stats.cached += 1
        else:
            todo.append((key, (raw.decode("utf-8", errors="replace"), f.path, f.module, f.is_package)))
    if todo:
        # Biggest files first so the two workers finish together.
        todo.sort(key=lambda item: -len(item[1][0]))
        with progress("parsing with libcst", len(todo)) as advance:
            if jobs > 1 and len(todo) > 8:
                with ProcessPoolExecutor(max_workers=jobs) as pool:
                    results = pool.map(_parse_job, [job for _, job in todo], chunksize=8)
                    for (key, _), result in zip(todo, results):
                        cache.put(key, result)
                        facts[result.module] = result
                        advance()
            else:
                for key, job in todo:
                    result = _parse_job(job)
                    cache.put(key, result)
                    facts[result.module] = result
                    advance()
        stats.parsed = len(todo)
    stats.errors = sum(1 for f in facts.values() if f.parse_error)
    stats.seconds = time.perf_counter() - start
    return facts, stats


def _parent(module: str) -> str:
    return module.rsplit(".", 1)[0] if "." in module else ""


def _longest_module(name: str, known: set[str]) -> str:
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        candidate = ".".join(parts[:i])
        if candidate in known:
            return candidate
    return ""


def _add(graph: nx.DiGraph, u: str, v: str, record: dict) -> None:
    if u == v:
        return
    if graph.has_edge(u, v):
        graph.edges[u, v]["imports"].append(record)
    else:
        graph.add_edge(u, v, imports=[record])


def _record(kind: str, line: int, names: list[str], where: Where, **extra) -> dict:
    return {"kind": kind, "line": line, "names": names, **asdict(where), **extra}


def resolve(facts: dict[str, FileFacts], module_path: dict[str, str]) -> tuple[nx.DiGraph, dict[str, set[str]]]:
    known = set(module_path)
    graph = nx.DiGraph()
    graph.add_nodes_from(sorted(known))
    external: dict[str, set[str]] = {}
    top_levels = {m.split(".")[0] for m in known}
    for module in sorted(facts):
        f = facts[module]
        parent = _parent(module)
        if parent and module_path.get(parent):
            _add(graph, module, parent, _record(IMPLICIT_PARENT, 0, [], Where()))
        for imp in f.imports:
            target = imp.target
            top = target.split(".")[0]
            if top not in top_levels:
                external.setdefault(module, set()).add(top)
                continue
            resolved = _longest_module(target, known)
            if not resolved:
                continue
            kind = FROM if imp.is_from else IMPORT
            _add(graph, module, resolved, _record(kind, imp.line, imp.names, imp.where, target=target))
            if imp.is_from:
                for name in imp.names:
                    sub = f"{target}.{name}"
                    if sub in known:
                        _add(graph, module, sub, _record(FROM_SUBMODULE, imp.line, [name], imp.where, target=sub))
        for ref in f.strings:
            resolved = ref.target if ref.target in known else ""
            if not resolved and ref.attr == "" and ref.kind != "string":
                resolved = _longest_module(ref.target, known)
            if not resolved and ref.kind == "string":
                # "pkg.mod.Attr": a module plus one attribute.
                head = _parent(ref.target)
                resolved = head if head in known and head.count(".") >= 1 else ""
            if resolved:
                extra = {"call_keywords": ref.call_keywords, "call": ref.call} if ref.call_keywords else {}
                _add(graph, module, resolved, _record(STRING, ref.line, [ref.attr] if ref.attr else [],
                                                      ref.where, target=ref.target, string_kind=ref.kind, **extra))
    return graph, external


def build_graph(tree: Path, *, jobs: int = 2, cache: FactsCache | None = None) -> ImportGraph:
    files = discover(tree)
    cache = cache or FactsCache()
    facts, stats = _parse_all(tree, files, cache, jobs)
    cache.save()
    module_path = {f.module: f.path for f in files if f.is_python}
    # Namespace packages (a folder of modules with no __init__.py, like srt/models) are nodes too.
    for module in list(module_path):
        parent = _parent(module)
        while parent and parent not in module_path:
            module_path[parent] = ""
            parent = _parent(parent)
    graph, external = resolve(facts, module_path)
    return ImportGraph(tree=tree, files=files, facts=facts, graph=graph, module_path=module_path,
                       external=external, stats=stats)
