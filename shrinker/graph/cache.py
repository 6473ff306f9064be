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


class FileMemo:
    """What this process last read or wrote per cache file, valid while the file's (mtime, size) stays:
    apply builds the graph and the verify facts of the tree after every batch, and decoding the cache
    file is most of each build. A file another process rewrote since is read again. Callers get a copy
    (their additions stay theirs until they save)."""

    def __init__(self) -> None:
        self._files: dict[Path, tuple[tuple[int, int], dict]] = {}

    @staticmethod
    def _stamp(path: Path) -> tuple[int, int] | None:
        try:
            st = path.stat()
        except OSError:
            return None
        return st.st_mtime_ns, st.st_size

    def get(self, path: Path) -> dict | None:
        known = self._files.get(path)
        return dict(known[1]) if known is not None and known[0] == self._stamp(path) else None

    def remember(self, path: Path, data: dict) -> None:
        stamp = self._stamp(path)
        if stamp is not None:
            self._files[path] = (stamp, dict(data))


_LOADED = FileMemo()


class FactsCache:
    def __init__(self, path: Path | None = None):
        # SHRINK_PARSE_CACHE moves the parse cache alone (benchmarks measure cold runs with it).
        folder = Path(os.environ["SHRINK_PARSE_CACHE"]) if os.environ.get("SHRINK_PARSE_CACHE") else paths.cache_dir() / "parse"
        self.path = path or folder / f"facts-v{PARSER_VERSION}.pickle"
        self.entries: dict[str, FileFacts] = {}
        self.dirty = False
        known = _LOADED.get(self.path)
        if known is not None:
            self.entries = known
        elif self.path.exists():
            try:
                with self.path.open("rb") as f:
                    self.entries = pickle.load(f)
                _LOADED.remember(self.path, self.entries)
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
        _LOADED.remember(self.path, self.entries)
