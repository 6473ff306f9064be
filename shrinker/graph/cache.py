"""Per-file parse results cached by content hash, so a re-run re-parses only changed files.

One pickle per parser version holds {key: FileFacts}; the key covers the module name too,
because relative imports resolve against it.
"""

from __future__ import annotations

import hashlib
import os
import pickle
from pathlib import Path

from shrinker import paths
from shrinker.graph.parse import PARSER_VERSION
from shrinker.graph.records import FileFacts


def content_key(source: bytes, module: str, is_package: bool) -> str:
    h = hashlib.blake2b(source, digest_size=16)
    h.update(f"\0{module}\0{int(is_package)}".encode())
    return h.hexdigest()


class FactsCache:
    def __init__(self, path: Path | None = None):
        # SHRINK_PARSE_CACHE moves the parse cache alone (benchmarks measure cold runs with it).
        folder = Path(os.environ["SHRINK_PARSE_CACHE"]) if os.environ.get("SHRINK_PARSE_CACHE") else paths.cache_dir() / "parse"
        self.path = path or folder / f"facts-v{PARSER_VERSION}.pickle"
        self.entries: dict[str, FileFacts] = {}
        self.dirty = False
        if self.path.exists():
            try:
                with self.path.open("rb") as f:
                    self.entries = pickle.load(f)
            except Exception:  # a broken cache is only a slower run
                self.entries = {}

    def get(self, key: str) -> FileFacts | None:
        return self.entries.get(key)

    def put(self, key: str, facts: FileFacts) -> None:
        self.entries[key] = facts
        self.dirty = True

    def save(self) -> None:
        if not self.dirty:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(f".tmp{os.getpid()}")
        with tmp.open("wb") as f:
            pickle.dump(self.entries, f, protocol=pickle.HIGHEST_PROTOCOL)
        tmp.replace(self.path)
        self.dirty = False
