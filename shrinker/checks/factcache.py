"""Facts for every source file of a tree, parsed in parallel and cached by file content.

The cache is one JSON under cache_dir()/verify/, keyed by (content hash, module name, package?);
its version is the hash of the extractor's code (facts.py, attributes.py) and pyflakes' version, so
changing either invalidates it. Upstream is parsed once per machine; a pruned tree re-parses only changed files.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pyflakes

from shrinker import paths
from shrinker.console import progress
from shrinker.graph.cache import FileMemo
from shrinker.checks import attributes as attributes_mod
from shrinker.checks import facts as facts_mod
from shrinker.checks.facts import FileFacts, extract
from shrinker.checks.tree import SourceTree, content_hash


def _version(internal: frozenset[str]) -> str:
    code = Path(facts_mod.__file__).read_bytes() + Path(attributes_mod.__file__).read_bytes()
    text = f"{hashlib.sha1(code).hexdigest()}:{pyflakes.__version__}:{','.join(sorted(internal))}"
    return hashlib.sha1(text.encode()).hexdigest()[:12]


def cache_file(internal: frozenset[str]) -> Path:
    return paths.cache_dir() / "verify" / f"facts-{_version(internal)}.json"


_LOADED = FileMemo()  # apply's gates read the facts of both trees after every batch


def _load(path: Path) -> dict[str, dict]:
    known = _LOADED.get(path)
    if known is not None:
        return known
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    _LOADED.remember(path, data)
    return data


def _save(path: Path, data: dict[str, dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".facts-", suffix=".json")
    with os.fdopen(fd, "w") as f:
        json.dump(data, f, separators=(",", ":"))
    os.replace(tmp, path)
    _LOADED.remember(path, data)


def _extract_batch(items: list[tuple[bytes, str, bool]], internal: frozenset[str]) -> list[dict]:
    return [extract(src, name, pkg, internal).to_json() for src, name, pkg in items]


def tree_facts(tree: SourceTree, *, jobs: int = 2, use_cache: bool = True) -> dict[str, FileFacts]:
    """module name -> facts for every Python source module of the tree."""
    internal = frozenset(tree.top_packages)
    path = cache_file(internal)
    cache = _load(path) if use_cache else {}
    result: dict[str, FileFacts] = {}
    todo: list[tuple[str, bytes, str, bool]] = []
    for m in tree.sources:
        data = m.path.read_bytes()
        key = f"{content_hash(data)}:{m.name}:{int(m.kind == 'package')}"
        if key in cache:
            result[m.name] = FileFacts.from_json(cache[key])
        else:
            todo.append((key, data, m.name, m.kind == "package"))
    if todo:
        batches = [todo[i::max(1, jobs * 8)] for i in range(max(1, jobs * 8))]
        batches = [b for b in batches if b]
        with progress("parsing", len(todo)) as advance:
            if jobs > 1 and len(todo) > 50:
                with ProcessPoolExecutor(max_workers=jobs) as pool:
                    futures = [(b, pool.submit(_extract_batch, [(d, n, p) for _, d, n, p in b], internal))
                               for b in batches]
                    for b, fut in futures:
                        for (key, _, name, _), data in zip(b, fut.result()):
                            cache[key] = data
                            result[name] = FileFacts.from_json(data)
                        advance(len(b))
            else:
                for key, data, name, pkg in todo:
                    facts = extract(data, name, pkg, internal)
                    cache[key] = facts.to_json()
                    result[name] = facts
                    advance()
        if use_cache:
            _save(path, cache)
    return result
