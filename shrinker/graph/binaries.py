"""What a compiled extension (.so) registers, read from its bytes: no loading, no GPU, no torch.

A torch library registers each op with its schema (`m.def("rmsnorm(Tensor! out, Tensor x, ...) -> ()")`),
and the schema is a NUL-terminated string in the binary's read-only data: `name(` ... `) -> ...`. That is
the source of truth for which binary holds which op. An op bound without a schema (`m.def("name", &fn)`)
leaves only its name, a NUL-delimited string: `names` holds those (snake_case, 3 to 64 characters), so a
name read by Python can still be found in a binary, as weaker evidence.

Scans are cached by the file's sha256 (FA3's flash_ops is 1.1 GB and lives only in the wheel:
LARGE_FILES.json names it, `large_files` reads it from the downloaded wheel when there is one).
"""

from __future__ import annotations

import hashlib
import json
import re
import zipfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

from shrinker import paths

SCAN_VERSION = "1"
_ARROW = b") -> "
_OP_NAME = re.compile(r"[a-z_][a-z0-9_]*(?:\.[a-z0-9_]+)?")
_NAME = re.compile(rb"\x00([a-z][a-z0-9_]{2,63})(?=\x00)")
_SUFFIXES = (".so",)


@dataclass
class BinaryFacts:
    path: str  # tree path (or the wheel member for a large file)
    bytes: int
    sha256: str
    schemas: dict[str, str] = field(default_factory=dict)  # op name -> its schema
    names: list[str] = field(default_factory=list)  # NUL-delimited snake_case strings, sorted
    in_tree: bool = True  # False: listed in LARGE_FILES.json, kept in the wheel only
    scanned: bool = True  # False: a large file whose wheel is not downloaded here

    def holds(self, op: str) -> str:
        """How this binary holds `op`: "schema", "name" (only its name string), or ""."""
        if op in self.schemas:
            return "schema"
        return "name" if op in self._name_set() else ""

    def _name_set(self) -> frozenset[str]:
        cached = getattr(self, "_names_cache", None)
        if cached is None:
            cached = frozenset(self.names)
            object.__setattr__(self, "_names_cache", cached)
        return cached


def schemas_in(data: bytes) -> dict[str, str]:
    """op name -> schema for every `name(...) -> ...` C string in `data`."""
    found: dict[str, str] = {}
    at = data.find(_ARROW)
    while at >= 0:
        start = data.rfind(b"\x00", 0, at) + 1
        end = data.find(b"\x00", at)
        text = data[start:end if end >= 0 else len(data)].decode("latin-1")
        name = text.split("(", 1)[0]
        if _OP_NAME.fullmatch(name) and text.count("(") >= 1:
            found.setdefault(name.split(".", 1)[0], text)
        at = data.find(_ARROW, at + len(_ARROW))
    return found


def names_in(data: bytes) -> list[str]:
    return sorted({m.group(1).decode() for m in _NAME.finditer(data)})


def _cache_file(sha: str) -> Path:
    return paths.cache_dir() / "kernels" / f"binary-v{SCAN_VERSION}-{sha[:24]}.json"


def _scan(data: bytes, path: str, sha: str, in_tree: bool) -> BinaryFacts:
    cache = _cache_file(sha)
    if cache.exists():
        try:
            facts = BinaryFacts(**json.loads(cache.read_text()))
            facts.path, facts.in_tree = path, in_tree
            return facts
        except (ValueError, TypeError):
            pass
    facts = BinaryFacts(path, len(data), sha, schemas_in(data), names_in(data), in_tree)
    cache.parent.mkdir(parents=True, exist_ok=True)
    tmp = cache.with_suffix(".tmp")
    tmp.write_text(json.dumps(asdict(facts)))
    tmp.replace(cache)
    return facts


def scan_file(tree: Path, path: str) -> BinaryFacts:
    data = (tree / path).read_bytes()
    return _scan(data, path, hashlib.sha256(data).hexdigest(), True)


def tree_binaries(tree: Path, files: list[str]) -> list[BinaryFacts]:
    """The scanned .so files among `files` (tree paths), sorted by path."""
    return [scan_file(tree, f) for f in sorted(files) if f.endswith(_SUFFIXES) or ".so." in f.rsplit("/", 1)[-1]]


def large_files(tree: Path, import_root: str, downloads: Path | None = None) -> list[BinaryFacts]:
    """The binaries LARGE_FILES.json lists (kept out of the git cache), scanned from their wheel when it
    is downloaded (else `scanned` is False). `import_root`: where the wheel's paths land in the tree."""
    listing = tree / "LARGE_FILES.json"
    if not listing.exists():
        return []
    downloads = downloads or paths.cache_dir() / "downloads"
    out = []
    for entry in json.loads(listing.read_text()):
        member, sha = entry["path"], entry.get("sha256", "")
        tree_path = f"{import_root}/{member}"
        wheel = downloads / entry.get("wheel", "")
        if sha and _cache_file(sha).exists():
            out.append(_scan(b"", tree_path, sha, False))
        elif entry.get("wheel") and wheel.is_file():
            with zipfile.ZipFile(wheel) as zf:
                data = zf.read(member)
            out.append(_scan(data, tree_path, sha or hashlib.sha256(data).hexdigest(), False))
        else:
            out.append(BinaryFacts(tree_path, int(entry.get("bytes", 0)), sha, in_tree=False, scanned=False))
    return out
